"""User-facing errors: one line naming the place, the problem and the fix.

The CLI prints ``str(error)`` and exits with code 2, never a traceback, so every
message must make sense on its own.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Iterator
from enum import IntEnum
from pathlib import Path

from agenteval_cli.core.redact import redact


class UserError(Exception):
    """Bad input from the user: a spec, dataset, import path or evaluator name."""

    exit_code = 2

    def __init__(
        self,
        message: str,
        *,
        file: str | Path | None = None,
        line: int | None = None,
        row: int | None = None,
        hint: str | None = None,
    ) -> None:
        self.message = message
        self.file = str(file) if file is not None else None
        self.line = line
        self.row = row
        self.hint = hint
        super().__init__(self.format())

    def format(self) -> str:
        where = ""
        if self.file:
            where = self.file
            if self.line is not None:
                where += f":{self.line}"
            if self.row is not None:
                where += f" row {self.row}"
            where += ": "
        elif self.row is not None:
            where = f"row {self.row}: "
        text = where + self.message
        if self.hint:
            text += f" ({self.hint})"
        return redact(text)  # a value a spec took from ${SECRET} never shows


def did_you_mean(word: str, choices: Iterable[str]) -> str | None:
    """A 'did you mean X?' hint for the closest choice, or None when nothing is close."""
    close = difflib.get_close_matches(word, list(choices), n=1, cutoff=0.6)
    return f"did you mean {close[0]!r}?" if close else None


class ExitCode(IntEnum):
    """What ``agenteval`` exits with; listed in docs/troubleshooting.md ("Exit codes") and
    in ``agenteval run --help``."""

    OK = 0
    GATE_FAILED = 1  # a threshold failed, a drop beyond its margin, or an untested check
    BAD_INPUT = 2  # a spec, dataset, option or import refused before anything ran
    # calls errored above max_error_rate (or stopped at interrupt() above max_interrupt_rate),
    # or an evaluator failed everywhere
    RUN_ERRORS = 3
    SERVICE_FAILED = 4  # LangSmith refused or failed a request (after retries)
    INTERRUPTED = 130  # Ctrl-C or SIGTERM; what finished is saved, --resume continues


def error_chain(error: BaseException) -> Iterator[BaseException]:
    """``error`` and the errors it wraps (its cause, else its context), each once."""
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        yield current
        current = current.__cause__ or current.__context__
