"""What a model's tool call that no tool run answered was, read from what the trace shows.

- **Structured output** (kind ``output``): ``with_structured_output(Schema)`` binds the schema
  as a tool and parses the model's call to it; the model run carries
  ``ls_structured_output_format`` in its options (as providers' models pass it on), and the
  reply goes to a tool-call output parser (``JsonOutputKeyToolsParser``,
  ``PydanticToolsParser``). ``create_agent(response_format=ToolStrategy(...))`` answers its
  schema call with a ToolMessage of its own, in the update that sets ``structured_response``.
- **A handoff the node acted on** (kind ``handoff``): the graph node the model ran in returned
  ``Command(goto=x)`` and the call names ``x``, by its name (``transfer_to_x``, as in the
  docs' hand-written network) or by an argument (``{"next": "x"}``, a router read by hand).
- Anything else stays an ordinary tool call: ``ok`` or ``error`` as the ToolMessage the graph
  wrote for it says (the node did the work itself), else ``not_run`` (the run stopped first,
  or the graph read the call and ran nothing). A call that never ran takes the kind its tool
  showed when the same agent ran it in the request (a handoff tool cut off by an interrupt).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from langchain_core.messages import ToolMessage

from agenteval_cli.core.records import (
    AGENT_TOOL,
    ERROR,
    HANDOFF,
    NOT_RUN,
    OK,
    OUTPUT,
    TOOL,
    ToolCall,
)
from agenteval_cli.trace.attribution import RunNode

__all__ = [
    "StructuredOutput",
    "named_agent",
    "same_tool_as_ran",
    "sets_structured_response",
    "task_of",
    "unran_verdict",
]

_TOOLS_PARSER = "ToolsParser"  # langchain_core's parsers of a reply's tool calls end so


@dataclass(frozen=True)
class StructuredOutput:
    """A model call asked for structured output: ``name`` is the schema's (``None``: not
    given); ``as_tool`` whether the answer comes as a tool call (``function_calling``, not
    ``json_schema`` or ``json_mode``, whose answer is the reply's text)."""

    name: str | None
    as_tool: bool

    @classmethod
    def of(cls, options: Any) -> StructuredOutput | None:
        """From a chat model run's ``options`` (or metadata) holding
        ``ls_structured_output_format``, if there."""
        found = options.get("ls_structured_output_format") if isinstance(options, dict) else None
        if not isinstance(found, Mapping):
            return None
        schema = found.get("schema")
        # a JSON schema as LangChain passes it on, or the class itself
        title = (
            schema.get("title")
            if isinstance(schema, Mapping)
            else getattr(schema, "__name__", None)
        )
        kwargs = found.get("kwargs")
        method = kwargs.get("method") if isinstance(kwargs, Mapping) else None
        as_tool = method in (None, "function_calling")
        return cls(title if isinstance(title, str) and title else None, as_tool)

    def covers(self, tool_name: str) -> bool:
        """Whether a call of this name is the schema's answer (other tools may be bound)."""
        return self.name == tool_name if self.name is not None else self.as_tool


def unran_verdict(
    call: ToolCall,
    origin: RunNode,
    answer: ToolMessage | None,
    *,
    structured: StructuredOutput | None,
    output_names: set[str],
    aliases: Mapping[str, str],
    accepted: bool = True,
) -> tuple[str, str | None, str]:
    """``(kind, target, status)`` of a call the model run ``origin`` asked for, which no tool
    run answered; ``answer`` is the ToolMessage the graph wrote for it, if any. ``accepted``
    is false for a schema call the graph answered without taking it as its structured
    response (``ToolStrategy`` refusing arguments that fail validation): that call failed."""
    answered = OK if answer is None or answer.status != "error" else ERROR
    if (structured is not None and structured.covers(call.name)) or _parsed(origin):
        return OUTPUT, None, answered
    task = task_of(origin)
    destinations = set(task.goto) if task is not None else set()
    destination = named_agent(call.name, destinations) or _named_in_args(call, destinations)
    if destination is not None:
        return HANDOFF, aliases.get(destination, destination), OK
    if call.name in output_names:
        return OUTPUT, None, answered if accepted or answer is None else ERROR
    return TOOL, None, NOT_RUN if answer is None else answered


def same_tool_as_ran(calls: Sequence[ToolCall]) -> None:
    """A call that never ran is of the kind its tool showed when the same agent ran it in
    this request: a ``transfer_to_x`` call cut off (by an interrupt, a limit) is a handoff
    tool like the ones that ran."""
    unran = [call for call in calls if call.status == NOT_RUN and call.kind == TOOL]
    if not unran:
        return
    ran: dict[tuple[str, tuple[str, ...]], ToolCall] = {}
    for call in calls:
        if call.status != NOT_RUN and call.kind in (HANDOFF, AGENT_TOOL):
            ran.setdefault((call.name, tuple(call.path)), call)
    for call in unran:
        same = ran.get((call.name, tuple(call.path)))
        if same is not None:
            call.kind, call.target = same.kind, same.target


def _named_in_args(call: ToolCall, destinations: set[str]) -> str | None:
    """A destination one of the call's arguments names (``{"next": "tech"}``)."""
    spelled = {d.lower(): d for d in destinations}
    for value in call.args.values():
        if isinstance(value, str) and value.lower() in spelled:
            return spelled[value.lower()]
    return None


def sets_structured_response(value: Any) -> bool:
    """A node's update (a dict, a ``Command``, or a list of them) that sets
    ``structured_response``: create_agent's answer under ``ToolStrategy``. Walked on a
    list: updates nest as deep as a node returns them."""
    if type(value) is dict:  # a node's update: the usual case, nothing to walk
        return value.get("structured_response") is not None
    stack = [value]
    while stack:
        current = stack.pop()
        if isinstance(current, dict):
            if current.get("structured_response") is not None:
                return True
        elif isinstance(current, list | tuple):
            stack.extend(current)
        elif type(current).__name__ == "Command":
            stack.append(getattr(current, "update", None))
    return False


def _parsed(model: RunNode) -> bool:
    """The model's reply went to a tool-call output parser: ``llm | parser``, the sequence
    ``with_structured_output`` builds (the parser may sit deeper, as with ``include_raw``).
    Looked for after the model within the runnables around it, up to its graph node."""
    child, parent = model, model.parent
    while parent is not None and parent.kind == "chain" and not parent.is_task:
        if any(_holds_parser(c) for c in parent.children if c.seq > child.seq):
            return True
        child, parent = parent, parent.parent
    return False


def _holds_parser(run: RunNode) -> bool:
    stack = [run]
    while stack:
        current = stack.pop()
        if current.kind == "chain" and current.name.endswith(_TOOLS_PARSER):
            return True
        stack.extend(current.children)
    return False


def task_of(run: RunNode | None) -> RunNode | None:
    """The graph node (task) a run ran in."""
    while run is not None and not run.is_task:
        run = run.parent
    return run


def named_agent(tool_name: str, agents: set[str]) -> str | None:
    """The agent a tool's name names (``transfer_back_to_supervisor``): the longest agent
    name its name ends with, as the libraries spell it (lower case, whitespace as ``_``)."""
    lowered = tool_name.lower()
    best = None
    for agent in agents:
        spelled = "_".join(agent.split()).lower()
        if lowered.endswith(spelled) and (best is None or len(agent) > len(best)):
            best = agent
    return best
