"""What a run is asked, as the API takes it: :class:`RunOptions` (the command builds one
from its options), whether it resumes, and a shard as ``--shard`` writes it."""

from agenteval_cli.execution.options import RunOptions, resumes

__all__ = ["RunOptions", "parse_shard", "resumes"]


def parse_shard(text: str) -> tuple[int, int]:
    """``"i/N"`` as ``(i, N)``; a ValueError saying what is wrong otherwise."""
    from agenteval_cli.data.examples import parse_shard as parsed

    return parsed(text)
