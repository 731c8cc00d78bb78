"""``agenteval view``: the latest run's HTML comparison, without naming it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
MINIMAL = ROOT / "tests" / "data" / "specs" / "minimal.yaml"


@pytest.fixture
def two_runs(tmp_path, monkeypatch, invoke):
    """A store holding a run of the minimal spec, then a later run of an init scaffold."""
    for name in ("DISPLAY", "WAYLAND_DISPLAY", "BROWSER"):
        monkeypatch.delenv(name, raising=False)
    store = tmp_path / ".agenteval" / "agenteval.db"
    assert invoke("run", MINIMAL, "--store", store).exit_code == 0
    assert invoke("init", tmp_path / "evals").exit_code == 0
    assert invoke("run", tmp_path / "evals" / "agenteval.yaml", "--store", store).exit_code == 0
    return tmp_path, store


def _latest_names(store: Path) -> dict[str, str]:
    from agenteval_cli.store.db import Store

    with Store(store, readonly=True) as opened:
        return {e.prefix: e.name for e in opened.experiments()}


def test_view_writes_the_latest_run_beside_the_store(two_runs, invoke):
    _, store = two_runs
    names = _latest_names(store)
    result = invoke("view", "--store", store)
    assert result.exit_code == 0, result.output
    report = store.parent / "reports" / f"{names['my-agents']}.html"
    assert result.output.splitlines()[0] == f"wrote {report}"
    assert f"open it in a browser: {report.resolve().as_uri()}" in result.output
    html = report.read_text()
    assert names["my-agents"] in html and names["minimal"] not in html


def test_view_spec_shows_that_specs_latest_run(two_runs, invoke):
    tmp, store = two_runs
    names = _latest_names(store)
    out = tmp / "minimal.html"
    result = invoke("view", MINIMAL, "--store", store, "-o", out, "--no-open")
    assert result.exit_code == 0, result.output
    html = out.read_text()
    assert names["minimal"] in html and names["my-agents"] not in html


def test_view_opens_the_browser_the_user_chose(two_runs):
    tmp, store = two_runs
    seen = tmp / "opened.txt"
    recorder = tmp / "browser.py"
    recorder.write_text(f"import sys\nopen({str(seen)!r}, 'w').write(sys.argv[1])\n")
    env = {**os.environ, "BROWSER": f"{sys.executable} {recorder} %s"}
    done = subprocess.run(
        [sys.executable, "-m", "agenteval_cli.cli", "view", "--store", str(store)],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    report = store.parent / "reports" / f"{_latest_names(store)['my-agents']}.html"
    assert seen.read_text() == report.resolve().as_uri()


def test_view_without_a_run_says_so(tmp_path, invoke):
    store = tmp_path / "s.db"
    from agenteval_cli.store.db import Store

    Store(store).close()  # an empty store
    result = invoke("view", "--store", store)
    assert result.exit_code == 2
    assert f"no run in {store}" in result.output
    missing = invoke("view", MINIMAL, "--store", store)
    assert missing.exit_code == 2 and f"no run of {MINIMAL} in {store}" in missing.output
