"""The calibration study (``python -m bench.calibration``): agenteval's own compare and
gate on synthetic paired data with known truth hold their level and their coverage."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from bench.calibration import END, START, gate_settings, run_gate, run_setting, settings

ROOT = Path(__file__).resolve().parent.parent

TYPE_I, COVERAGE, FALSE_ALARMS = 0.07, 0.93, 0.05


@pytest.fixture(autouse=True)
def _declared():
    import agenteval_cli.evaluators.registry  # noqa: F401  (the built-in metrics' kinds)


def _picked(name: str, n: int):
    return next(s for s in settings() if s.name == name and s.n == n)


@pytest.mark.parametrize(
    ("name", "n"),
    [
        ("pass/fail, 20% differ", 20),
        ("pass/fail, 30% differ", 20),
        ("coverage score", 10),
        ("cost", 20),
        ("pass/fail ×3, two agents", 10),
    ],
)
def test_a_few_settings_hold_their_level_and_coverage(name, n):
    """Few replicates, so the bounds allow for their noise (a standard error of about
    0.013 at 300 replicates)."""
    outcome = run_setting(_picked(name, n), 300)
    if outcome.setting.truth == 0:
        assert outcome.rejected <= TYPE_I + 0.03
    assert outcome.covered >= COVERAGE - 0.03


def test_the_gate_rarely_fails_a_run_that_changed_nothing():
    outcome = run_gate("2 targets, 8 scores named", 2, True, 32, 150)
    assert outcome.failed <= FALSE_ALARMS + 0.03


# One test per setting, so parallel workers share the study's minutes.
@pytest.mark.slow
@pytest.mark.parametrize(
    "setting", settings(), ids=lambda s: f"{s.name}, n={s.n}, true Δ {s.shown}"
)
def test_every_setting_holds_the_bar(setting):
    outcome = run_setting(setting, 1500)
    if setting.truth == 0:
        assert outcome.rejected <= TYPE_I, (setting, outcome)
    assert outcome.covered >= COVERAGE, (setting, outcome)


@pytest.mark.slow
@pytest.mark.parametrize(("name", "targets", "named", "n"), gate_settings())
@pytest.mark.long
def test_every_gate_setting_rarely_fails_a_run_that_changed_nothing(name, targets, named, n):
    assert run_gate(name, targets, named, n, 800).failed <= FALSE_ALARMS, name


def test_the_docs_table_is_the_scripts_and_holds_the_bar():
    """docs/statistics.md carries the table ``--write`` put there: every row of it within
    the bar."""
    page = (ROOT / "docs" / "statistics.md").read_text(encoding="utf-8")
    block = page.split(START, 1)[1].split(END, 1)[0]
    rows = [line for line in block.splitlines() if re.match(r"^\| [a-z0-9]", line)]
    compared = [r for r in rows if r.count("|") == 9 and not r.startswith("| setting")]
    gated = [r for r in rows if r.count("|") == 6 and not r.startswith("| the gate")]
    assert len(compared) == len(settings()) and len(gated) == len(gate_settings())
    for row in compared:
        cells = [c.strip() for c in row.strip("|").split("|")]
        type_i, coverage = cells[5], float(cells[7])
        if type_i != "–":
            assert float(type_i) <= TYPE_I, row
        assert coverage >= COVERAGE, row
    for row in gated:
        assert float(row.strip("|").split("|")[-1]) <= FALSE_ALARMS, row
