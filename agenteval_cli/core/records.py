"""Plain data records shared by the tracer, runner, evaluators, store and reports.

Kept free of heavy imports so every stage (and ``agenteval --help``) can use them cheaply.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from decimal import Decimal
from typing import Any

from agenteval_cli.core.token_counts import UsageCounts


@dataclass
class Example:
    """One dataset row. ``id`` is stable: given in the file or a hash of the content."""

    id: str
    inputs: dict[str, Any]
    outputs: dict[str, Any] = field(default_factory=dict)
    metadata: dict[str, Any] = field(default_factory=dict)
    row: int | None = None  # 1-based position in the source file, for error messages


@dataclass(frozen=True)
class CallPrice:
    """What one model call cost, in USD (exact), and the price it was given: where it came
    from (``spec``, or the price database and its version: ``genai-prices 0.2.3``), the
    rates used by genai-prices' names (``input_mtok``: USD per 1M input tokens), and, when
    ``usd`` is None, why (naming the model). ``notes`` say which parts were priced at
    another part's rate. Kept with the call when the run prices it, so every later view
    reads the run's price, never the price data of the process that shows it."""

    usd: Decimal | None
    source: str | None = None
    reason: str | None = None
    notes: tuple[str, ...] = ()
    matched: str | None = None  # the database's provider and model ids, ``anthropic/x``
    rates: Mapping[str, Any] = field(default_factory=dict, hash=False)

    def to_dict(self) -> dict[str, Any]:
        """As stored: the USD a decimal string (exact), the rates as priced."""
        return {
            "usd": None if self.usd is None else str(self.usd),
            "source": self.source,
            "rates": dict(self.rates),
            "reason": self.reason,
            "notes": list(self.notes),
            "matched": self.matched,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> CallPrice:
        usd = data.get("usd")
        try:
            exact = None if usd is None else Decimal(str(usd))
        except ArithmeticError:  # decimal's InvalidOperation: a file edited by hand
            raise ValueError(f"a model call's price usd {usd!r} is not a number") from None
        return cls(
            exact,
            data.get("source"),
            data.get("reason"),
            tuple(data.get("notes") or ()),
            data.get("matched"),
            dict(data.get("rates") or {}),
        )


@dataclass
class ModelCall:
    """One chat-model call inside a target request, attributed to the agent that made it.

    ``path`` is the agent's place in the hierarchy, outer to inner (``["money_team",
    "account"]``); ``agent`` is its last entry. Tokens are ``None`` when the model reported
    no usage: unknown, never zero.
    """

    agent: str
    model: str
    input_tokens: int | None = 0
    output_tokens: int | None = 0
    latency_s: float = 0.0
    path: list[str] = field(default_factory=list)
    failed: bool = False  # it raised and answered nothing: the agent was reached, no tokens
    # Made by an earlier attempt of the request, which failed and was retried: spent (its
    # tokens and cost count), but what the request did is the last attempt's.
    retried: bool = False
    # Still running when the request stopped (a timeout, an error elsewhere): it may have
    # been billed, so its tokens are unknown, not zero.
    cut_off: bool = False
    # Why the model reported no usage, when the recorder can tell (a ChatOpenAI stream
    # without ``stream_usage=True``); None otherwise.
    no_usage_reason: str | None = None
    # What the usage said beyond input and output, by LangChain's ``UsageMetadata``
    # convention: cache reads and writes are part of ``input_tokens``, reasoning part of
    # ``output_tokens``. ``None``: the model did not report it (unknown, not zero).
    cache_read_tokens: int | None = None
    cache_write_tokens: int | None = None  # every cache write, whatever its lifetime
    reasoning_tokens: int | None = None
    # Further parts priced apart, by the price database's usage names
    # (``cache_write_5m_tokens``, ``cache_write_1h_tokens``, ``input_audio_tokens``, ...).
    token_details: dict[str, int] = field(default_factory=dict)
    # Who served the call, as the chat model says (LangChain's ``ls_provider``), or None.
    provider: str | None = None
    # When it started, in seconds since the epoch (it ended ``latency_s`` later); None when
    # not recorded (traces stored before, imported ones without times).
    started_at: float | None = None
    # The fault the spec injected into this call (``model_error``, ``rate_limit``,
    # ``timeout``): it raised before reaching the model. None for a call left alone.
    injected: str | None = None
    # The price the run gave the call (agenteval_cli.metrics.prices); None: not priced
    # (a store written before prices were kept with the calls)
    price: CallPrice | None = None

    def __post_init__(self) -> None:
        if not self.path:
            self.path = [self.agent]


TOOL, HANDOFF, AGENT_TOOL = "tool", "handoff", "agent"
# A call no tool ran because it was the model's answer: a structured-output schema
# (``with_structured_output``, ``ToolStrategy``), a router's choice.
OUTPUT = "output"
# What became of a tool call: a tool ran it and returned, it failed (the tool raised, or its
# result says ``status="error"``), or nothing ran it (the run stopped first, or the graph
# read the call without running it). Traces stored before statuses read as ``ok``: that is
# how their calls were scored.
OK, ERROR, NOT_RUN = "ok", "error", "not_run"


@dataclass
class ToolCall:
    """A tool call an agent made, with its arguments.

    ``kind`` says what the call did: ``tool`` (an ordinary tool), ``handoff`` (passed control
    to ``target``), ``agent`` (ran the agent ``target`` as a tool and took its answer) or
    ``output`` (the model's structured answer, which no tool ran). Handoffs and agent calls
    are routing; only ``tool`` calls are work, and only those that succeeded did any:
    trajectory and step evaluators skip the rest. ``status`` is ``ok``, ``error`` or
    ``not_run``.
    """

    agent: str
    name: str
    args: dict[str, Any] = field(default_factory=dict)
    output: str | None = None
    path: list[str] = field(default_factory=list)
    kind: str = TOOL
    target: str | None = None
    status: str = OK
    # When a tool started and ended it, in seconds since the epoch; None when no tool ran it
    # or the times were not recorded.
    started_at: float | None = None
    ended_at: float | None = None
    # The fault the spec injected into this call (``error``, ``timeout``, ``rate_limit``):
    # it raised before the tool ran. None for a call left alone.
    injected: str | None = None

    def __post_init__(self) -> None:
        if not self.path:
            self.path = [self.agent]

    @property
    def is_routing(self) -> bool:
        """A handoff or an agent called as a tool: how control moved, not a step of work."""
        return self.kind in (HANDOFF, AGENT_TOOL)

    @property
    def is_work(self) -> bool:
        """An ordinary tool call (whatever became of it): not routing, not the model's answer."""
        return self.kind == TOOL

    @property
    def succeeded(self) -> bool:
        """A tool ran it and it did not fail."""
        return self.status == OK


@dataclass
class Handoff:
    """Control passing from one agent to another.

    ``via`` says what passed it: ``tool`` (a handoff tool, named in ``tool``), ``command`` (a
    node's ``Command(goto=...)``), ``agent_tool`` (an agent run as a tool, and its answer
    going back) or ``edge`` (the graph's own edges: a router's choice, a return to a
    coordinator). ``parallel`` marks a handoff into, or out of, branches that ran at once.
    """

    source: str
    target: str
    tool: str = ""
    via: str = "tool"
    parallel: bool = False
    after: list[int] = field(default_factory=list)  # handoffs that led to ``source``
    # the text of the input the target's first call of its own chat model was given (its
    # messages' text and tool-call arguments); None when not recorded. What was seen, not
    # which handoff it is: left out of equality
    received: str | None = field(default=None, compare=False, repr=False)

    def as_dict(self) -> dict[str, Any]:
        """Who handed off to whom and how: the text the target was given left out."""
        return {k: v for k, v in self.__dict__.items() if k != "received"}


@dataclass
class Trace:
    """What one target call did, recorded from the outside by callbacks.

    ``agent_path`` is the ordered list of agents that made model calls, consecutive calls by
    the same agent collapsed into one step; the order is the graph's own (its supersteps),
    and agents that ran in parallel branches appear in a fixed order. ``handoffs`` are the
    transitions between those agents. ``untraced`` gives the reason when the target returned
    but no LangChain run was seen, so agent, handoff and token figures are unknown;
    ``unattributed`` when runs were seen but the target switches agents in a way nothing
    names (a state key it did not declare, sub-agents without names), so which agent did what
    is unknown while tokens and cost stay known.
    """

    agent_path: list[str] = field(default_factory=list)
    handoffs: list[Handoff] = field(default_factory=list)
    tool_calls: list[ToolCall] = field(default_factory=list)
    model_calls: list[ModelCall] = field(default_factory=list)
    messages: list[dict[str, Any]] = field(default_factory=list)  # OpenAI form
    latency_s: float = 0.0
    error: str | None = None
    coordinators: list[str] = field(default_factory=list)
    untraced: str | None = None
    unattributed: str | None = None  # what to declare so the agents can be told apart
    # the skills the target's declared skill tools loaded; None when it declares none
    skills: list[str] | None = None
    # 2: handoffs are every change of agent, in the graph's order; 1: stored before that,
    # when handoffs were only the transfer tools called
    schema: int = 2
    # When the request started, in seconds since the epoch; None when not recorded
    started_at: float | None = None
    # the turn's human message: the last one the request's first model call was given
    request: str | None = None

    @property
    def agents_unknown(self) -> str | None:
        """Why which agent did what cannot be scored, or None when the trace says it."""
        if self.untraced:
            return f"untraced: {self.untraced}"
        if self.unattributed:
            return f"agents not told apart: {self.unattributed}"
        return None

    @property
    def agents_invoked(self) -> list[str]:
        """Every agent that made at least one model call, in first-seen order."""
        return list(dict.fromkeys(self.agent_path))

    @property
    def agent_paths(self) -> list[list[str]]:
        """The distinct agent paths (outer to inner) that made model calls, first seen first;
        calls of retried attempts left out (the request's agents are its last attempt's)."""
        seen: dict[tuple[str, ...], None] = {}
        for call in self.model_calls:
            if not call.retried:
                seen.setdefault(tuple(call.path), None)
        return [list(p) for p in seen]

    @property
    def agents_at_any_level(self) -> list[str]:
        """Leaf agents and the teams that hold them: what ``expected_agents`` may name."""
        names: dict[str, None] = {}
        for path in self.agent_paths:
            names.update(dict.fromkeys(path))
        names.update(dict.fromkeys(self.agent_path))
        return list(names)

    @property
    def tokens(self) -> dict[str, dict[str, int | None]]:
        """Token usage by model name: ``{model: {"input", "output", "total"}}``; a figure is
        ``None`` when a call of that model reported no usage."""
        by_model: dict[str, dict[str, int | None]] = {}
        for call in self.model_calls:
            if call.failed:  # a call that raised answered nothing
                continue
            usage = by_model.setdefault(call.model, {"input": 0, "output": 0, "total": 0})
            usage["input"] = _add(usage["input"], call.input_tokens)
            usage["output"] = _add(usage["output"], call.output_tokens)
            usage["total"] = _add(usage["input"], usage["output"])
        return by_model

    def by_agent(self) -> dict[str, dict[str, Any]]:
        """Model calls, tokens and model time per agent path (``"team > agent"``), teams
        included as the sum of their members; tokens ``None`` where any call's are unknown."""
        usage: dict[str, dict[str, Any]] = {}
        for call in self.model_calls:
            if call.failed:
                continue
            for depth in range(1, len(call.path) + 1):
                key = " > ".join(call.path[:depth])
                row = usage.setdefault(
                    key,
                    {
                        "path": list(call.path[:depth]),
                        "leaf": depth == len(call.path),
                        "model_calls": 0,
                        "input_tokens": 0,
                        "output_tokens": 0,
                        "latency_s": 0.0,
                        "models": [],
                    },
                )
                row["leaf"] = row["leaf"] or depth == len(call.path)
                row["model_calls"] += 1
                row["input_tokens"] = _add(row["input_tokens"], call.input_tokens)
                row["output_tokens"] = _add(row["output_tokens"], call.output_tokens)
                row["latency_s"] += call.latency_s
                if call.model not in row["models"]:
                    row["models"].append(call.model)
        return usage

    def to_dict(self) -> dict[str, Any]:
        """The trace as JSON-ready data, with ``tokens``. Lists are new; the values inside
        (tool arguments, messages) are the trace's own, not copies."""
        return {
            "agent_path": list(self.agent_path),
            "handoffs": [
                {
                    "source": h.source,
                    "target": h.target,
                    "tool": h.tool,
                    "via": h.via,
                    "parallel": h.parallel,
                    "after": list(h.after),
                    **({} if h.received is None else {"received": h.received}),
                }
                for h in self.handoffs
            ],
            "tool_calls": [
                {
                    "agent": t.agent,
                    "name": t.name,
                    "args": t.args,
                    "output": t.output,
                    "path": list(t.path),
                    "kind": t.kind,
                    "target": t.target,
                    "status": t.status,
                    "started_at": t.started_at,
                    "ended_at": t.ended_at,
                    "injected": t.injected,
                }
                for t in self.tool_calls
            ],
            "model_calls": [
                {
                    "agent": m.agent,
                    "model": m.model,
                    "input_tokens": m.input_tokens,
                    "output_tokens": m.output_tokens,
                    "latency_s": m.latency_s,
                    "path": list(m.path),
                    "failed": m.failed,
                    "retried": m.retried,
                    "cut_off": m.cut_off,
                    "no_usage_reason": m.no_usage_reason,
                    "cache_read_tokens": m.cache_read_tokens,
                    "cache_write_tokens": m.cache_write_tokens,
                    "reasoning_tokens": m.reasoning_tokens,
                    "token_details": dict(m.token_details),
                    "provider": m.provider,
                    "started_at": m.started_at,
                    "injected": m.injected,
                    **({} if m.price is None else {"price": m.price.to_dict()}),
                }
                for m in self.model_calls
            ],
            "messages": list(self.messages),
            "latency_s": self.latency_s,
            "error": self.error,
            "coordinators": list(self.coordinators),
            "untraced": self.untraced,
            "unattributed": self.unattributed,
            "skills": None if self.skills is None else list(self.skills),
            "schema": self.schema,
            "started_at": self.started_at,
            "tokens": self.tokens,
            **({} if self.request is None else {"request": self.request}),
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any] | None) -> Trace:
        if not data:
            return cls()
        return cls(
            agent_path=list(data.get("agent_path", [])),
            handoffs=[Handoff(**h) for h in data.get("handoffs", [])],
            tool_calls=[ToolCall(**t) for t in data.get("tool_calls", [])],
            # a --json export's calls also carry their price (cost_usd, price_source...)
            model_calls=[ModelCall(**_model_call_fields(m)) for m in data.get("model_calls", [])],
            messages=list(data.get("messages", [])),
            latency_s=float(data.get("latency_s", 0.0)),
            error=data.get("error"),
            coordinators=list(data.get("coordinators", [])),
            untraced=data.get("untraced"),
            unattributed=data.get("unattributed"),
            skills=None if data.get("skills") is None else list(data["skills"]),
            schema=int(data.get("schema", 1)),
            started_at=data.get("started_at"),
            request=data.get("request"),
        )


_COUNTS = (
    "input_tokens",
    "output_tokens",
    "cache_read_tokens",
    "cache_write_tokens",
    "reasoning_tokens",
)


def _model_call_fields(data: dict[str, Any]) -> dict[str, Any]:
    """A stored or ``--json`` model call's fields; its token counts checked as a model's
    usage is (a file edited by hand, or written elsewhere, is read too)."""
    names = {f.name for f in fields(ModelCall)}
    found = {k: v for k, v in data.items() if k in names}
    counts = UsageCounts()
    for key in _COUNTS:
        if key in found:
            found[key] = counts.read(key, found[key])
    if counts.reason is not None:
        found["no_usage_reason"] = found.get("no_usage_reason") or counts.reason
    found["price"] = price_from_json(data)
    return found


def price_from_json(data: Mapping[str, Any]) -> CallPrice | None:
    """A stored or exported call's price: its ``price``; in a ``--json`` file written
    before prices were kept with each call (no ``price`` key), the ``cost_usd`` and
    ``price_source`` the export gave it."""
    if "price" in data:  # null: never priced (a store written before prices were kept)
        price = data["price"]
        return CallPrice.from_dict(price) if isinstance(price, Mapping) else None
    if "price_source" not in data:
        return None
    usd = data.get("cost_usd")
    reason = data.get("price_note") if usd is None else None
    return CallPrice(
        None if usd is None else Decimal(repr(float(usd))), data["price_source"], reason
    )


def _add(total: int | None, value: int | None) -> int | None:
    """A sum that stays unknown once one part is."""
    return None if total is None or value is None else total + value


@dataclass
class Score:
    """One evaluator result, in the openevals / LangSmith shape."""

    key: str
    score: float | bool | None
    comment: str | None = None


@dataclass
class Turn:
    """One turn of a conversation: what was sent (the turn's inputs as the row gives them,
    or ``{"resume": value}`` answering an interrupt), what the target answered, that call's
    own trace and the turn's scores against the row's ``outputs.turns`` references."""

    inputs: dict[str, Any]
    outputs: dict[str, Any] | None
    trace: Trace
    scores: list[Score] = field(default_factory=list)
    error: str | None = None
    interrupt: str | None = None
    latency_s: float = 0.0
    # A simulated user's model calls that wrote this turn's message: spent apart from the
    # target's, like a judge's (empty for a scripted turn).
    user_calls: list[ModelCall] = field(default_factory=list)
    # False for a turn that never reached the target (a resume with no interrupt to answer):
    # kept as the turn that ended the conversation, but no turn the conversation ran.
    sent: bool = True
    # Why the conversation ended after this turn, on its last turn (the script used up, the
    # simulated user done, an interrupt nothing answered, ...); None on the others, and where
    # the turn's error says it.
    ended: str | None = None

    @property
    def status(self) -> str:
        return result_status(self.error, self.interrupt)

    def score_map(self) -> dict[str, float | bool | None]:
        return {s.key: s.score for s in self.scores}

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready (the trace with its ``tokens``), as the store and ``--json`` keep it."""
        return {
            "inputs": self.inputs,
            "outputs": self.outputs,
            "trace": self.trace.to_dict(),
            "scores": [{"key": s.key, "score": s.score, "comment": s.comment} for s in self.scores],
            "error": self.error,
            "interrupt": self.interrupt,
            "latency_s": self.latency_s,
            "status": self.status,
            "user_calls": Trace(model_calls=self.user_calls).to_dict()["model_calls"],
            "sent": self.sent,
            "ended": self.ended,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Turn:
        return cls(
            inputs=dict(data.get("inputs") or {}),
            outputs=data.get("outputs"),
            trace=Trace.from_dict(data.get("trace")),
            scores=[
                Score(str(s["key"]), s.get("score"), s.get("comment"))
                for s in data.get("scores") or []
                if isinstance(s, dict) and "key" in s
            ],
            error=data.get("error"),
            interrupt=data.get("interrupt"),
            latency_s=float(data.get("latency_s") or 0.0),
            user_calls=Trace.from_dict({"model_calls": data.get("user_calls") or []}).model_calls,
            sent=data.get("sent") is not False,
            ended=data.get("ended"),
        )


@dataclass
class Result:
    """One example x target x repetition: the target's outputs, its trace and the scores.

    For a conversation (a row with ``inputs.turns``) ``turns`` holds each turn; ``outputs``
    are the last turn's, ``trace`` every turn's calls in order, ``scores`` the
    conversation's, and ``error`` / ``interrupt`` the turn that ended it. ``None`` for a
    single-turn result."""

    example_id: str
    repetition: int
    outputs: dict[str, Any] | None
    trace: Trace
    scores: list[Score] = field(default_factory=list)
    error: str | None = None
    latency_s: float = 0.0
    attempts: int = 1  # target calls made, retries included; 0 when served from the cache
    cached: bool = False  # outputs and trace came from the response cache
    # The graph stopped at ``interrupt()`` waiting for input (what it asked for): no answer.
    interrupt: str | None = None
    turns: list[Turn] | None = None
    # Hashes of the environment variables the call read (execution.env_reads), kept with
    # its cache entry; None when the call was not recorded (no cache, or served from it).
    env_reads: dict[str, str] | None = None
    # Where a request that failed a check went wrong: ``{agent, step, kind, why}`` (see
    # ``evaluators.blame``); None when it did not fail, or before it was read.
    blame: dict[str, Any] | None = None

    @property
    def status(self) -> str:
        """``ok``, ``error`` (the target raised) or ``interrupted`` (stopped at interrupt())."""
        return result_status(self.error, self.interrupt)

    def score_map(self) -> dict[str, float | bool | None]:
        return {s.key: s.score for s in self.scores}


OK, ERROR, INTERRUPTED = "ok", "error", "interrupted"  # a result's status


def result_status(error: str | None, interrupt: str | None) -> str:
    """A result's status: an error wins over an interrupt (a graph that raised after one)."""
    if error is not None:
        return ERROR
    return INTERRUPTED if interrupt is not None else OK


def no_answer_reason(error: str | None, interrupt: str | None) -> str | None:
    """Why a result has no final answer (the comment of the scores that need one), or None."""
    if error is not None:
        return f"no answer: the target raised ({error})"
    if interrupt is not None:
        shown = interrupt if len(interrupt) <= 120 else interrupt[:119] + "…"
        return f"no answer: the graph stopped at interrupt() waiting for input ({shown})"
    return None


def _known_fields(cls: type, data: Any) -> Any:
    """``cls`` from a mapping (fields it does not know are left out); None if it cannot be."""

    if not isinstance(data, dict):
        return None
    names = {f.name for f in fields(cls)}
    try:
        return cls(**{k: v for k, v in data.items() if k in names})
    except TypeError:
        return None


@dataclass
class Run:
    """One example x repetition as it is read back: the read model every report, the gate
    and the summaries work on, whether it came from the store, a ``--json`` file, a
    baseline or LangSmith; also the ``run`` argument of users' evaluators (``run.id``,
    ``run.inputs``, ``run.outputs``, ``run.trace``, ``run.error``, ``run.scores``)."""

    example_id: str
    repetition: int = 0
    inputs: dict[str, Any] = field(default_factory=dict)
    reference: dict[str, Any] = field(default_factory=dict)
    outputs: dict[str, Any] | None = None
    scores: dict[str, float | bool | None] = field(default_factory=dict)
    comments: dict[str, str] = field(default_factory=dict)
    agent_path: list[str] = field(default_factory=list)
    handoffs: list[dict[str, Any]] = field(default_factory=list)
    tool_calls: list[dict[str, Any]] = field(default_factory=list)
    tokens: dict[str, dict[str, int | None]] = field(default_factory=dict)  # None: unknown
    latency_s: float = 0.0
    error: str | None = None
    model_calls: list[ModelCall] = field(default_factory=list)  # each with its agent path
    untraced: str | None = None  # why the run recorded nothing, if so
    unattributed: str | None = None  # what to declare so its agents can be told apart
    coordinators: tuple[str, ...] = ()
    cached: bool = False  # served from the response cache: its latency is an earlier call's
    interrupt: str | None = None  # stopped at interrupt(): what the graph waits for
    # The whole recorded trace, when the run is built for an evaluator (the reports keep
    # only the fields above, never the messages of every result).
    recorded: Trace | None = field(default=None, repr=False, compare=False)
    turns: list[Turn] | None = None  # a conversation's turns (see Result.turns)
    blame: dict[str, Any] | None = None  # where it went wrong, when it failed (Result.blame)

    @property
    def id(self) -> str:
        return self.example_id

    @property
    def status(self) -> str:
        """``ok``, ``error`` or ``interrupted`` (see :func:`result_status`)."""
        return result_status(self.error, self.interrupt)

    @property
    def final_response(self) -> str:
        value = (self.outputs or {}).get("final_response")
        return "" if value is None else str(value)

    @property
    def trace(self) -> Trace:
        """The recorded trace, or one rebuilt from the fields kept (no messages)."""
        if self.recorded is not None:
            return self.recorded
        handoffs = [_known_fields(Handoff, h) for h in self.handoffs]
        tools = [_known_fields(ToolCall, t) for t in self.tool_calls]
        return Trace(
            agent_path=list(self.agent_path),
            handoffs=[h for h in handoffs if h is not None],
            tool_calls=[t for t in tools if t is not None],
            model_calls=list(self.model_calls),
            latency_s=self.latency_s,
            error=self.error,
            coordinators=list(self.coordinators),
            untraced=self.untraced,
            unattributed=self.unattributed,
        )

    @classmethod
    def from_result(
        cls,
        result: Result,
        inputs: dict[str, Any] | None = None,
        reference: dict[str, Any] | None = None,
        *,
        keep_trace: bool = False,
    ) -> Run:
        trace = result.trace
        return cls(
            example_id=result.example_id,
            repetition=result.repetition,
            inputs=inputs or {},
            reference=reference or {},
            outputs=result.outputs,
            scores=result.score_map(),
            comments={s.key: s.comment for s in result.scores if s.comment},
            agent_path=list(trace.agent_path),
            handoffs=[h.as_dict() for h in trace.handoffs],
            tool_calls=[t.__dict__ for t in trace.tool_calls],
            tokens=trace.tokens,
            latency_s=result.latency_s,
            error=result.error,
            model_calls=list(trace.model_calls),
            untraced=trace.untraced,
            unattributed=trace.unattributed,
            coordinators=tuple(trace.coordinators),
            cached=result.cached,
            interrupt=result.interrupt,
            recorded=trace if keep_trace else None,
            turns=result.turns,
            blame=result.blame,
        )
