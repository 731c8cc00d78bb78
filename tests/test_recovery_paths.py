"""handoff_context, handoff_clean, the recovery metrics, fault_cost and blame through every
way a run reaches a store or leaves it: the CLI, shards and their merge, the pytest plugin,
Ray, conversations, the OpenTelemetry export and its import, and the LangSmith upload.

The graph is :mod:`handoff_graphs`' swarm: desk hands over to account, whose model looks
the account manager up only when it is given the order number, and asks for it again
otherwise. Every figure below is derived by hand from that script and its token counts
(desk 10+1 a call, account 20+2), and checked against account's own log of what it got.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from agenteval_cli.store.db import Store

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")
pytest_plugins = ["pytester"]

ROOT = Path(__file__).resolve().parent.parent
GRAPHS = Path(__file__).resolve().parent / "handoff_graphs.py"
QUESTION = "Who manages order ORD-1182?"
EXPECTS = {"expected_agents": ["account"], "must_mention": ["Priya Shah"]}
ROWS = [
    {"id": "kept", "inputs": {"question": QUESTION}, "outputs": EXPECTS},
    {
        "id": "trimmed",
        "inputs": {"question": QUESTION, "trim": True},
        "outputs": {**EXPECTS, "handoff_facts": {"account": ["ORD-1182"]}},
    },
    *(
        {"id": row, "inputs": {"question": QUESTION, "announce": to}, "outputs": EXPECTS}
        for row, to in (("announced", "billing"), ("said", "account"))
    ),
]
SPEC = f"""\
dataset: data.jsonl
targets:
  swarm: {GRAPHS}:swarm
  swarm_account_down: {{target: {GRAPHS}:swarm, faults: [{{agent: account, fail: model_error}}]}}
evaluators:
  - routing_accuracy
  - resolution_coverage
  - handoff_context
  - {{name: handoff_clean, agents: [billing]}}
  - recovery
  - token_cost
  - fault_cost
max_error_rate: 1
pricing:
  desk-model: {{input: 1.0, output: 2.0}}
  account-model: {{input: 1.0, output: 2.0}}
"""
KEYS = ("handoff_context", "handoff_clean", "recovered", "graceful")
LOST = "desk → account (transfer_to_account) lost 'ORD-1182'"
SAID = 'said but didn\'t: "Let me transfer you to billing." with no handoff to billing'
DOWN = ("account", 1, "fault")
# (target, row) -> (handoff_context, handoff_clean, recovered, graceful), blame
# kept: account is given the question (and its order number), looks up, answers.
# trimmed: account's hook keeps only the handoff's tool message: no order number, so it asks
#   again; the answer misses Priya Shah, and the handoff that lost it is the first wrong
#   step: desk's (step 0).
# announced: as kept, but desk says it transfers to billing and hands over to account.
# said: as kept, desk saying it transfers to account, as it does.
# swarm_account_down: account's model fails on every call: each request raises (not
#   recovered, not graceful); blamed on account's fault (step 1), but where the handoff
#   before it lost the context (step 0).
FIGURES = {
    ("swarm", "kept"): ((1.0, True, None, None), None),
    ("swarm", "trimmed"): ((0.0, True, None, None), ("desk", 0, "lost_context")),
    ("swarm", "announced"): ((1.0, False, None, None), None),
    ("swarm", "said"): ((1.0, True, None, None), None),
    ("swarm_account_down", "kept"): ((1.0, True, False, False), DOWN),
    ("swarm_account_down", "trimmed"): ((0.0, True, False, False), ("desk", 0, "lost_context")),
    ("swarm_account_down", "announced"): ((1.0, False, False, False), DOWN),
    ("swarm_account_down", "said"): ((1.0, True, False, False), DOWN),
}
# fault-free: kept, announced and said spend desk 11 + account 22 + 22 = 55 tokens ($60 per
# 1M at $1 in, $2 out), trimmed 11 + 22 = 33 ($36); faulted: desk's 11 alone ($12), each.
# Differences -44, -22, -44, -44 tokens (mean -38.5), -48, -24, -48, -48 dollars per 1M
# (mean -42).
FAULT_COST = {"fault_cost_tokens": -38.5, "fault_cost_usd": -42e-6}


def write_spec(folder: Path, rows: list[dict[str, Any]] = ROWS) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "data.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    spec = folder / "spec.yaml"
    spec.write_text(SPEC)
    return spec


def figures(document: dict[str, Any]) -> dict[tuple[str, str], Any]:
    """(target, row) -> the four scores and the blame, from a --json document."""
    found = {}
    for experiment in document["experiments"]:
        for result in experiment["results"]:
            blame = result["blame"]
            where = None if blame is None else (blame["agent"], blame["step"], blame["kind"])
            scores = tuple(result["scores"][k] for k in KEYS)
            found[(experiment["target"], result["example_id"])] = (scores, where)
    return found


def fault_cost(document: dict[str, Any], target: str = "swarm_account_down") -> dict:
    [experiment] = [e for e in document["experiments"] if e["target"] == target]
    return {k: experiment["dataset_results"][k]["score"] for k in FAULT_COST}


def run_json(invoke: Any, spec: Path, *args: Any) -> dict[str, Any]:
    out = spec.parent / "out.json"
    result = invoke("run", spec, "--store", spec.parent / "a.db", "--json", out, *args)
    assert result.exit_code == 0, result.output
    return json.loads(out.read_text())


def test_the_cli_run_scores_and_blames_as_derived_by_hand(invoke, tmp_path):
    document = run_json(invoke, write_spec(tmp_path))
    assert figures(document) == FIGURES
    assert fault_cost(document) == pytest.approx(FAULT_COST)
    results = {r["example_id"]: r for r in document["experiments"][0]["results"]}
    # account's own log: its first call got the order number, or (trimmed) did not
    assert any("ORD-1182" in text for text in results["kept"]["outputs"]["given"][0])
    assert not any("ORD-1182" in text for text in results["trimmed"]["outputs"]["given"][0])
    comments = results["trimmed"]["comments"]
    assert comments["handoff_context"] == f"0/1 handoffs carried the request; {LOST}"
    assert results["trimmed"]["blame"]["why"] == LOST
    assert results["announced"]["comments"]["handoff_clean"] == SAID


def test_shards_merge_into_the_same_figures_and_pair_the_twins(invoke, tmp_path):
    spec = write_spec(tmp_path / "suite")
    for shard in (1, 2):
        ran = invoke("run", spec, "--shard", f"{shard}/2", "--store", tmp_path / f"{shard}.db")
        assert ran.exit_code == 0, ran.output
    out = tmp_path / "merged.json"
    merged = invoke(
        "merge", tmp_path / "1.db", tmp_path / "2.db", "--store", tmp_path / "m.db", "--json", out
    )
    assert merged.exit_code == 0, merged.output
    document = json.loads(out.read_text())
    assert figures(document) == FIGURES
    # the merge pairs the faulted target with its fault-free twin as the run did
    assert fault_cost(document) == pytest.approx(FAULT_COST)


def test_a_rescore_scores_the_dataset_level_evaluators_and_pairs_the_twins(invoke, tmp_path):
    spec = write_spec(tmp_path)
    run_json(invoke, spec)
    # the faulted target alone: paired with its twin's stored experiment
    alone = tmp_path / "alone.json"
    rescored = invoke(
        "rescore", spec, "swarm_account_down", "--store", tmp_path / "a.db", "--json", alone
    )
    assert rescored.exit_code == 0, rescored.output
    assert fault_cost(json.loads(alone.read_text())) == pytest.approx(FAULT_COST)
    # both: paired with each other's new experiment
    both = tmp_path / "both.json"
    rescored = invoke(
        "rescore", spec, "swarm", "swarm_account_down", "--store", tmp_path / "a.db", "--json", both
    )
    assert rescored.exit_code == 0, rescored.output
    document = json.loads(both.read_text())
    assert figures(document) == FIGURES
    assert fault_cost(document) == pytest.approx(FAULT_COST)


PLUGIN_TESTS = """
import json, pytest

pytestmark = pytest.mark.agenteval({spec!r})
ROWS = [json.loads(line) for line in open({data!r})]

@pytest.mark.parametrize("row", ROWS, ids=[r["id"] for r in ROWS])
def test_row(agenteval, row):
    report = agenteval.example(row["inputs"], row["outputs"], id=row["id"])
    down = report.experiment("swarm_account_down").metrics
    assert (down["recovered"], down["graceful"]) == (0.0, 0.0)
"""


def test_the_pytest_plugin_combines_the_sessions_examples_with_their_figures(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
):
    import agenteval_cli as agenteval
    from agenteval_cli.store.summaries import summary_scores

    spec = write_spec(tmp_path / "suite")
    temp = pytester.path / "tmp"
    temp.mkdir()
    monkeypatch.setenv("TMPDIR", str(temp))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(ROOT), str(ROOT / "tests")]))
    data = str(spec.parent / "data.jsonl")
    pytester.makepyfile(test_rows=PLUGIN_TESTS.format(spec=str(spec), data=data))
    out = pytester.path / "session.db"
    result = pytester.runpytest_subprocess(
        "-p", "agenteval_cli.pytest_plugin", "-p", "no:cacheprovider",
        "--agenteval-store", str(out), timeout=300,
    )  # fmt: skip
    result.assert_outcomes(passed=len(ROWS))
    with Store(out, readonly=True) as store:
        experiments = {e.target: e.id for e in store.experiments()}
        summaries = {
            s.key: s.score for s in summary_scores(store, experiments["swarm_account_down"])
        }
    found = {}
    for side in agenteval.load_experiments(list(experiments.values()), store=out):
        for run in side.runs:
            blame = run.blame and (run.blame["agent"], run.blame["step"], run.blame["kind"])
            found[(side.target, run.example_id)] = (tuple(run.scores[k] for k in KEYS), blame)
    assert found == FIGURES
    # each test ran one example: the session's combined experiments pair the twins
    assert {k: summaries[k] for k in FAULT_COST} == pytest.approx(FAULT_COST)


@pytest.mark.slow
@pytest.mark.long
def test_a_run_on_ray_scores_and_blames_as_in_process(invoke, tmp_path):
    pytest.importorskip("ray")
    document = run_json(invoke, write_spec(tmp_path), "--executor", "ray")
    assert figures(document) == FIGURES
    assert fault_cost(document) == pytest.approx(FAULT_COST)


def test_a_conversation_scores_each_turn_and_across_its_turns(invoke, tmp_path):
    """The swarm on a checkpointer: turn 1 is handed to account, turn 2 stays with it (the
    swarm's active agent). Trimmed, account asks for the order again in turn 1 and answers
    in turn 2, where the user repeats it."""
    row = {
        "id": "two-turns",
        "inputs": {"turns": ["I have a question about order ORD-1182.", "Who manages it?"]},
        "outputs": {
            **EXPECTS,
            "turns": [{"must_mention": ["Priya Shah"]}, {"must_mention": ["Priya Shah"]}],
        },
    }
    folder = tmp_path / "talk"
    folder.mkdir()
    (folder / "data.jsonl").write_text(json.dumps(row) + "\n")
    spec = folder / "spec.yaml"
    spec.write_text(
        "dataset: data.jsonl\n"
        "targets:\n"
        f"  swarm: {GRAPHS}:conversational_swarm\n"
        f"  trimmed: {GRAPHS}:conversational_swarm_trimmed\n"
        f"  trimmed_down: {{target: {GRAPHS}:conversational_swarm_trimmed,"
        " faults: [{agent: account, fail: model_error, calls: [1]}]}\n"
        "evaluators: [routing_accuracy, resolution_coverage, handoff_context, handoff_clean,"
        " recovery]\n"
        "max_error_rate: 1\n"
    )
    document = run_json(invoke, spec)
    results = {e["target"]: e["results"][0] for e in document["experiments"]}

    def turns(target: str) -> list[tuple[Any, ...]]:
        return [tuple(t["scores"][k] for k in KEYS) for t in results[target]["turns"]]

    # per turn: the handoff in turn 1; turn 2 made none (account was active already)
    assert turns("swarm") == [(1.0, True, None, None), (None, True, None, None)]
    assert turns("trimmed") == [(0.0, True, None, None), (None, True, None, None)]
    assert turns("trimmed_down") == [(0.0, True, False, False)]  # turn 1 raised: the end
    # across turns: the mean of the turns scored
    assert {t: results[t]["scores"]["handoff_context"] for t in results} == {
        "swarm": 1.0,
        "trimmed": 0.0,
        "trimmed_down": 0.0,
    }
    assert results["trimmed_down"]["scores"]["graceful"] == 0.0
    # the conversation is blamed as one request: turn 1's handoff, step 0 of its path
    assert results["swarm"]["blame"] is None
    lost = "desk → account (transfer_to_account) lost the human message"
    for target in ("trimmed", "trimmed_down"):
        assert results[target]["blame"] == {
            "agent": "desk",
            "step": 0,
            "kind": "lost_context",
            "why": lost,
        }


def _evaluation_events(path: Path) -> dict[tuple[str, str], dict[str, dict[str, Any]]]:
    """(workflow, example) -> evaluation name -> the event's attributes, from OTLP JSON."""
    found: dict[tuple[str, str], dict[str, dict[str, Any]]] = {}
    for line in path.read_text().splitlines():
        for resource in json.loads(line)["resourceSpans"]:
            for scope in resource["scopeSpans"]:
                for span in scope["spans"]:
                    attributes = {a["key"]: _value(a["value"]) for a in span["attributes"]}
                    if "gen_ai.workflow.name" not in attributes:
                        continue
                    key = (attributes["gen_ai.workflow.name"], attributes["agenteval.example_id"])
                    events = found.setdefault(key, {})
                    for event in span.get("events", []):
                        said = {a["key"]: _value(a["value"]) for a in event["attributes"]}
                        events[said["gen_ai.evaluation.name"]] = said
    return found


def _value(value: dict[str, Any]) -> Any:
    (kind, given), *_ = value.items()
    return int(given) if kind == "intValue" else given


def test_the_otel_export_carries_each_figure_and_its_import_scores_the_same(invoke, tmp_path):
    spec = write_spec(tmp_path)
    file = tmp_path / "traces.jsonl"
    ran = run_json(invoke, spec, "--otel", file)
    events = _evaluation_events(file)
    for (target, row), ((context, clean, recovered, graceful), blamed) in FIGURES.items():
        said = events[(target, row)]
        assert said["handoff_context"]["gen_ai.evaluation.score.value"] == context
        assert said["handoff_clean"]["gen_ai.evaluation.score.label"] == (
            "pass" if clean else "fail"
        )
        for key, value in (("recovered", recovered), ("graceful", graceful)):
            if value is None:
                assert "gen_ai.evaluation.score.value" not in said[key]
            else:
                assert said[key]["gen_ai.evaluation.score.value"] == float(value)
        if blamed is None:
            assert "blame" not in said
        else:
            blame = said["blame"]
            shown = (blame["agenteval.blame.agent"], blame["agenteval.blame.step"])
            assert (*shown, blame["gen_ai.evaluation.score.label"]) == blamed
    assert events[("swarm", "trimmed")]["blame"]["gen_ai.evaluation.explanation"] == LOST

    # read back: the fault-free twin first, so the faulted import pairs with it
    imported = {}
    for target in ("swarm", "swarm_account_down"):
        out = tmp_path / f"{target}.json"
        result = invoke(
            "import", spec, "--otlp", file, "--target", target,
            "--store", tmp_path / "imported.db", "--json", out,
        )  # fmt: skip
        assert result.exit_code == 0, result.output
        [imported[target]] = json.loads(out.read_text())["experiments"]
    document = {"experiments": list(imported.values())}
    assert figures(document) == figures(ran) == FIGURES
    assert fault_cost(document) == pytest.approx(FAULT_COST)
    for experiment in ran["experiments"]:  # the comments too: what was lost, said, failed
        again = {r["example_id"]: r for r in imported[experiment["target"]]["results"]}
        for result in experiment["results"]:
            comments = again[result["example_id"]]["comments"]
            assert {k: comments[k] for k in KEYS} == {k: result["comments"][k] for k in KEYS}


def test_the_langsmith_upload_sends_each_figure_and_the_blame_as_feedback(server, invoke, tmp_path):
    spec = write_spec(tmp_path)
    document = run_json(invoke, spec, "--upload")
    for experiment in document["experiments"]:
        session = next(s for s in server.state.sessions.values() if s["name"] == experiment["name"])
        roots = [r for r in server.runs_of(experiment["name"]) if not r.get("parent_run_id")]
        by_row = {r["extra"]["metadata"]["example_id"]: r for r in roots}
        for row, ((context, clean, recovered, graceful), blamed) in (
            (row, figures_) for (target, row), figures_ in FIGURES.items()
            if target == experiment["target"]
        ):  # fmt: skip
            run_id = by_row[row]["id"]
            sent = {
                f["key"]: f for f in server.state.feedback.values() if f.get("run_id") == run_id
            }
            assert [sent[k].get("score") for k in KEYS] == [context, clean, recovered, graceful]
            if blamed is None:
                assert "blame" not in sent
            else:
                blame = sent["blame"]
                extra = blame["extra"]
                assert (extra["agent"], extra["step"], blame["value"]) == blamed
                assert blame["comment"].startswith(f"{blamed[0]} at step {blamed[1]}: ")
        # the dataset-level scores: the experiment's own feedback, on no run
        own = {  # a score the client rounds to 4 decimals is whole in the extra
            f["key"]: (f.get("extra") or {}).get("exact_score", f.get("score"))
            for f in server.state.feedback.values()
            if not f.get("run_id") and f.get("session_id") == session["id"]
        }
        if experiment["target"] == "swarm_account_down":
            assert {k: own[k] for k in FAULT_COST} == pytest.approx(FAULT_COST)
        else:
            assert own["fault_cost_tokens"] is None
    # read back from LangSmith: the blame is no score of the imported results
    name = next(e["name"] for e in document["experiments"] if e["target"] == "swarm")
    out = tmp_path / "imported.json"
    again = invoke("import", spec, name, "--store", tmp_path / "i.db", "--json", out)
    assert again.exit_code == 0, again.output
    [imported] = json.loads(out.read_text())["experiments"]
    results = {r["example_id"]: r for r in imported["results"]}
    assert all("blame" not in r["scores"] for r in results.values())
    assert results["trimmed"]["scores"]["handoff_context"] == 0.0
