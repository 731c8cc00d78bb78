"""The bench's one table, and its JSON record under ``bench/results/``."""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

RESULTS = Path(__file__).resolve().parent / "results"


@dataclass
class Row:
    """One measure of one case: the three runners side by side, and the goal if any.

    ``agenteval`` may be a string where there is no figure (``"not available yet"``).
    ``ratio`` overrides the agenteval/limit ratio when the case defines its own (W5).
    """

    case: str
    measure: str
    unit: str
    limit: float | None
    agenteval: float | str | None
    langsmith: float | None
    goal: str = ""
    met: bool | None = None
    ratio: float | None = None
    notes: list[str] = field(default_factory=list)

    @property
    def vs_limit(self) -> float | None:
        if self.ratio is not None:
            return self.ratio
        return _ratio(self.agenteval, self.limit)

    @property
    def vs_langsmith(self) -> float | None:
        return _ratio(self.agenteval, self.langsmith)

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "vs_limit": self.vs_limit, "vs_langsmith": self.vs_langsmith}


def _ratio(value: Any, reference: Any) -> float | None:
    if isinstance(value, int | float) and isinstance(reference, int | float) and reference:
        return value / reference
    return None


def _figure(value: float | str | None, unit: str) -> str:
    if value is None:
        return "—"
    if isinstance(value, str):
        return value
    digits = 0 if abs(value) >= 100 else 1 if abs(value) >= 10 else 2 if abs(value) >= 1 else 3
    return f"{value:,.{digits}f} {unit}".strip()


def _times(value: float | None) -> str:
    return "—" if value is None else f"{value:.2f}x"


def print_table(rows: list[Row]) -> None:
    from rich.console import Console
    from rich.table import Table

    load = os.getloadavg()[0]
    title = f"agenteval bench · {os.cpu_count()} CPUs · load average {load:.1f} at the end"
    table = Table(title=title, title_justify="left")
    table.add_column("case")
    table.add_column("measure")
    for name in ("limit", "agenteval", "langsmith"):
        table.add_column(name, justify="right")
    table.add_column("agenteval / limit", justify="right")
    table.add_column("agenteval / langsmith", justify="right")
    table.add_column("goal")
    table.add_column("met", justify="center")
    for row in rows:
        table.add_row(
            row.case,
            row.measure,
            _figure(row.limit, row.unit),
            _figure(row.agenteval, row.unit),
            _figure(row.langsmith, row.unit),
            _times(row.vs_limit),
            _times(row.vs_langsmith),
            row.goal,
            {True: "yes", False: "NO", None: ""}[row.met],
        )
    console = Console(width=max(160, Console().width))
    console.print(table)
    for row in rows:
        for note in row.notes:
            console.print(f"  {row.case} {row.measure}: {note}", highlight=False)


def write_json(rows: list[Row], runs: dict[str, Any], cases: list[str]) -> Path:
    """``bench/results/<UTC timestamp>.json``: the table, every raw run, the machine."""
    RESULTS.mkdir(exist_ok=True)
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    path = RESULTS / f"{stamp}.json"
    record = {
        "started_at": stamp,
        "cases": cases,
        "machine": {
            "cpus": os.cpu_count(),
            "python": sys.version.split()[0],
            "platform": platform.platform(),
            "load_avg_1m": os.getloadavg()[0],
        },
        "git_commit": _git_commit(),
        "rows": [row.to_dict() for row in rows],
        "runs": runs,
    }
    path.write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
    prune(RESULTS)
    return path


def prune(folder: Path) -> list[Path]:
    """Delete the result files none of whose workloads is the latest run of it: the folder
    keeps the latest file for each workload. Returns the files deleted."""
    files = sorted(folder.glob("*.json"))  # timestamps: oldest first
    covered: set[str] = set()
    kept: set[Path] = set()
    for file in reversed(files):
        try:
            cases = set(json.loads(file.read_text(encoding="utf-8")).get("cases") or ())
        except (OSError, ValueError):
            kept.add(file)  # not a result file this bench wrote: left alone
            continue
        if cases - covered:
            kept.add(file)
            covered |= cases
    deleted = [file for file in files if file not in kept]
    for file in deleted:
        file.unlink()
    return deleted


def _git_commit() -> str | None:
    try:
        out = subprocess.run(
            ["git", "rev-parse", "HEAD"], capture_output=True, text=True, timeout=5, check=False
        )
    except OSError:
        return None
    return out.stdout.strip() or None
