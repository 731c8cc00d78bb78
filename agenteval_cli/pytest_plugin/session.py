"""Where a pytest session's processes store their runs, and what the session made of them.

Light on purpose: the plugin imports it when pytest loads the plugin."""

from __future__ import annotations

import tempfile
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from agenteval_cli.api import RunReport

PARTS_KEY = "agenteval_parts"  # in xdist's workerinput: the folder the workers store in


@dataclass
class SessionRuns:
    """Where this process stores its runs, and what the session made of them at its end."""

    uid: str  # the test run's id: xdist's testrunuid, or one of our own
    parts: Path  # one store per process in it
    worker: str  # xdist's worker id, "main" without xdist
    combines: bool  # this process combines the stores at the end (not an xdist worker)
    store: Path | None = None  # where the combined experiments go (None: the project's)
    folder: Path = field(default_factory=Path.cwd)  # where pytest was started
    gate: bool = False  # --agenteval-gate: the combined experiments must pass their gate
    reports: list[RunReport] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)  # the combined experiments' gate's
    error: str | None = None  # why they could not be combined

    @classmethod
    def of(cls, config: pytest.Config) -> SessionRuns:
        gate = bool(config.getoption("agenteval_gate"))
        given = config.getoption("agenteval_store")
        folder = config.invocation_params.dir
        store = folder / given if given else None
        workerinput: dict[str, Any] | None = getattr(config, "workerinput", None)
        if workerinput is not None:
            uid = str(workerinput["testrunuid"])
            parts = workerinput.get(PARTS_KEY) or _parts_folder(uid)
            worker = str(workerinput["workerid"])
            return cls(uid, Path(parts), worker, False, store, folder, gate)
        uid = uuid.uuid4().hex
        return cls(uid, _parts_folder(uid), "main", True, store, folder, gate)

    def adopt(self, uid: str) -> None:
        """The controller of xdist's workers: the run's id is theirs."""
        if self.uid != uid:
            self.uid, self.parts = uid, _parts_folder(uid)

    def part_store(self) -> Path:
        """This process's store, its folder made on first use."""
        self.parts.mkdir(parents=True, exist_ok=True)
        from agenteval_cli.core.filenames import path_in

        return path_in(self.parts, self.worker, ".db")

    def stores(self) -> list[Path]:
        return sorted(self.parts.glob("*.db")) if self.parts.is_dir() else []


def _parts_folder(uid: str) -> Path:
    from agenteval_cli.core.filenames import path_in

    return path_in(Path(tempfile.gettempdir()), f"agenteval-pytest-{uid}")
