"""Plain data records shared by the tracer, runner, evaluators, store and reports.

Kept free of heavy imports so every stage (and ``agenteval --help``) can use them cheaply.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class Example:
    """One dataset row. ``id`` is stable: given in the file or a hash of the content."""

    id: str
    inputs: dict[str, Any]
    outputs: dict[str, Any] = field(default_factory=dict)
    metadata: dict[str, Any] = field(default_factory=dict)
    row: int | None = None  # 1-based position in the source file, for error messages


@dataclass
class ModelCall:
    """One chat-model call inside a target request, attributed to the agent that made it."""

    agent: str
    model: str
    input_tokens: int = 0
    output_tokens: int = 0
    latency_s: float = 0.0


@dataclass
class ToolCall:
    """A tool call an agent made (handoff tools included), with its arguments."""

    agent: str
    name: str
    args: dict[str, Any] = field(default_factory=dict)
    output: str | None = None


@dataclass
class Handoff:
    """Control passing between agents through a ``transfer_to_*`` / ``transfer_back_to_*`` tool."""

    source: str
    target: str
    tool: str


@dataclass
class Trace:
    """What one target call did, recorded from the outside by callbacks.

    ``agent_path`` is the ordered list of agents that made model calls, consecutive
    calls by the same agent collapsed into one step.
    """

    agent_path: list[str] = field(default_factory=list)
    handoffs: list[Handoff] = field(default_factory=list)
    tool_calls: list[ToolCall] = field(default_factory=list)
    model_calls: list[ModelCall] = field(default_factory=list)
    messages: list[dict[str, Any]] = field(default_factory=list)  # OpenAI form
    latency_s: float = 0.0
    error: str | None = None

    @property
    def agents_invoked(self) -> list[str]:
        """Every agent that made at least one model call, in first-seen order."""
        return list(dict.fromkeys(self.agent_path))

    @property
    def tokens(self) -> dict[str, dict[str, int]]:
        """Token usage by model name: ``{model: {"input", "output", "total"}}``."""
        by_model: dict[str, dict[str, int]] = {}
        for call in self.model_calls:
            usage = by_model.setdefault(call.model, {"input": 0, "output": 0, "total": 0})
            usage["input"] += call.input_tokens
            usage["output"] += call.output_tokens
            usage["total"] += call.input_tokens + call.output_tokens
        return by_model

    def to_dict(self) -> dict[str, Any]:
        """The trace as JSON-ready data, with ``tokens``. Lists are new; the values inside
        (tool arguments, messages) are the trace's own, not copies."""
        return {
            "agent_path": list(self.agent_path),
            "handoffs": [
                {"source": h.source, "target": h.target, "tool": h.tool} for h in self.handoffs
            ],
            "tool_calls": [
                {"agent": t.agent, "name": t.name, "args": t.args, "output": t.output}
                for t in self.tool_calls
            ],
            "model_calls": [
                {
                    "agent": m.agent,
                    "model": m.model,
                    "input_tokens": m.input_tokens,
                    "output_tokens": m.output_tokens,
                    "latency_s": m.latency_s,
                }
                for m in self.model_calls
            ],
            "messages": list(self.messages),
            "latency_s": self.latency_s,
            "error": self.error,
            "tokens": self.tokens,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any] | None) -> Trace:
        if not data:
            return cls()
        return cls(
            agent_path=list(data.get("agent_path", [])),
            handoffs=[Handoff(**h) for h in data.get("handoffs", [])],
            tool_calls=[ToolCall(**t) for t in data.get("tool_calls", [])],
            model_calls=[ModelCall(**m) for m in data.get("model_calls", [])],
            messages=list(data.get("messages", [])),
            latency_s=float(data.get("latency_s", 0.0)),
            error=data.get("error"),
        )


@dataclass
class Score:
    """One evaluator result, in the openevals / LangSmith shape."""

    key: str
    score: float | bool | None
    comment: str | None = None


@dataclass
class Result:
    """One example x target x repetition: the target's outputs, its trace and the scores."""

    example_id: str
    repetition: int
    outputs: dict[str, Any] | None
    trace: Trace
    scores: list[Score] = field(default_factory=list)
    error: str | None = None
    latency_s: float = 0.0
    attempts: int = 1  # target calls made, retries included; 0 when served from the cache
    cached: bool = False  # outputs and trace came from the response cache

    def score_map(self) -> dict[str, float | bool | None]:
        return {s.key: s.score for s in self.scores}
