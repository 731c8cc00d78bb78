"""Outputs: the final answer found in what a target returned (answer keys, a structured
response, the last agent message), and messages as the store keeps them."""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from typing import Any

from agenteval_cli.core.interrupts import returned_interrupt
from agenteval_cli.targets.errors import MissingOutput
from agenteval_cli.targets.inputs import graph_state_keys

_OPENAI_ROLES = frozenset({"user", "assistant", "system", "developer", "tool", "function"})


def message_text(message: Any) -> str:
    """The text of a message (an object, an OpenAI or LangChain dict, a ``(role, text)``
    tuple) whose content may be a string or a list of content blocks."""
    if isinstance(message, dict):
        content = message.get("content")
    elif isinstance(message, tuple) and len(message) == 2:
        content = message[1]
    else:
        content = getattr(message, "content", message)
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [block if isinstance(block, str) else _block_text(block) for block in content]
        return "".join(parts)
    return str(content)


def _block_text(block: Any) -> str:
    text = block.get("text") if isinstance(block, dict) else None
    return text if isinstance(text, str) else ""


def _is_ai(message: Any) -> bool:
    """An assistant message, in any of the forms a target may return."""
    if isinstance(message, dict):
        if "role" in message:
            return message["role"] in ("assistant", "ai")
        return message.get("type") in ("ai", "AIMessageChunk")
    if isinstance(message, tuple):
        return len(message) == 2 and message[0] in ("assistant", "ai")
    messages = sys.modules.get("langchain_core.messages")  # no message objects without it
    return messages is not None and isinstance(message, messages.AIMessage)


def _is_named_human(message: Any) -> bool:
    """A human message that names its writer: how LangGraph's supervisor tutorial's workers
    return their answer (``HumanMessage(content=..., name="researcher")``)."""
    if isinstance(message, dict):
        human = message.get("role") == "user" or message.get("type") == "human"
        return human and bool(message.get("name"))
    messages = sys.modules.get("langchain_core.messages")
    return (
        messages is not None
        and isinstance(message, messages.HumanMessage)
        and bool(getattr(message, "name", None))
    )


def final_text(messages: list[Any], given: Sequence[Any] = ()) -> str:
    """The text of the last message an agent wrote that has any: an assistant message, or
    a human message carrying an agent's name. A closing tool call, or an empty reply, does
    not hide the answer before it; the ``given`` messages (the request's own input, its
    history included) are never the answer. Unknown input (a function target's result):
    the conversation's opening message, the question, is not."""
    for position in range(len(messages) - 1, -1, -1):
        message = messages[position]
        if position == 0 and not given and _is_named_human(message):
            break  # the opening message: the question, whoever it names
        inputs = given if position < len(given) else ()  # the input opens the conversation
        if (_is_ai(message) or _is_named_human(message)) and not _among(message, inputs):
            text = message_text(message)
            if text.strip():
                return text
    return ""


def _among(message: Any, given: Sequence[Any]) -> bool:
    """Whether ``message`` is one of the request's input messages: the same object, the
    same id, or the same role, name and content (an input converted on its way in)."""
    if not given:
        return False
    mine = getattr(message, "id", None)
    for other in given:
        if other is message or (mine is not None and getattr(other, "id", None) == mine):
            return True
        if (
            _writer(other) == _writer(message)
            and _is_ai(other) == _is_ai(message)
            and message_text(other) == message_text(message)
        ):
            return True
    return False


def stored_messages(messages: list[Any]) -> list[dict[str, Any]]:
    """Messages in OpenAI form for the outputs: message objects and LangChain dicts are
    converted; OpenAI dicts are kept as they are, tool calls without ids included."""
    if not any(isinstance(message, dict) for message in messages):
        from langchain_core.messages import convert_to_openai_messages

        return convert_to_openai_messages(messages)
    stored: list[dict[str, Any]] = []
    made = [0]  # ids synthesized so far, for call_0, call_1, ...
    for message in messages:
        if isinstance(message, dict) and message.get("role") in _OPENAI_ROLES:
            stored.append(dict(message))
        elif isinstance(message, dict):
            stored.extend(_converted_dict(message, made))
        else:
            from langchain_core.messages import convert_to_openai_messages

            stored.extend(convert_to_openai_messages([message]))
    return stored


def _converted_dict(message: dict[str, Any], made: list[int]) -> list[dict[str, Any]]:
    """A LangChain-form dict (``{"type": "ai", ...}``) in OpenAI form. The converter needs
    tool-call ids: missing ones are made up (``call_0``...) for it and left out again."""
    from langchain_core.messages import convert_to_openai_messages

    patched = dict(message)
    synthesized: list[int] = []
    calls = patched.get("tool_calls")
    if isinstance(calls, list):
        patched["tool_calls"] = [dict(call) if isinstance(call, dict) else call for call in calls]
        for index, call in enumerate(patched["tool_calls"]):
            if isinstance(call, dict) and not call.get("id"):
                call["id"] = f"call_{made[0]}"
                made[0] += 1
                synthesized.append(index)
    tool_id_made = patched.get("type") == "tool" and not patched.get("tool_call_id")
    if tool_id_made:
        patched["tool_call_id"] = f"call_{made[0]}"
        made[0] += 1
    converted = convert_to_openai_messages([patched])
    for oai in converted:
        for index in synthesized:
            tool_calls = oai.get("tool_calls") or []
            if index < len(tool_calls):
                tool_calls[index].pop("id", None)
        if tool_id_made and oai.get("role") == "tool":
            oai.pop("tool_call_id", None)
    return converted


# State keys that hold a graph's answer, first found first: agenteval's own, the key
# LangChain's router and many tutorials write, and a plain ``answer``.
ANSWER_KEYS = ("final_response", "final_answer", "answer")


def graph_outputs(
    state: Any, output: str | None = None, *, given: Sequence[Any] = ()
) -> dict[str, Any]:
    """Map a graph's final state to ``final_response``, ``resolution_notes``, ``messages``
    and its other keys. The final response is, first found first: the value at ``output``
    when given; a key of :data:`ANSWER_KEYS`; the structured response (``create_agent``'s
    ``response_format``); the text of the last message an agent wrote (see
    :func:`final_text`; ``given`` are the request's input messages, never the answer)."""
    if not isinstance(state, dict):
        return as_outputs(state, output)
    outputs: dict[str, Any] = {
        "final_response": "",
        "resolution_notes": list(state.get("resolution_notes") or []),
    }
    if "messages" in state:
        raw = state["messages"]
        messages = list(raw) if isinstance(raw, list | tuple) else [] if raw is None else [raw]
        outputs["final_response"] = final_text(messages, given)
        outputs["messages"] = stored_messages(messages)
    for key, value in state.items():
        if key not in outputs:
            outputs[key] = value
    if output is not None:
        outputs["final_response"] = _answer_at(state, output)
    elif (key := next((k for k in ANSWER_KEYS if state.get(k) is not None), None)) is not None:
        outputs["final_response"] = _answer(state[key])
    elif state.get("structured_response") is not None:
        outputs["final_response"] = structured_answer(state["structured_response"])
    return outputs


def why_no_answer(graph: Any) -> str | None:
    """Why no final response can be read off the graph's state, or None when it can."""
    keys = graph_state_keys(graph)
    if keys is None or {"messages", "structured_response", *ANSWER_KEYS} & set(keys):
        return None
    return (
        f"its state ({', '.join(keys)}) has no messages and no {', '.join(ANSWER_KEYS)} key, "
        "so its final response is empty: set output: to the key that holds its answer"
    )


def _writer(message: Any) -> Any:
    """The name a message carries (an object's or a dict's), if any."""
    return message.get("name") if isinstance(message, dict) else getattr(message, "name", None)


def structured_answer(value: Any) -> Any:
    """A structured response as JSON-ready data: a pydantic model's or a dataclass's fields,
    anything else (a mapping, a TypedDict's dict) as it is."""
    import dataclasses

    if hasattr(value, "model_dump"):
        return value.model_dump(mode="json")
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.asdict(value)
    return value


def as_outputs(value: Any, output: str | None = None) -> dict[str, Any]:
    """A target's return value as an outputs dict; a graph state is mapped like a graph's,
    and ``output`` (a key or dotted path) names the final response in it."""
    if output is not None:
        answer = _answer_at(value, output)
        outputs = as_outputs(value) if isinstance(value, dict) else {}
        return {**outputs, "final_response": answer}
    if isinstance(value, dict):
        if "messages" in value and "final_response" not in value:
            return graph_outputs(value)
        return value
    if isinstance(value, str):
        return {"final_response": value}
    if hasattr(value, "content"):  # a message
        return {"final_response": message_text(value)}
    raise TypeError(f"target returned {type(value).__name__}; return a dict (or a string)")


def _answer_at(value: Any, path: str) -> Any:
    """:func:`answer_at`; for a state that stopped at ``interrupt()`` before writing its
    answer there, None (the result is interrupted, not a missing output)."""
    try:
        return answer_at(value, path)
    except MissingOutput:
        if returned_interrupt(value) is not None:
            return None
        raise


def answer_at(value: Any, path: str) -> Any:
    """The value at ``path`` (``answer``, ``result.text``, ``messages.-1``) in a result; a
    message becomes its text."""
    node = value
    walked: list[str] = []
    for part in path.split("."):
        found, node, keys = _step(node, part)
        if not found:
            where = f"{'.'.join(walked)!r}" if walked else "the result"
            known = f" (its keys: {', '.join(keys)})" if keys else ""
            raise MissingOutput(f"output {path!r}: {where} has no {part!r}{known}")
        walked.append(part)
    return _answer(node)


def _step(node: Any, part: str) -> tuple[bool, Any, list[str]]:
    """One step of a dotted path: ``(found, value, the keys there were)``."""
    if isinstance(node, Mapping):
        if part in node:
            return True, node[part], []
        return False, None, [str(key) for key in node]
    if isinstance(node, list | tuple):
        try:
            return True, node[int(part)], []
        except (ValueError, IndexError):
            return False, None, []
    if not part.startswith("_") and hasattr(node, part):
        return True, getattr(node, part), []
    fields = getattr(type(node), "model_fields", None) or getattr(node, "__dataclass_fields__", {})
    return False, None, [str(key) for key in fields]


def _answer(value: Any) -> Any:
    """A message as its text; anything else as it is."""
    if isinstance(value, dict):
        is_message = "content" in value and ("role" in value or "type" in value)
        return message_text(value) if is_message else value
    messages = sys.modules.get("langchain_core.messages")
    if messages is not None and isinstance(value, messages.BaseMessage):
        return message_text(value)
    return value
