"""The pytest plugin, through inner pytest sessions (pytester) run as pytest would be: in a
process of their own, with and without pytest-xdist's workers.

The inner sessions load the plugin with ``-p agenteval_cli.pytest_plugin``, as the
``pytest11`` entry point does once the package is installed (checked last, against the
installed distribution's metadata)."""

from __future__ import annotations

import json
import os
import re
from importlib.metadata import PackageNotFoundError, distribution
from pathlib import Path
from typing import Any

import pytest

import agenteval_cli as agenteval
from agenteval_cli.store.db import Store

pytest_plugins = ["pytester"]

ROOT = Path(__file__).resolve().parent.parent
SPEC = ROOT / "configs" / "routing.yaml"
ROWS = [json.loads(line) for line in (ROOT / "datasets" / "routing.jsonl").read_text().splitlines()]
PLUGIN = ("-p", "agenteval_cli.pytest_plugin")


@pytest.fixture
def inner(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    """An inner session's folder, its temporary files (the runs' stores) kept in it."""
    temp = pytester.path / "tmp"
    temp.mkdir()
    monkeypatch.setenv("TMPDIR", str(temp))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(ROOT), str(ROOT / "tests")]))
    return pytester


def _run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    return pytester.runpytest_subprocess(*PLUGIN, "-p", "no:cacheprovider", *args, timeout=300)


def _experiments(path: Path) -> list[Any]:
    with Store(path, readonly=True) as store:
        return store.experiments()


# -- inert unless used ---------------------------------------------------------------------


def test_a_session_that_does_not_ask_is_left_as_it_was(inner: pytest.Pytester):
    inner.makepyfile(
        test_plain="""
        import sys

        def test_nothing_of_agenteval_is_loaded():
            heavy = [m for m in ("agenteval_cli.api", "langchain_core", "langgraph")
                     if m in sys.modules]
            assert heavy == []
            assert "agenteval_cli.pytest_plugin" in sys.modules  # loaded, and idle
        """
    )
    result = _run(inner)
    result.assert_outcomes(passed=1)
    assert result.ret == 0
    assert " agenteval " not in result.stdout.str()  # no section of its own in the summary
    assert not (inner.path / ".agenteval").exists()
    assert list((inner.path / "tmp").iterdir()) == []  # no folder for the runs either


# -- one experiment per session, with and without xdist ------------------------------------

EXAMPLE_TESTS = """
import json, pytest

pytestmark = pytest.mark.agenteval(spec={spec!r})
ROWS = [json.loads(line) for line in open({data!r})][:6]

@pytest.mark.parametrize("row", ROWS, ids=[r["id"] for r in ROWS])
def test_routes(agenteval, row):
    report = agenteval.example(row["inputs"], row["outputs"], id=row["id"])
    assert [e.target for e in report.experiments] == ["supervisor", "swarm"]
    assert all(e.results == 1 for e in report.experiments)
"""


@pytest.mark.slow
@pytest.mark.parametrize("workers", [None, 2], ids=["one-process", "xdist-2"])
def test_the_sessions_examples_end_in_one_experiment_per_target(
    inner: pytest.Pytester, tmp_path: Path, workers: int | None
):
    data = str(ROOT / "datasets" / "routing.jsonl")
    inner.makepyfile(test_examples=EXAMPLE_TESTS.format(spec=str(SPEC), data=data))
    out = inner.path / "session.db"
    args = ["--agenteval-store", str(out)] + (["-n", str(workers)] if workers else [])
    result = _run(inner, *args)
    result.assert_outcomes(passed=6)
    stores = workers or 1
    result.stdout.fnmatch_lines(
        [
            "*= agenteval =*",
            f"routing · 6 examples × 1 repetition(s) · combined from 6 run(s) in {stores} store(s)",
            "  routing-supervisor-*: 6 result(s), finished",
            "  routing-swarm-*: 6 result(s), finished",
        ]
    )
    experiments = _experiments(out)
    assert sorted(e.target for e in experiments) == ["supervisor", "swarm"]
    assert len({e.run_id for e in experiments}) == 1  # one run: the session
    assert {e.example_count for e in experiments} == {6}
    assert {e.dataset_path for e in experiments} == {None}  # one-row files, now removed
    assert list((inner.path / "tmp").iterdir()) == []  # the runs' stores, combined, removed

    # the same examples run at once, with no plugin: the same scores, example by example
    direct = agenteval.run(SPEC, limit=6, store=tmp_path / "direct.db")
    combined = agenteval.load_experiments([e.id for e in experiments], store=out)
    expected = agenteval.load_experiments(direct)
    by_target = sorted(combined, key=lambda e: e.target)
    for got, want in zip(by_target, sorted(expected, key=lambda e: e.target), strict=True):
        assert len(got.runs) == 6
        scores = {r.example_id: r.scores for r in got.runs}
        assert scores == {r.example_id: r.scores for r in want.runs}
        assert {r.example_id for r in got.runs} == {row["id"] for row in ROWS[:6]}


SUBAGENT_TESTS = """
import pytest
from forms import datasets

ROWS = datasets.support()

@pytest.mark.agenteval("forms/spec.yaml")
@pytest.mark.parametrize("row", ROWS, ids=[r["id"] for r in ROWS])
def test_row(agenteval, row):
    agenteval.example(row["inputs"], row["outputs"], id=row["id"])
"""


@pytest.mark.slow
def test_a_create_agent_supervisor_of_subagents_across_workers(
    inner: pytest.Pytester, tmp_path: Path
):
    """LangChain's subagents pattern (a create_agent supervisor whose tools run
    create_agent subagents), one test per row on two workers: the session's experiment
    scores every row as one run of the whole dataset does."""
    from forms import datasets
    from forms.harness import write_form

    spec = write_form(
        inner.path / "forms",
        targets={"subagents": "forms.patterns:subagents"},
        rows=datasets.support(),
    )
    inner.makepyfile(test_subagents=SUBAGENT_TESTS)
    out = inner.path / "session.db"
    result = _run(inner, "-n", "2", "--agenteval-store", str(out))
    result.assert_outcomes(passed=5)
    result.stdout.fnmatch_lines(
        ["forms · 5 examples × 1 repetition(s) · combined from 5 run(s) in 2 store(s)"]
    )
    (experiment,) = _experiments(out)
    (combined,) = agenteval.load_experiments([experiment.id], store=out)
    (direct,) = agenteval.load_experiments(agenteval.run(spec, store=tmp_path / "direct.db"))
    assert {r.example_id: r.scores for r in combined.runs} == {
        r.example_id: r.scores for r in direct.runs
    }
    # the rows' own expectations met: both agents reached on the two-part requests
    assert {r.example_id: r.scores["routing_accuracy"] for r in combined.runs} == {
        "billing": 1.0,
        "tech": 1.0,
        "both": 1.0,
        "both-reversed": 1.0,
        "hours": 1.0,
    }


# -- readable failures, runs of a spec, examples run again ---------------------------------

CHECK_TESTS = """
import pytest

SPEC = {spec!r}

def test_a_spec_within_its_gate(agenteval):
    report = agenteval.run(SPEC, limit=2, targets=["supervisor"])
    assert report.experiments[0].metrics["routing_accuracy"] == 1.0
    agenteval.check(report, {{"routing_accuracy": ">= 0.9"}})

@pytest.mark.agenteval(SPEC)
def test_a_misrouted_example(agenteval):
    report = agenteval.example(
        {{"question": "Can you tell me who my account manager is?"}},
        {{"expected_agents": ["billing"]}},
        id="account-manager",
        targets=["supervisor"],
    )
    agenteval.check(report, {{"routing_accuracy": ">= 0.9", "handoff_chain_length": "<= 0"}})

def test_no_spec(agenteval):
    agenteval.run()

@pytest.mark.anyio
@pytest.mark.agenteval(SPEC)
async def test_in_an_event_loop(agenteval):
    report = await agenteval.aexample(
        {{"question": "My SSO integration is returning error code SAML-401."}},
        {{"expected_agents": ["tech_support"]}},
        targets=["swarm"],
    )
    agenteval.check(report, {{"routing_accuracy": "== 1"}})
    report = await agenteval.arun(limit=1, targets=["swarm"])
    assert report.experiment("swarm").results == 1
"""


@pytest.mark.slow
def test_check_lists_what_failed_and_a_rerun_example_is_kept_once(inner: pytest.Pytester):
    inner.makepyfile(test_check=CHECK_TESTS.format(spec=str(SPEC)))
    out = inner.path / "session.db"
    result = _run(inner, "--agenteval-store", str(out))
    result.assert_outcomes(passed=2, failed=2)
    text = result.stdout.str()
    # the misrouted example: the account question expected at billing goes to account
    result.stdout.fnmatch_lines(
        [
            "E *AssertionError: agenteval: 2 problem(s) in routing-supervisor-*",
            "E *supervisor: routing accuracy = 0.0%, threshold >= 0.9 (off by −90.0 pp)",
            "E *supervisor: handoff chain length = 2, threshold <= 0 (off by +2)",
        ]
    )
    assert "ValueError: no spec: pass one" in text
    # the first two rows are billing-payment-method and tech-sso-saml-error; the failing
    # test ran the account-manager row again, so the supervisor's holds 3 examples, each
    # once; the async test ran the swarm on the SSO question and on the first row
    result.stdout.fnmatch_lines(
        [
            "routing · 4 examples × 1 repetition(s) · combined from 4 run(s) in 1 store(s)",
            "  routing-supervisor-*: 3 result(s), finished",
            "  routing-swarm-*: 2 result(s), finished",
        ]
    )
    experiment = next(e for e in _experiments(out) if e.target == "supervisor")
    (data,) = agenteval.load_experiments([experiment.id], store=out)
    by_id = {r.example_id: r.scores["routing_accuracy"] for r in data.runs}
    assert by_id == {
        "billing-payment-method": 1.0,
        "tech-sso-saml-error": 1.0,
        "account-manager": 0.0,
    }


RERUN_TESTS = """
import pytest

@pytest.mark.agenteval({spec!r})
@pytest.mark.parametrize("expected", [["billing"], ["account"]])
def test_same_example_twice(agenteval, expected):
    agenteval.example(
        {{"question": "Can you tell me who my account manager is?"}},
        {{"expected_agents": expected}},
        id="account-manager",
        targets=["supervisor"],
    )
"""


@pytest.mark.slow
def test_an_example_run_again_keeps_its_latest_result(inner: pytest.Pytester):
    inner.makepyfile(test_rerun=RERUN_TESTS.format(spec=str(SPEC)))
    out = inner.path / "session.db"
    result = _run(inner, "--agenteval-store", str(out))
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(
        [
            "routing · 1 examples × 1 repetition(s) · combined from 2 run(s) in 1 store(s)",
            "  routing-supervisor-*: 1 result(s), finished",
            "*1 result(s) of examples run again in the session replaced their earlier runs",
        ]
    )
    (experiment,) = _experiments(out)
    (data,) = agenteval.load_experiments([experiment.id], store=out)
    # the second test's reference ("account") is the one kept: the graph routes there
    assert [(r.example_id, r.scores["routing_accuracy"]) for r in data.runs] == [
        ("account-manager", 1.0)
    ]


GATED_SPEC = """
experiment_prefix: gated
dataset: {data}
targets:
  supervisor: agenteval_cli.demo.supervisor:graph
evaluators: [routing_accuracy]
thresholds: {{routing_accuracy: ">= 0.9"}}
"""

GATED_TESTS = """
import pytest

pytestmark = pytest.mark.agenteval("gated.yaml")
QUESTIONS = [
    ("I need to change my payment method to a credit card.", "billing"),
    ("My SSO integration is returning error code SAML-401.", "tech_support"),
    ("Can you tell me who my account manager is?", "billing"),  # the graph asks account
]

@pytest.mark.parametrize(("question", "expected"), QUESTIONS)
def test_stored(agenteval, question, expected):
    report = agenteval.example({{"question": question}}, {{"expected_agents": [expected]}})
    assert report.experiments[0].results == 1
"""


@pytest.mark.slow
def test_the_session_gate_judges_every_workers_results_together(inner: pytest.Pytester):
    inner.makefile(".yaml", gated=GATED_SPEC.format(data=ROOT / "datasets" / "routing.jsonl"))
    inner.makepyfile(test_gated=GATED_TESTS.format())
    result = _run(inner, "-n", "2", "--agenteval-gate", "--agenteval-store", "session.db")
    result.assert_outcomes(passed=3)
    assert result.ret == 1  # every test passed; the session's experiment did not
    # two of three examples routed as expected: 2/3 = 66.7%, 23.3 points under 90%
    result.stdout.fnmatch_lines(
        [
            "gated · 3 examples × 1 repetition(s) · combined from 3 run(s) in 2 store(s)",
            "gate failed: 1 problem(s)",
            "  supervisor: routing accuracy = 66.7%, threshold >= 0.9 (off by −23.3 pp)",
        ]
    )
    assert (inner.path / "session.db").is_file()


def test_a_test_that_runs_nothing_leaves_nothing(inner: pytest.Pytester):
    inner.makepyfile(
        test_idle="""
        def test_asks_and_runs_nothing(agenteval):
            assert agenteval.store.parent.is_dir()
        """
    )
    result = _run(inner, "--agenteval-gate")
    result.assert_outcomes(passed=1)
    assert result.ret == 0
    assert " agenteval " not in result.stdout.str()
    assert not (inner.path / ".agenteval").exists()
    assert list((inner.path / "tmp").iterdir()) == []


def test_a_session_whose_runs_cannot_be_combined_fails(inner: pytest.Pytester):
    inner.makepyfile(
        test_broken="""
        def test_writes_a_broken_store(agenteval):
            agenteval.store.write_text("not a database")
        """
    )
    result = _run(inner, "--agenteval-store", str(inner.path / "session.db"))
    result.assert_outcomes(passed=1)
    assert result.ret == 1
    result.stdout.fnmatch_lines(
        ["*= agenteval =*", "not stored: *main.db*(the runs are kept in *)"]
    )


# -- the docs' example --------------------------------------------------------------------

DOC = ROOT / "docs" / "pytest.md"
EXAMPLE = re.compile(r"<!-- example: (?P<path>\S+) -->\n```python\n(?P<code>.*?)```", re.S)
OUTPUT = re.compile(r"<!-- output: pytest (?P<args>[^>]*?) -->\n```\n(?P<block>.*?)```", re.S)
SECTION = re.compile(r"^=+ agenteval =+$.*?(?=^=+ )", re.M | re.S)
IDS = re.compile(r"-[0-9a-f]{8}:")


@pytest.mark.slow
def test_the_docs_example_prints_what_the_docs_show(inner: pytest.Pytester):
    """The test file docs/pytest.md shows, run as it says, prints the section it shows
    (experiment ids aside); ``AGENTEVAL_WRITE_DOCS=1`` writes the section instead."""
    text = DOC.read_text(encoding="utf-8")
    example, shown = EXAMPLE.search(text), OUTPUT.search(text)
    assert example is not None and shown is not None
    for name in ("configs/routing.yaml", "datasets/routing.jsonl"):
        (inner.path / name).parent.mkdir(exist_ok=True)
        (inner.path / name).write_bytes((ROOT / name).read_bytes())
    (inner.path / "tests").mkdir()
    (inner.path / example["path"]).write_text(example["code"], encoding="utf-8")
    result = _run(inner, *shown["args"].split())
    result.assert_outcomes(passed=4)
    printed = SECTION.search(result.stdout.str())
    assert printed is not None
    if os.environ.get("AGENTEVAL_WRITE_DOCS") == "1":
        start, end = shown.span("block")
        DOC.write_text(text[:start] + printed.group() + text[end:], encoding="utf-8")
        return
    assert IDS.sub("-…:", printed.group()) == IDS.sub("-…:", shown["block"])
    stored = _experiments(inner.path / ".agenteval" / "agenteval.db")
    supervisor, swarm = sorted(stored, key=lambda e: e.target)
    # the supervisor's runs all read the spec's dataset; the swarm's were single examples
    assert (supervisor.target, swarm.target) == ("supervisor", "swarm")
    assert supervisor.dataset_path == str(inner.path / "datasets" / "routing.jsonl")
    assert swarm.dataset_path is None


# -- the entry point -----------------------------------------------------------------------


def test_the_installed_distribution_declares_the_pytest11_entry_point():
    try:
        found = distribution("agenteval-cli")
    except PackageNotFoundError:
        found = None
    points = [] if found is None else [e for e in found.entry_points if e.group == "pytest11"]
    if not points and not os.environ.get("CI"):
        pytest.skip(
            "agenteval-cli was installed before it declared its pytest plugin: reinstall it "
            "(pip install -e .) to check the entry point"
        )
    assert [(e.name, e.value) for e in points] == [
        ("agenteval_cli.pytest_plugin", "agenteval_cli.pytest_plugin")
    ]


# -- agenteval.combine, from Python --------------------------------------------------------

ANSWER_FROM_FILE = (
    "from pathlib import Path\n"
    "def answer(inputs):\n"
    "    return {'final_response': (Path(__file__).parent / 'answer.txt').read_text()}\n"
)


def test_combine_keeps_the_latest_run_of_an_example_whichever_store_holds_it(tmp_path: Path):
    from projects import project, rows

    spec = project(
        tmp_path / "p",
        ANSWER_FROM_FILE,
        data=rows(3, outputs={"must_mention": ["yes"]}),
        evaluators="[resolution_coverage]",
    )
    answer = tmp_path / "p" / "answer.txt"
    answer.write_text("no")
    agenteval.run(spec, store=tmp_path / "first.db", limit=2)  # e0, e1 answered "no"
    answer.write_text("yes")
    agenteval.run(spec, store=tmp_path / "second.db")  # e0, e1, e2 answered "yes"
    # given in either order, the later run's results are the ones kept
    (report,) = agenteval.combine(
        [tmp_path / "second.db", tmp_path / "first.db"], store=tmp_path / "out.db"
    )
    (experiment,) = report.experiments
    assert (experiment.results, experiment.status, report.status) == (3, "finished", "finished")
    assert experiment.metrics["resolution_coverage"] == 1.0  # 0.0 for the first run's two
    assert report.notes == [
        "2 result(s) of examples run again in the session replaced their earlier runs"
    ]
    assert report.title == (
        "spec · 3 examples × 1 repetition(s) · combined from 2 run(s) in 2 store(s)"
    )
    (record,) = _experiments(tmp_path / "out.db")
    assert record.dataset_path == str(tmp_path / "p" / "data.jsonl")  # both read the file
    assert record.example_count == 3


def test_combine_names_a_store_that_is_not_there(tmp_path: Path):
    from agenteval_cli.core.errors import UserError

    with pytest.raises(UserError, match=r"no experiment store at .*missing\.db"):
        agenteval.combine([tmp_path / "missing.db"], store=tmp_path / "out.db")
