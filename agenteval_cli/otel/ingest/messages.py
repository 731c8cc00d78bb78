"""A model span's messages in OpenAI's chat form, whichever convention wrote them: the GenAI
conventions' ``gen_ai.input.messages`` / ``gen_ai.output.messages`` (role and parts),
OpenInference's ``input.value`` / ``output.value`` message lists, or its flattened
``llm.input_messages.N.message.*`` attributes; and span values given as JSON text."""

from __future__ import annotations

import json
from typing import Any

from agenteval_cli.core.nesting import nested_deeper
from agenteval_cli.otel import names
from agenteval_cli.otel.ingest.otlp import MAX_DEPTH

__all__ = ["input_messages", "is_message_dump", "json_value", "output_message"]


def input_messages(attributes: dict[str, Any]) -> list[dict[str, Any]]:
    """A model span's input as OpenAI-form messages: ``gen_ai.input.messages`` (with
    ``gen_ai.system_instructions``), OpenInference's ``input.value`` when it is a message
    list, else its flattened ``llm.input_messages.*``."""
    found = json_value(attributes.get(names.INPUT_MESSAGES))
    if isinstance(found, list):
        messages = [m for m in map(_from_parts, found) if m is not None]
        system = json_value(attributes.get(names.SYSTEM_INSTRUCTIONS))
        text = _parts_text(system) if isinstance(system, list) else system
        return ([{"role": "system", "content": str(text)}] if text else []) + messages
    found = json_value(attributes.get(names.INPUT_VALUE))
    if isinstance(found, list) and all(isinstance(m, dict) and "role" in m for m in found):
        return [_openai_message(m) for m in found]
    return _flattened(attributes, "llm.input_messages")


def output_message(attributes: dict[str, Any]) -> dict[str, Any]:
    """A model span's answer: its text and tool calls, as fields of an AI message dump."""
    found = json_value(attributes.get(names.OUTPUT_MESSAGES))
    message: dict[str, Any] | None = None
    if isinstance(found, list) and found:
        message = _from_parts(found[-1])
    if message is None:
        found = json_value(attributes.get(names.OUTPUT_VALUE))
        if isinstance(found, list) and found and isinstance(found[-1], dict):
            message = _openai_message(found[-1])
        elif isinstance(found, dict) and "role" in found:
            message = _openai_message(found)
    if message is None:
        flattened = _flattened(attributes, "llm.output_messages")
        message = flattened[-1] if flattened else {"content": ""}
    calls = [
        {
            "name": call["function"]["name"],
            "args": _arguments(call["function"].get("arguments")),
            "id": call.get("id"),
            "type": "tool_call",
        }
        for call in message.get("tool_calls") or []
    ]
    return {"content": message.get("content") or "", "tool_calls": calls}


def _openai_message(message: dict[str, Any]) -> dict[str, Any]:
    """An OpenAI chat message, its tool calls' arguments kept as JSON text."""
    out = {"role": str(message.get("role")), "content": message.get("content") or ""}
    if isinstance(out["content"], list):
        out["content"] = _parts_text(out["content"])
    calls = []
    for call in message.get("tool_calls") or []:
        function = call.get("function") or {}
        arguments = function.get("arguments")
        calls.append(
            {
                "id": call.get("id"),
                "type": "function",
                "function": {
                    "name": function.get("name"),
                    "arguments": arguments
                    if isinstance(arguments, str)
                    else json.dumps(arguments or {}),
                },
            }
        )
    if calls:
        out["tool_calls"] = calls
    if message.get("tool_call_id"):
        out["tool_call_id"] = message["tool_call_id"]
    return out


def _from_parts(message: Any) -> dict[str, Any] | None:
    """A GenAI-convention message (``{"role", "parts": [...]}``) in OpenAI's form."""
    if not isinstance(message, dict):
        return None
    if "parts" not in message:
        return _openai_message(message) if "role" in message else None
    out: dict[str, Any] = {"role": str(message.get("role")), "content": ""}
    texts, calls = [], []
    for part in message.get("parts") or []:
        if not isinstance(part, dict):
            continue
        kind = part.get("type")
        if kind == "text":
            texts.append(str(part.get("content") or ""))
        elif kind == "tool_call":
            calls.append(
                {
                    "id": part.get("id"),
                    "type": "function",
                    "function": {
                        "name": part.get("name"),
                        "arguments": json.dumps(part.get("arguments") or {}),
                    },
                }
            )
        elif kind == "tool_call_response":
            out["role"] = "tool"
            out["tool_call_id"] = part.get("id")
            response = part.get("response")
            texts.append(response if isinstance(response, str) else json.dumps(response))
    out["content"] = "".join(texts)
    if calls:
        out["tool_calls"] = calls
    return out


def _parts_text(parts: list[Any]) -> str:
    return "".join(
        str(p.get("content") or p.get("text") or "") for p in parts if isinstance(p, dict)
    )


def _flattened(attributes: dict[str, Any], prefix: str) -> list[dict[str, Any]]:
    """OpenInference's flattened messages (``llm.input_messages.0.message.role`` ...)."""
    found: dict[int, dict[str, Any]] = {}
    for key, value in attributes.items():
        if not key.startswith(prefix + "."):
            continue
        index, _, rest = key[len(prefix) + 1 :].partition(".message.")
        if not index.isdigit():
            continue
        message = found.setdefault(int(index), {"role": "user", "content": ""})
        if rest in ("role", "content", "tool_call_id", "name"):
            message[rest] = value
        elif rest.startswith("tool_calls."):
            number, _, field_name = rest[len("tool_calls.") :].partition(".tool_call.")
            calls = message.setdefault("_calls", {})
            call = calls.setdefault(number, {"type": "function", "function": {}})
            if field_name == "id":
                call["id"] = value
            elif field_name.startswith("function."):
                call["function"][field_name[len("function.") :]] = value
    messages = []
    for _, message in sorted(found.items()):
        calls = message.pop("_calls", {})
        if calls:
            message["tool_calls"] = [calls[k] for k in sorted(calls, key=int)]
        messages.append(message)
    return messages


def _arguments(value: Any) -> dict[str, Any]:
    parsed = json_value(value) if isinstance(value, str) else value
    return parsed if isinstance(parsed, dict) else {}


def json_value(value: Any) -> Any:
    """JSON text read back; anything else (or text that is no JSON, or JSON nested deeper
    than a trace's values are read: ``MAX_DEPTH``) as it is."""
    if not isinstance(value, str):
        return value
    text = value.strip()
    if not text or (text[0] not in '[{"' and text not in ("null", "true", "false")):
        return value
    try:
        parsed = json.loads(text)
    except (ValueError, RecursionError):
        return value
    if text.count("[") + text.count("{") > MAX_DEPTH and nested_deeper(parsed, MAX_DEPTH):
        return value
    return parsed


def is_message_dump(value: Any) -> bool:
    """A LangChain message in ``messages_to_dict``'s form, ``{"type", "data"}``, which
    OpenInference writes LangChain's messages in."""
    data = value.get("data") if isinstance(value, dict) else None
    return isinstance(data, dict) and set(value) == {"type", "data"} and "content" in data
