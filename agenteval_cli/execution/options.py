"""What one run is asked to do beyond its spec, spelt once.

The CLI builds a :class:`RunOptions` from its flags, the API takes its keys as keyword
arguments (``agenteval.run(spec, limit=5, shard=(0, 4))``), and execution reads it: a new
option is a key here and the code that reads it, not an argument threaded through every
signature on the way.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, TypedDict

if TYPE_CHECKING:
    from agenteval_cli.spec.model import Executor


class RunOptions(TypedDict, total=False):
    """Each key left out (or None) means the spec's own setting, or none."""

    targets: Sequence[str] | None  # only these of the spec's targets
    limit: int | None  # only the first examples
    resume: bool | str  # continue the latest unfinished run, or the one named
    retry_errors: bool  # resume, and call again what ended in error
    cache: bool | None  # answer from the response cache (the spec's ``cache`` unless given)
    upload: bool | None  # keep each call's run tree for a LangSmith upload
    shard: tuple[int, int] | None  # ``(i, N)``: only shard i of N of the examples
    executor: Executor | None  # "local" or "ray" (the spec's ``executor`` unless given)
    ray_address: str | None  # the Ray cluster (the spec's ``ray.address`` unless given)
    # the .env file to read instead of those from the spec's folder up to the project root
    # (agenteval_cli.core.envfiles); the process environment wins over either
    env_file: str | Path | None
    # each request's trace as OpenTelemetry GenAI spans, sent when the run ends: to an
    # OTLP/HTTP endpoint ("http://host:4318", "env": the OTLP environment's) or an OTLP
    # JSON file ("traces.jsonl")
    otel: str | None
    # a name in the dataset that no agent, tool or skill of a target has refuses the run
    # before any call (the spec's ``strict_names`` unless given)
    strict: bool | None


def resumes(options: RunOptions) -> bool:
    """Whether the run continues one already started."""
    return bool(options.get("resume") or options.get("retry_errors"))
