"""Users' own evaluators by import path, with the openevals / LangSmith signature.

Row evaluators take any of ``inputs, outputs, reference_outputs, trace, run, example`` by name
(or LangSmith's two positional ``(run, example)``), sync or async, and return a number, a bool,
``{key, score, comment}`` or a list of them. Summary evaluators (``summary: true``) are called
once per target with lists: ``inputs, outputs, reference_outputs, traces, runs, examples``.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

from agenteval_cli.evaluators.invoke import KNOWN_PARAMETERS, SUMMARY_PARAMETERS, unknown_required
from agenteval_cli.evaluators.registry import register


@register(
    "custom",
    family="custom",
    reads="whatever the function asks for by name",
    description="your function by import path (file.py:fn or package.module:fn), sync or async",
    example=(
        "- {name: my_check, type: custom, target: my_evals.py:check}\n"
        "- {name: pass_rate, type: custom, target: my_evals.py:pass_rate, summary: true}"
    ),
)
def custom(
    *,
    target: str,
    summary: bool = False,
    name: str = "custom",
    base_dir: Path | None = None,
    spec_file: str | None = None,
    spec_line: int | None = None,
) -> Any:
    """Import ``target`` relative to the spec; its required parameters must be known names."""
    from agenteval_cli.core.imports import import_object

    fn = import_object(target, base_dir=base_dir or Path.cwd(), file=spec_file, line=spec_line)
    if not callable(fn):
        raise ValueError(f"{target!r} is a {type(fn).__name__}, not a function")
    known = SUMMARY_PARAMETERS if summary else KNOWN_PARAMETERS
    unknown = unknown_required(fn, known)
    if unknown:
        raise ValueError(
            f"{target} takes {', '.join(unknown)}; an evaluator's parameters are any of "
            f"{', '.join(known)}"
        )
    if summary:
        return _as_summary(fn)
    return fn


def _as_summary(fn: Any) -> Any:
    """A wrapper marked dataset-level (the loader keeps it out of per-result scoring); its
    signature is ``fn``'s, so parameters are still matched by name."""

    @functools.wraps(fn)
    def summary(*args: Any, **kwargs: Any) -> Any:
        return fn(*args, **kwargs)

    summary.is_summary = True  # type: ignore[attr-defined]
    return summary
