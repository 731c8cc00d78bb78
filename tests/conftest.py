"""Fixtures the test modules share.

The helper modules beside the tests (``projects``, ``fakes``, ``forms``, ``report_fixtures``,
``openai_server``, ``chromium``, ``langsmith_stub``) are imported by their own names:
``pythonpath = ["tests"]`` in pyproject.toml puts this folder on the import path. A test
that needs a project of its own (a target module, a dataset and a spec) writes it with
``projects.project``; a graph form's run is ``forms.harness.write_form`` and ``run_spec``.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import ordering
import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.hookimpl(trylast=True)  # after -m and -k have deselected
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The long and the slow tests first in every test worker's share (``ordering``)."""
    items[:] = ordering.ordered(items, int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1")))


def _build_the_cli_once() -> None:
    """Typer's test runner builds click's command tree from the app on every ``invoke``
    (a few hundredths of a second for agenteval's commands, over thousands of invocations);
    the process that runs ``agenteval`` builds it once, and so does a test process now.
    Only agenteval's own app is kept: a test's app of its own is built as before."""
    import typer.testing

    build = typer.testing._get_command
    built: list[Any] = []

    def get_command(app: Any) -> Any:
        common = sys.modules.get("agenteval_cli.cli.common")
        if common is None or app is not common.app:
            return build(app)
        if not built:
            built.append(build(app))
        return built[0]

    typer.testing._get_command = get_command


_build_the_cli_once()


def _invoke(
    *args: object, env: dict[str, str] | None = None, catch_exceptions: bool = False
) -> Any:
    from typer.testing import CliRunner

    from agenteval_cli.cli import app

    result = CliRunner().invoke(
        app, [str(a) for a in args], env=env, catch_exceptions=catch_exceptions
    )
    result.text = " ".join(result.output.split())  # type: ignore[attr-defined]  # unwrapped
    # with no whitespace at all: a path longer than the terminal is folded mid-word, which
    # ``text`` reads as two words (a worker's tmp_path is longer than a serial run's)
    result.squeezed = "".join(result.output.split())  # type: ignore[attr-defined]
    return result


@pytest.fixture(scope="session")
def invoke() -> Callable[..., Any]:
    """``agenteval ARGS...`` in this process, through Typer's runner; arguments may be
    paths or numbers. The result's ``text`` is its output with Rich's line wrapping undone,
    ``squeezed`` the output without whitespace (for paths, which Rich folds mid-word).
    An exception the CLI does not handle is raised, not kept in the result."""
    return _invoke


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Any]:
    """An open, empty store in a fresh folder."""
    from agenteval_cli.store.db import Store

    with Store(tmp_path / "s" / "a.db") as opened:
        yield opened


@pytest.fixture(scope="session")
def demo_spec() -> Path:
    """The demo's spec, ``configs/routing.yaml``."""
    return ROOT / "configs" / "routing.yaml"


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """The LangSmith stand-in, started, with the environment pointing the client at it."""
    from langsmith_stub import serving

    with serving(monkeypatch) as stand_in:
        yield stand_in
