"""One request's LangSmith runs, replayed into the local tracer so both attribute alike.

LangSmith keeps every run a request made (the graph, its tasks, models, tools) with its
parent, metadata, inputs, outputs, error and start and end times, as JSON. :func:`replay`
turns each run back into the callback events :class:`~agenteval_cli.trace.recorder.TraceRecorder`
would have received, in the order they happened, so the read-back trace gets its agent
paths, order, handoffs, coordinators, tool kinds and tokens from the same code as a local
run. What the JSON lost is put back where it can be:

- ``langgraph_path`` arrives as a list: it is a tuple again, as LangGraph gave it;
- messages (LangChain's serialized form, a plain dump, or OpenAI's form) become messages;
- a ``Command`` (a handoff tool's result, a node's return value) becomes a ``Command`` with
  its update and where it went (of a ``Send``, only the node's name is left);
- an error is kept as text (its type, its message and the traceback): a ``ParentCommand``
  (a handoff to a parent graph) gets its destinations back from that text, and any other
  error becomes an exception of the same type name and message;
- a model traced outside LangChain (OpenAI's response form) has its usage from its
  outputs, else from LangSmith's own token counts.

Start order comes from the start times (a parent before its children on a tie), end order
from the end times (children before their parent). Runs LangChain does not report to the
local tracer (retrievers, embeddings) are left out, as are runs the tree does not reach.
"""

from __future__ import annotations

import ast
import heapq
import re
import uuid
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime
from typing import Any, cast

from agenteval_cli.core.nesting import Walk, run_walk
from agenteval_cli.core.records import Trace
from agenteval_cli.trace.usage import USAGE_AS_GIVEN

__all__ = ["is_graph_run", "replay"]

# a run's ``extra`` key naming the fault a spec injected into it (an OpenTelemetry import
# reads it off the span): the recorder marks the call as a run marks it
INJECTED = "agenteval_fault"
_MODEL_TYPES = frozenset({"llm", "chat_model", "chat model", "chat"})
_SKIPPED_TYPES = frozenset({"retriever", "embedding"})  # never reach the local tracer
_COMMAND_FIELDS = frozenset({"graph", "update", "resume", "goto"})
_BUBBLING = frozenset({"ParentCommand", "GraphInterrupt", "NodeInterrupt", "GraphBubbleUp"})
_TRACEBACK = "Traceback (most recent call last):"
_SEND_ANYWHERE = re.compile(r"""Send\(node=(?P<q>['"])(?P<node>.*?)(?P=q)""")
_ERROR_REPR = re.compile(r"^(?P<name>[A-Za-z_][\w.]*)\((?P<args>.*)\)$", re.DOTALL)
_EPOCH = datetime.min.replace(tzinfo=UTC)


def replay(
    roots: Sequence[Any], runs: Iterable[Any], coordinators: Sequence[str] = (), **target: Any
) -> Trace:
    """The trace of one request: ``roots`` are the runs the request started with (a graph
    run, or the runs under a function), ``runs`` every run of the request (LangSmith
    ``Run`` objects, any order). ``target`` is what the target declares to its recorder
    (``own_agent``, ``active_agent``, ``skill_tools``), read as a local run reads it."""
    return _Replay(roots, runs).trace(coordinators, target)


def is_graph_run(run: Any, children: Iterable[Any]) -> bool:
    """Whether ``run`` is a LangGraph graph: one of its children is a task of it (a node's
    run, which starts a checkpoint namespace of its own)."""
    namespace = _metadata(run).get("langgraph_checkpoint_ns")
    for child in children:
        metadata = _metadata(child)
        own = metadata.get("langgraph_checkpoint_ns")
        if own and own != namespace and metadata.get("langgraph_node"):
            return True
    return False


# -- the order of events ------------------------------------------------------------------


def _events(
    runs: dict[uuid.UUID, Any],
    depth: dict[uuid.UUID, int],
    children: dict[uuid.UUID | None, list[uuid.UUID]],
) -> list[tuple[str, uuid.UUID]]:
    """Starts and ends in time order. On equal times an end goes first (one run finished,
    the next began), a parent starts before its children and ends after them; a run never
    ends before it started or before its children ended, whatever the clocks say."""
    timed = []
    for run_id, run in runs.items():
        dotted = str(run.dotted_order or "")
        timed.append((_time(run.start_time), 1, depth[run_id], dotted, "start", run_id))
        if run.end_time is not None:
            timed.append((_time(run.end_time), 0, -depth[run_id], dotted, "end", run_id))
    timed.sort(key=lambda e: e[:4])
    started: set[uuid.UUID] = set()
    open_children = {
        run_id: sum(1 for c in children.get(run_id, ()) if c in runs) for run_id in runs
    }
    ended_children: dict[uuid.UUID, int] = {}
    order: list[tuple[str, uuid.UUID]] = []
    waiting: dict[tuple[str, uuid.UUID], int] = {}  # each, with when it began to wait

    def ready(phase: str, run_id: uuid.UUID) -> bool:
        if phase == "start":
            parent = _uuid(runs[run_id].parent_run_id)
            return parent not in runs or parent in started or depth[run_id] == 0
        return run_id in started and ended_children.get(run_id, 0) >= open_children[run_id]

    def emit(phase: str, run_id: uuid.UUID) -> None:
        order.append((phase, run_id))
        if phase == "start":
            started.add(run_id)
            if runs[run_id].end_time is None:  # never ended: its parent need not wait
                _ended(run_id)
        else:
            _ended(run_id)

    def _ended(run_id: uuid.UUID) -> None:
        parent = _uuid(runs[run_id].parent_run_id)
        if parent in runs and depth[run_id] > 0:
            ended_children[parent] = ended_children.get(parent, 0) + 1

    def let_through(phase: str, run_id: uuid.UUID) -> list[tuple[int, tuple[str, uuid.UUID]]]:
        """The waiting events that emitting this one made ready (only its parent's end,
        its own end and its children's starts can be), with when each began to wait."""
        parent = _uuid(runs[run_id].parent_run_id)
        found = [("end", parent)] if parent is not None else []
        if phase == "start":
            found += [("start", child) for child in children.get(run_id, ())]
            found.append(("end", run_id))
        return [(waiting[item], item) for item in found if item in waiting and ready(*item)]

    def settle(phase: str, run_id: uuid.UUID) -> None:
        """Emit an event, then the waiting ones it lets through, as passes over the waiting
        events in the order they began to wait would: one made ready behind the pass waits
        for the next. Only what an emission can unblock is looked at, so a trace nested
        thousands deep whose clocks disagree settles in n log n, not n squared."""
        emit(phase, run_id)
        this_pass = let_through(phase, run_id)
        heapq.heapify(this_pass)
        next_pass: list[tuple[int, tuple[str, uuid.UUID]]] = []
        position = -1
        while this_pass or next_pass:
            if not this_pass:
                this_pass, next_pass, position = next_pass, [], -1
                heapq.heapify(this_pass)
            index, item = heapq.heappop(this_pass)
            if item not in waiting:  # let through twice
                continue
            del waiting[item]
            emit(*item)
            position = index
            for entry in let_through(*item):
                if entry[0] > position:
                    heapq.heappush(this_pass, entry)
                else:
                    next_pass.append(entry)

    for *_, phase, run_id in timed:
        if ready(phase, run_id):
            settle(phase, run_id)
        else:
            waiting[(phase, run_id)] = len(order) + len(waiting)
    order += list(waiting)  # unreachable with consistent data; kept rather than lost
    return order


def _time(value: datetime | None) -> datetime:
    if value is None:
        return _EPOCH
    return value if value.tzinfo is not None else value.replace(tzinfo=UTC)


def _seconds(run: Any) -> float:
    if run.start_time is None or run.end_time is None:
        return 0.0
    return max((_time(run.end_time) - _time(run.start_time)).total_seconds(), 0.0)


# -- runs as callback events --------------------------------------------------------------


class _Replay:
    """The runs of one request, replayed in order into a fresh recorder.

    Messages are revived once per id and updated in place when a later run shows them
    changed (LangGraph names an agent's reply and ids a tool's result after they were
    made): the local tracer sees one object go through the request, and so does this."""

    def __init__(self, roots: Sequence[Any], runs: Iterable[Any]) -> None:
        self.runs = {_run_id(r): r for r in runs if r.run_type not in _SKIPPED_TYPES}
        for root in roots:
            self.runs.setdefault(_run_id(root), root)
        self.top = {_run_id(r) for r in roots}
        self.children: dict[uuid.UUID | None, list[uuid.UUID]] = {}
        for run_id, run in self.runs.items():
            if run_id not in self.top:
                self.children.setdefault(_uuid(run.parent_run_id), []).append(run_id)
        self.messages: dict[str, Any] = {}  # id -> the message object
        self.unnamed: dict[tuple[Any, ...], list[Any]] = {}  # messages still without an id

    def trace(self, coordinators: Sequence[str], target: dict[str, Any]) -> Trace:
        from agenteval_cli.trace.recorder import TraceRecorder

        kept: dict[uuid.UUID, Any] = {}  # the runs the roots reach, with their depth
        depth: dict[uuid.UUID, int] = {}
        stack = [(run_id, 0) for run_id in self.top]
        while stack:
            run_id, level = stack.pop()
            kept[run_id], depth[run_id] = self.runs[run_id], level
            stack.extend((child, level + 1) for child in self.children.get(run_id, ()))
        now = [0.0]  # the recorder's clock: the time each run started or ended, as recorded
        recorder = TraceRecorder(coordinators=coordinators, clock=lambda: now[0], **target)
        models: list[Any] = []  # model runs in the order they started: the model calls
        for phase, run_id in _events(kept, depth, self.children):
            run = kept[run_id]
            when = run.start_time if phase == "start" else run.end_time
            if when is not None:  # else the last time seen: the run has no end recorded
                now[0] = max(now[0], _time(when).timestamp())
            parent = None if run_id in self.top else _uuid(run.parent_run_id)
            if phase == "start":
                self.start(recorder, run, run_id, parent)
                if _kind(run) == "model":
                    models.append(run)
            else:
                self.end(recorder, run, run_id)
        trace = recorder.trace()
        if len(trace.model_calls) == len(models):  # one call per model run, in that order
            for call, run in zip(trace.model_calls, models, strict=True):
                call.latency_s = _seconds(run)
        return trace

    def start(self, recorder: Any, run: Any, run_id: uuid.UUID, parent: uuid.UUID | None) -> None:
        metadata = _local_metadata(_metadata(run))
        kind = _kind(run)
        if kind == "model":
            recorder.on_chat_model_start(
                run.serialized,
                self.prompt(run.inputs),
                run_id=run_id,
                parent_run_id=parent,
                metadata=metadata,
                invocation_params=(run.extra or {}).get("invocation_params"),
                options=(run.extra or {}).get("options"),  # structured output asked for
                name=run.name,
            )
        elif kind == "tool":
            inputs = run.inputs if isinstance(run.inputs, dict) else {}
            text = inputs.get("input") if set(inputs) == {"input"} else None
            recorder.on_tool_start(
                {"name": run.name},
                text if isinstance(text, str) else str(inputs),
                run_id=run_id,
                parent_run_id=parent,
                metadata=metadata,
                tool_call_id=self.tool_call_id(run),
                inputs=None if isinstance(text, str) else inputs,
                name=run.name,
            )
        else:
            inputs = self.revive(run.inputs) if parent is None else {}  # a root's input only
            recorder.on_chain_start(
                None, inputs, run_id=run_id, parent_run_id=parent, metadata=metadata, name=run.name
            )

    def end(self, recorder: Any, run: Any, run_id: uuid.UUID) -> None:
        kind = _kind(run)
        if run.error:
            error = _exception(str(run.error))
            fault = (run.extra or {}).get(INJECTED)
            if kind in ("model", "tool") and isinstance(fault, str):
                recorder.injected(run_id, fault, error)  # marked as the run marked it
            elif kind == "model":
                recorder.on_llm_error(error, run_id=run_id)
            elif kind == "tool":
                recorder.on_tool_error(error, run_id=run_id)
            else:
                recorder.on_chain_error(error, run_id=run_id)
        elif kind == "model":
            recorder.on_llm_end(self.llm_result(run), run_id=run_id)
        elif kind == "tool":
            outputs = run.outputs
            output = outputs.get("output") if isinstance(outputs, dict) else outputs
            recorder.on_tool_end(self.revive(output), run_id=run_id)
        else:
            recorder.on_chain_end(self.revive(_unwrapped(run.outputs)), run_id=run_id)

    def tool_call_id(self, run: Any) -> str | None:
        """The id of the model's tool call a tool answered: LangSmith keeps it with the run;
        else it is in the call the tool node was given, or in the tool's result message."""
        found = (run.extra or {}).get("tool_call_id")
        if isinstance(found, str) and found:
            return found
        parent_id = _uuid(run.parent_run_id)
        parent = self.runs.get(parent_id) if parent_id is not None else None
        inputs = parent.inputs if parent is not None and isinstance(parent.inputs, dict) else {}
        given = inputs.get("tool_call")
        if isinstance(given, dict) and given.get("name") == run.name:
            found = given.get("id")
            if isinstance(found, str) and found:
                return found
        outputs = run.outputs if isinstance(run.outputs, dict) else {}
        output = outputs.get("output")
        candidates = [output]
        if isinstance(output, dict) and isinstance(output.get("update"), dict):
            candidates = list(reversed(output["update"].get("messages") or []))
        for candidate in candidates:
            if isinstance(candidate, dict) and isinstance(candidate.get("tool_call_id"), str):
                return candidate["tool_call_id"]
        return None

    # -- values back from JSON --------------------------------------------------------------

    def revive(self, value: Any) -> Any:
        """Messages and ``Command``s back from their JSON form, anywhere inside ``value``
        (walked on a list: a run's values nest as deep as its graph made them)."""
        return run_walk(self._revive(value))

    def _revive(self, value: Any) -> Walk[Any]:
        if isinstance(value, list):
            items = []
            for item in value:
                items.append((yield self._revive(item)) if isinstance(item, list | dict) else item)
            return items
        if not isinstance(value, dict):
            return value
        message = _message(value)
        if message is not None:
            return self.known(message)
        if set(value) == _COMMAND_FIELDS:
            return self.command(value)
        revived = {}
        for key, item in value.items():
            revived[key] = (yield self._revive(item)) if isinstance(item, list | dict) else item
        return revived

    def known(self, message: Any) -> Any:
        """The object of a message: the one first seen with its id, or the id-less one it
        was before LangGraph gave it an id. A name given later (an agent's reply gets its
        agent's) is put on it, as on the local object; a message the state replaced by id
        is a new object from then on."""
        key = (message.type, getattr(message, "tool_call_id", None), repr(message.content))
        if not message.id:
            self.unnamed.setdefault(key, []).append(message)
            return message
        same = self.messages.get(message.id)
        if same is None:
            waiting = self.unnamed.get(key)
            same = waiting.pop(0) if waiting else message
            same.id = message.id
            self.messages[message.id] = same
        elif not _same_turn(same, message):
            self.messages[message.id] = same = message
        if message.name and not same.name:
            same.name = message.name
        return same

    def command(self, value: dict[str, Any]) -> Any:
        from langgraph.types import Command

        goto = value["goto"]
        return Command(
            graph=value.get("graph"),
            update=self.revive(value.get("update")),
            resume=value.get("resume"),
            goto=[self.destination(g) for g in goto]
            if isinstance(goto, list)
            else self.destination(goto),
        )

    @staticmethod
    def destination(item: Any) -> Any:
        """One place a serialized ``goto`` sends control. A ``Send`` is kept as its
        ``repr``: its node's name is all that is left of it."""
        if isinstance(item, str):
            sent = _SEND_ANYWHERE.match(item)
            return sent.group("node") if sent else item
        return item

    def prompt(self, inputs: Any) -> list[list[Any]]:
        """A model's input messages, as batches."""
        inputs = inputs if isinstance(inputs, dict) else {}
        found = inputs.get("messages")
        if not isinstance(found, list):
            return [[]]
        batches = found if found and all(isinstance(b, list) for b in found) else [found]
        return [[m for m in self.revive(batch) if _is_message(m)] for batch in batches]

    def llm_result(self, run: Any) -> Any:
        """The model's ``LLMResult``: its reply and the usage it reported."""
        from langchain_core.messages import AIMessage
        from langchain_core.outputs import ChatGeneration, Generation, LLMResult

        outputs = run.outputs if isinstance(run.outputs, dict) else {}
        generations: list[list[Generation]] = []
        for batch in outputs.get("generations") or []:
            row: list[Generation] = []
            for item in batch if isinstance(batch, list) else [batch]:
                if not isinstance(item, dict):
                    continue
                message = self.revive(item.get("message"))
                if isinstance(message, AIMessage):
                    row.append(ChatGeneration(message=message))
                else:
                    row.append(Generation(text=str(item.get("text") or "")))
            generations.append(row)
        if not generations:  # a model traced outside LangChain: OpenAI's response form
            for choice in outputs.get("choices") or []:
                message = self.revive(choice.get("message")) if isinstance(choice, dict) else None
                if isinstance(message, AIMessage):
                    generations.append([ChatGeneration(message=message)])
        llm_output = outputs.get("llm_output")
        llm_output = dict(llm_output) if isinstance(llm_output, dict) else {}
        reported = any(
            isinstance(g, ChatGeneration)
            and isinstance(g.message, AIMessage)
            and g.message.usage_metadata
            for row in generations
            for g in row
        )
        # A LangChain model's result says what it reported: no usage there stays unknown.
        # Traced outside LangChain, the run's own usage counts, else LangSmith's count.
        outside = not outputs.get("generations")
        if outside and not reported and not llm_output.get("token_usage"):
            usage = _counted(run, outputs)
            if usage is not None:  # as given: the recorder checks the counts
                llm_output["token_usage"] = {
                    "prompt_tokens": usage[0],
                    "completion_tokens": usage[1],
                }
        return LLMResult(generations=generations or [[]], llm_output=llm_output or None)


def _kind(run: Any) -> str:
    run_type = str(run.run_type or "")
    if run_type in _MODEL_TYPES:
        return "model"
    return "tool" if run_type == "tool" else "chain"


def _metadata(run: Any) -> dict[str, Any]:
    metadata = (run.extra or {}).get("metadata")
    return metadata if isinstance(metadata, dict) else {}


def _local_metadata(metadata: dict[str, Any]) -> dict[str, Any]:
    """The metadata as LangGraph set it: ``langgraph_path`` is a tuple, not JSON's list."""
    path = metadata.get("langgraph_path")
    if isinstance(path, list):
        return {**metadata, "langgraph_path": _tuples(path)}
    return metadata


def _tuples(value: Any) -> Any:
    return tuple(_tuples(v) for v in value) if isinstance(value, list | tuple) else value


def _unwrapped(outputs: Any) -> Any:
    """A chain's return value: LangSmith keeps a value that is no mapping (a ``Command``, a
    list, a string) as ``{"output": value}``."""
    if isinstance(outputs, dict) and set(outputs) == {"output"}:
        return outputs["output"]
    return outputs


def _run_id(run: Any) -> uuid.UUID:
    """A run's own id: LangSmith's ``Run.id`` is a UUID (``_uuid`` only normalises it)."""
    return cast(uuid.UUID, _uuid(run.id))


def _uuid(value: Any) -> uuid.UUID | None:
    if value is None or isinstance(value, uuid.UUID):
        return value
    try:
        return uuid.UUID(str(value))
    except ValueError:
        return None


def _same_turn(one: Any, other: Any) -> bool:
    """Two versions of one message, not a replacement: same kind, text and tool calls."""
    return (
        type(one) is type(other)
        and one.content == other.content
        and getattr(one, "tool_calls", None) == getattr(other, "tool_calls", None)
    )


def _is_message(value: Any) -> bool:
    from langchain_core.messages import BaseMessage

    return isinstance(value, BaseMessage)


_MESSAGE_CLASSES = {
    "ai": "AIMessage",
    "AIMessageChunk": "AIMessage",
    "assistant": "AIMessage",
    "human": "HumanMessage",
    "user": "HumanMessage",
    "HumanMessageChunk": "HumanMessage",
    "system": "SystemMessage",
    "developer": "SystemMessage",
    "tool": "ToolMessage",
    "ToolMessageChunk": "ToolMessage",
    "function": "FunctionMessage",
    "chat": "ChatMessage",
    "remove": "RemoveMessage",
}


def _message(value: dict[str, Any]) -> Any:
    """A message from LangChain's serialized form or a plain dump, else ``None``."""
    import langchain_core.messages as lc_messages

    if value.get("lc") == 1 and value.get("type") == "constructor":
        ids = value.get("id")
        kwargs = value.get("kwargs")
        name = ids[-1] if isinstance(ids, list) and ids else None
        if not isinstance(kwargs, dict) or not isinstance(name, str):
            return None
        if not (name.endswith("Message") or name.endswith("MessageChunk")):
            return None
        fields, kind = kwargs, kwargs.get("type") or name
    elif "content" in value and isinstance(value.get("type"), str):
        fields, kind = value, value["type"]
    elif "content" in value and isinstance(value.get("role"), str):  # OpenAI's form
        try:
            return lc_messages.convert_to_messages([value])[0]
        except Exception:  # not a message after all
            return None
    else:
        return None
    class_name = _MESSAGE_CLASSES.get(kind)
    if class_name is None and kind.endswith("Message") and hasattr(lc_messages, kind):
        class_name = kind  # an older dump, named by its class only
    if class_name is None:
        return None
    cls = getattr(lc_messages, class_name)
    data = {k: v for k, v in fields.items() if k not in ("type", "tool_call_chunks")}
    try:
        return cls.model_validate(data)
    except Exception:  # a dump this version cannot read, or usage a message refuses
        pass
    usage = data.pop("usage_metadata", None)
    if usage is None:
        return None  # no message
    try:  # counts a message refuses (text, NaN, fractions): the message without them
        message = cls.model_validate(data)
    except Exception:
        return None
    message.response_metadata[USAGE_AS_GIVEN] = usage  # the recorder says what was wrong
    return message


def _counted(run: Any, outputs: dict[str, Any]) -> tuple[Any, Any] | None:
    """(input, output) tokens from the run's outputs or LangSmith's counts, if any, as
    given (None where one is not): the recorder checks them, as every model's usage."""
    usage = outputs.get("usage_metadata") or outputs.get("usage")
    if isinstance(usage, dict) and usage:
        tokens_in = usage.get("input_tokens", usage.get("prompt_tokens"))
        tokens_out = usage.get("output_tokens", usage.get("completion_tokens"))
        return tokens_in, tokens_out
    if run.prompt_tokens or run.completion_tokens:
        return run.prompt_tokens, run.completion_tokens
    return None


# -- errors -------------------------------------------------------------------------------

_ERROR_TYPES: dict[str, type[Exception]] = {}


def _exception(text: str) -> BaseException:
    """An exception like the one a run's stored error text describes."""
    head = text.split(_TRACEBACK, 1)[0].strip()
    found = _ERROR_REPR.match(head)
    name = found.group("name").rpartition(".")[2] if found else "Error"
    args = found.group("args") if found else head
    if name in _BUBBLING:
        return _bubbling(name, args)
    try:
        values = ast.literal_eval(f"({args},)") if found else (args,)
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        values = (args,)
    message = str(values[0]) if len(values) == 1 else ", ".join(map(str, values))
    cls = _ERROR_TYPES.get(name)
    if cls is None:
        cls = _ERROR_TYPES[name] = type(name, (Exception,), {})
    return cls(message) if message else cls()


def _bubbling(name: str, args: str) -> BaseException:
    """LangGraph's control flow: a ``Command`` to a parent graph keeps its destinations."""
    from langgraph.errors import GraphInterrupt, ParentCommand
    from langgraph.types import Command

    if name != "ParentCommand":
        return GraphInterrupt()
    at = args.rfind("goto=")
    goto = args[at + len("goto=") :].removesuffix(")") if at >= 0 else ""
    return ParentCommand(Command(goto=_parsed_goto(goto)))


def _parsed_goto(text: str) -> list[str]:
    """The node names in the ``repr`` of a ``goto``: ``'x'``, ``['x', 'y']``,
    ``Send(node='x', arg=...)`` or a list of those."""
    try:
        tree = ast.parse(text.strip(), mode="eval").body
    except (SyntaxError, ValueError, MemoryError, RecursionError, SystemError):
        # SystemError: CPython 3.11's ast can fail at random in a process with threads
        return [m.group("node") for m in _SEND_ANYWHERE.finditer(text)]
    items = tree.elts if isinstance(tree, ast.List | ast.Tuple) else [tree]
    names = []
    for item in items:
        if isinstance(item, ast.Constant) and isinstance(item.value, str) and item.value:
            names.append(item.value)
        elif isinstance(item, ast.Call):
            for keyword in item.keywords:
                value = keyword.value
                if keyword.arg == "node" and isinstance(value, ast.Constant):
                    names.append(str(value.value))
            if not item.keywords and item.args and isinstance(item.args[0], ast.Constant):
                names.append(str(item.args[0].value))
    return names
