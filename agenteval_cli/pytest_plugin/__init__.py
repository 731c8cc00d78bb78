"""agenteval in pytest: the ``agenteval`` fixture runs a spec, or one example, and checks
the report; the session's runs end in one experiment per target of each spec.

Registered through the ``pytest11`` entry point, so it loads in every pytest session of a
project that installs agenteval: it must cost nothing there. Loading it imports only pytest
and the standard library; the hooks do nothing until a test asks for the fixture (the
``agenteval`` marker only names a spec for it). Each process stores its runs in a store of
its own (pytest-xdist's workers too, named by their worker id, in a folder named by the
test run's id); the process that ends the session combines them into the project's store
(``--agenteval-store``) with :func:`agenteval_cli.api.combine`.
"""

from __future__ import annotations

import shutil
from typing import TYPE_CHECKING, Any

import pytest

from agenteval_cli.pytest_plugin.session import PARTS_KEY, SessionRuns

if TYPE_CHECKING:
    from agenteval_cli.pytest_plugin.evals import AgentEval

MARKER = "agenteval"

RUNS = pytest.StashKey[SessionRuns]()


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("agenteval", "agenteval: evaluate agent graphs in tests")
    group.addoption(
        "--agenteval-store",
        metavar="PATH",
        default=None,
        help="where the session's experiments are stored (default: the project's "
        ".agenteval/agenteval.db, found as the agenteval command finds it)",
    )
    group.addoption(
        "--agenteval-gate",
        action="store_true",
        help="fail the session unless the session's experiments pass their spec's gate "
        "(thresholds, baseline, max_error_rate), judged over every test's results",
    )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        f"{MARKER}(spec): the spec the agenteval fixture runs in this test, module or class",
    )
    config.stash[RUNS] = SessionRuns.of(config)


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node: Any) -> None:
    """pytest-xdist's controller, for each worker: one folder for the whole run's stores."""
    runs = node.config.stash[RUNS]
    runs.adopt(str(node.workerinput["testrunuid"]))
    node.workerinput[PARTS_KEY] = str(runs.parts)


@pytest.fixture
def agenteval(request: pytest.FixtureRequest) -> AgentEval:
    """Runs a spec (``agenteval.run()``) or one example (``agenteval.example(inputs,
    reference)``) through the library API, stored as part of the session's experiments;
    ``agenteval.check(report)`` fails the test with what failed."""
    from agenteval_cli.pytest_plugin.evals import AgentEval

    runs = request.config.stash[RUNS]
    marker = request.node.get_closest_marker(MARKER)
    spec = None
    if marker is not None:
        spec = marker.kwargs.get("spec", marker.args[0] if marker.args else None)
    return AgentEval(store=runs.part_store(), folder=runs.parts, spec=spec)


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session: pytest.Session) -> None:
    """The process that ends the session combines every process's runs into one
    experiment per target of each spec; a failure to do so fails the session."""
    runs = session.config.stash.get(RUNS, None)
    if runs is None or not runs.combines:
        return
    stores = runs.stores()
    if stores:  # a test ran something
        from agenteval_cli.pytest_plugin.combining import combine_session

        combine_session(runs, stores)
        failed = runs.error is not None or runs.problems
        if failed and session.exitstatus == pytest.ExitCode.OK:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED
    if runs.error is None:  # combined, or nothing to: no folder is left behind
        shutil.rmtree(runs.parts, ignore_errors=True)


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    runs = config.stash.get(RUNS, None)
    if runs is None or not (runs.reports or runs.error):
        return
    from agenteval_cli.pytest_plugin.combining import summary_lines

    terminalreporter.section("agenteval")
    for line, markup in summary_lines(runs):
        terminalreporter.write_line(line, **markup)
