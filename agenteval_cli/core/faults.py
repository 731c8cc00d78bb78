"""The faults a spec can inject into a target's calls, and how an error says it was one.

Kept here, below every stage: the spec validates the kinds, the tracer raises them, the
runner leaves them to the graph (never retried by the run), the evaluators count them.
"""

from __future__ import annotations

from typing import Literal, get_args

from agenteval_cli.core.errors import error_chain

FaultKind = Literal["error", "timeout", "rate_limit", "model_error"]
FAULT_KINDS: tuple[str, ...] = get_args(FaultKind)
# What a tool can be made to do, and what a model call can.
TOOL_FAULTS: tuple[str, ...] = ("error", "timeout", "rate_limit")
MODEL_FAULTS: tuple[str, ...] = ("model_error", "timeout", "rate_limit")

# The attribute an injected error carries: the fault's kind.
MARK = "agenteval_fault"


def injected_fault(error: BaseException) -> str | None:
    """The kind of the injected fault ``error`` is or wraps, or None for a real error."""
    for current in error_chain(error):
        kind = getattr(current, MARK, None)
        if isinstance(kind, str):
            return kind
    return None
