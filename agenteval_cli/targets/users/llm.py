"""The LLM user: openevals' ``create_async_llm_simulated_user`` with a system prompt made
from the row.

openevals swaps the roles before each call (the user's past messages go to the model as
its own, ``assistant``, and the target's answers as ``user``), so the model plays the user.
The prompt is the spec's ``system`` template filled with the row's inputs fields, or, by
default, one built from the row's ``persona`` and ``scenario``; either way it ends with the
instruction to reply with the stop marker once the user is satisfied. A row's ``question``,
when it has one, is the opening message as written; the model writes the follow-ups.
"""

from __future__ import annotations

import json
from typing import Any

from agenteval_cli.spec.model import DONE_MARKER, template_parts
from agenteval_cli.targets.users.source import Message, SimulatedUserError

ROLE = (
    "You play a user talking to an assistant. Stay in character: write only the user's next "
    "message, short, as the user would type it, and never answer as the assistant."
)


def stop_instruction(marker: str) -> str:
    return (
        f"When the assistant has solved your problem, or you have nothing left to ask, reply "
        f"with {marker} and nothing else."
    )


def default_system(inputs: dict[str, Any], *, marker: str = DONE_MARKER) -> str:
    """The prompt for a row with no ``system`` template: who the user is (``persona``), what
    they want (``scenario``, else the opening ``question``) and when to stop."""
    lines = [ROLE]
    if inputs.get("persona"):
        lines.append(f"Who you are: {_text(inputs['persona'])}")
    if inputs.get("scenario"):
        lines.append(f"Your situation and goal: {_text(inputs['scenario'])}")
    elif inputs.get("question"):
        lines.append(f"Your request: {_text(inputs['question'])}")
    lines.append(stop_instruction(marker))
    return "\n".join(lines)


def system_prompt(
    template: str | None, inputs: dict[str, Any], *, marker: str = DONE_MARKER
) -> str:
    """The spec's template with the row's fields filled in (the stop instruction added when
    the template does not name the marker itself), or :func:`default_system`."""
    if template is None:
        return default_system(inputs, marker=marker)
    filled = []
    for literal, name in template_parts(template):
        filled.append(literal)
        if name is not None:
            if name not in inputs:
                have = ", ".join(inputs) or "none"
                raise SimulatedUserError(
                    f"simulated_user.system names {{{name}}}, which this row's inputs do not "
                    f"have (they have: {have})"
                )
            filled.append(_text(inputs[name]))
    text = "".join(filled)
    return text if marker in text else f"{text}\n{stop_instruction(marker)}"


class LLMUser:
    """A chat model (any LangChain ``BaseChatModel``) playing the user."""

    def __init__(
        self,
        client: Any,
        *,
        system: str | None = None,
        marker: str = DONE_MARKER,
        opening_key: str = "question",
    ) -> None:
        self.client = client
        self.system = system
        self.marker = marker
        self.opening_key = opening_key

    async def reply(self, transcript: list[Message], *, inputs: dict[str, Any], turn: int) -> str:
        from openevals.simulators import create_async_llm_simulated_user

        opening = inputs.get(self.opening_key)
        simulate = create_async_llm_simulated_user(
            system=system_prompt(self.system, inputs, marker=self.marker),
            client=self.client,
            fixed_responses=[opening] if isinstance(opening, str) and opening.strip() else None,
        )
        message = await simulate(transcript, turn_counter=turn - 1)
        return content_text(message.get("content"))


def content_text(content: Any) -> str:
    """A chat message's text: the string, or the text blocks of a list of content blocks."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [b if isinstance(b, str) else b.get("text", "") for b in content]
        return "".join(p for p in parts if isinstance(p, str))
    return "" if content is None else str(content)


def _text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
