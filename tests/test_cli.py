"""The CLI end to end: through Typer's runner, and once as a real subprocess."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
EXTERNAL = ROOT / "tests" / "data" / "external" / "travel.yaml"


@pytest.fixture(scope="module")
def travel(tmp_path_factory, invoke):
    """One run of someone else's supervisor, swarm and plain-function targets."""
    tmp = tmp_path_factory.mktemp("travel")
    result = invoke("run", str(EXTERNAL), "--store", str(tmp / "db"), "--json", str(tmp / "r.json"))
    assert result.exit_code == 0, result.output
    data = json.loads((tmp / "r.json").read_text())
    return tmp, result.output, {e["target"]: e for e in data["experiments"]}


# Hand counts for tests/data/external/travel_graphs.py (see its docstring): a triage call is
# 100 + 10 tokens on big-model ($1 / $2 per 1M), a desk call 50 + 5 on small-model ($0.5 / $1).
SUPERVISOR = {
    "flight": (["triage", "flights_desk", "triage"], 330, 2, False, 1.0),
    "hotel": (["triage", "hotel_desk", "triage"], 330, 2, False, 0.5),
    "both": (["triage", "flights_desk", "triage", "hotel_desk", "triage"], 550, 4, False, 1.0),
}
SWARM = {
    "flight": (["flights_desk"], 110, 0, False, 1.0),
    "hotel": (["flights_desk", "hotel_desk"], 165, 1, False, 0.5),
    "both": (["flights_desk", "hotel_desk", "flights_desk"], 275, 2, True, 1.0),
}


@pytest.mark.parametrize(
    ("target", "expected"), [("supervisor", SUPERVISOR), ("plain", SUPERVISOR), ("swarm", SWARM)]
)
def test_someone_elses_graphs_match_a_hand_count(travel, target, expected):
    _, _, experiments = travel
    results = {r["example_id"]: r for r in experiments[target]["results"]}
    for example_id, (path, tokens, chain, pong, coverage) in expected.items():
        result = results[example_id]
        assert result["error"] is None
        assert result["trace"]["agent_path"] == path
        assert result["scores"]["total_tokens"] == tokens
        assert result["scores"]["handoff_chain_length"] == chain
        assert result["scores"]["ping_pong"] is pong
        assert result["scores"]["resolution_coverage"] == coverage
        assert result["scores"]["routing_accuracy"] == 1.0


def test_metrics_are_means_of_the_hand_counts(travel):
    _, _, experiments = travel
    supervisor = experiments["supervisor"]["metrics"]
    assert supervisor["total_tokens"] == pytest.approx(1210 / 3)
    assert supervisor["input_tokens"] == pytest.approx(1100 / 3)
    assert supervisor["handoff_chain_length"] == pytest.approx(8 / 3)
    assert supervisor["ping_pong"] == 0.0
    assert supervisor["resolution_coverage"] == pytest.approx(2.5 / 3)
    # (300 + 300 + 480) µ$ / 3: e.g. "both" = (3 x 100 x $1 + 3 x 10 x $2 + 4 x 50 x $0.5
    # + 4 x 5 x $1) / 1M = $0.00048
    assert supervisor["cost_usd"] == pytest.approx(0.00036)
    assert supervisor["error_rate"] == 0.0
    swarm = experiments["swarm"]["metrics"]
    assert swarm["total_tokens"] == pytest.approx(550 / 3)
    assert swarm["handoff_chain_length"] == pytest.approx(1.0)
    assert swarm["ping_pong"] == pytest.approx(1 / 3)
    assert swarm["cost_usd"] == pytest.approx(0.0001)
    assert experiments["plain"]["metrics"] == {
        **supervisor,
        "latency_p50_s": experiments["plain"]["metrics"]["latency_p50_s"],
        "latency_p95_s": experiments["plain"]["metrics"]["latency_p95_s"],
    }


def test_json_shape_and_table(travel):
    _, output, experiments = travel
    supervisor = experiments["supervisor"]
    assert supervisor["name"].startswith("travel-supervisor-")
    assert set(supervisor["metrics"]) >= {
        "routing_accuracy", "resolution_coverage", "handoff_chain_length", "ping_pong",
        "input_tokens", "output_tokens", "total_tokens", "cost_usd", "error_rate",
        "latency_p50_s", "latency_p95_s",
    }  # fmt: skip
    result = supervisor["results"][2]
    assert set(result) >= {"example_id", "repetition", "outputs", "scores", "trace", "error"}
    assert (result["attempts"], result["cached"]) == (1, False)
    assert result["trace"]["handoffs"][0] == {
        "source": "triage",
        "target": "flights_desk",
        "tool": "transfer_to_flights_desk",
        "via": "tool",
        "parallel": False,
        "after": [],
    }
    assert result["trace"]["tokens"] == {
        "big-model": {"input": 300, "output": 30, "total": 330},
        "small-model": {"input": 200, "output": 20, "total": 220},
    }
    assert [t["name"] for t in result["trace"]["tool_calls"]][:2] == [
        "transfer_to_flights_desk",
        "book_flight",
    ]
    assert result["trace"]["tool_calls"][1]["args"] == {"city": "Lisbon"}
    for label in ("routing accuracy", "resolution coverage", "tokens / request", "ping-pong"):
        assert label in output


def test_compare_and_experiments_read_the_store(travel, invoke):
    tmp, _, experiments = travel
    db = str(tmp / "db")
    result = invoke("compare", "swarm", experiments["supervisor"]["name"], "--store", db)
    assert result.exit_code == 0, result.output
    assert "183" in result.output and "403" in result.output  # tokens per request
    listing = invoke("experiments", "--store", db)
    assert experiments["swarm"]["name"] in listing.output
    missing = invoke("compare", "swram", "--store", db)
    assert missing.exit_code == 2
    assert "no target or experiment named 'swram'" in missing.output
    assert "did you mean 'swarm'?" in missing.output


def test_an_ambiguous_name_prefix_lists_its_matches(travel, invoke):
    tmp, _, experiments = travel
    names = sorted(e["name"] for e in experiments.values())
    prefix = names[0].split("-", 1)[0] + "-"  # the spec's experiment prefix
    assert len(names) == 3 and prefix  # one run: its experiments share "<prefix>-"
    result = invoke("report", prefix, "-o", str(tmp / "x.html"), "--store", str(tmp / "db"))
    assert result.exit_code == 2
    assert f"{prefix!r} is ambiguous: it begins 3 experiment names: " in result.output
    assert all(name in result.output for name in names)


def test_target_filter_and_limit(tmp_path, invoke):
    result = invoke(
        "run", str(EXTERNAL), "-t", "swarm", "--limit", "2",
        "--store", str(tmp_path / "db"), "--json", str(tmp_path / "r.json"),
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    [only] = json.loads((tmp_path / "r.json").read_text())["experiments"]
    assert only["target"] == "swarm"
    assert [r["example_id"] for r in only["results"]] == ["flight", "hotel"]
    unknown = invoke("run", str(EXTERNAL), "-t", "swamr", "--store", str(tmp_path / "db"))
    assert unknown.exit_code == 2
    assert "did you mean 'swarm'?" in unknown.output


def test_bad_spec_is_one_line_and_exit_2(tmp_path, invoke):
    spec = tmp_path / "bad.yaml"
    spec.write_text(
        "dataset: data.jsonl\ntargets:\n  a: agenteval_cli.demo.supervisor:graph\n"
        "evaluators: [routing_acuracy]\n"
    )
    (tmp_path / "data.jsonl").write_text('{"inputs": {"question": "hi"}}\n')
    result = invoke("run", str(spec), "--store", str(tmp_path / "db"))
    assert result.exit_code == 2
    assert result.output.strip() == (
        f"error: {spec}:4: unknown evaluator 'routing_acuracy' (did you mean 'routing_accuracy'?)"
    )


@pytest.mark.slow
def test_demo_experiment_as_a_subprocess(tmp_path, demo_spec):
    """The README's command on four examples of the demo dataset, in a fresh process."""
    out = tmp_path / "demo.json"
    env = {**os.environ, "COLUMNS": "120"}
    env.pop("AGENTEVAL_DEMO_MODEL", None)
    proc = subprocess.run(
        [sys.executable, "-m", "agenteval_cli.cli", "run", str(demo_spec),
         "--limit", "4", "--store", str(tmp_path / "db"), "--json", str(out)],
        capture_output=True, text=True, timeout=300, env=env,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert "supervisor" in proc.stdout and "swarm" in proc.stdout
    experiments = {e["target"]: e for e in json.loads(out.read_text())["experiments"]}
    supervisor = {r["example_id"]: r for r in experiments["supervisor"]["results"]}
    swarm = {r["example_id"]: r for r in experiments["swarm"]["results"]}
    multi = "multi-upgrade-and-sso"  # "upgrade to Enterprise and also fix my SSO"
    assert supervisor[multi]["trace"]["agent_path"] == [
        "supervisor", "tech_support", "supervisor", "account", "supervisor",
    ]  # fmt: skip
    assert supervisor[multi]["scores"]["routing_accuracy"] == 1.0
    assert swarm[multi]["trace"]["agent_path"] == ["account", "tech_support"]
    assert swarm[multi]["scores"]["handoff_chain_length"] == 1
    assert experiments["supervisor"]["metrics"]["routing_accuracy"] == 1.0
    assert (
        experiments["supervisor"]["metrics"]["total_tokens"]
        > experiments["swarm"]["metrics"]["total_tokens"]
    )


def test_broken_spec_as_a_subprocess_has_no_traceback(tmp_path):
    spec = tmp_path / "broken.yaml"
    spec.write_text("targets: [unclosed\n")
    proc = subprocess.run(
        [sys.executable, "-m", "agenteval_cli.cli", "run", str(spec)],
        capture_output=True, text=True, timeout=60, cwd=tmp_path,
    )  # fmt: skip
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1
    assert proc.stderr.startswith(f"error: {spec}:")


@pytest.mark.slow
def test_a_target_that_imports_its_graph_lazily_is_traced_from_the_first_call(tmp_path):
    """In a fresh process the target's module loads LangChain only inside its first call;
    tracing is ready before that call, so every call is traced, the first one too."""
    out = tmp_path / "lazy.json"
    proc = subprocess.run(
        [sys.executable, "-m", "agenteval_cli.cli", "run", str(EXTERNAL.parent / "lazy.yaml"),
         "--store", str(tmp_path / "db"), "--json", str(out)],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    [experiment] = json.loads(out.read_text())["experiments"]
    results = {r["example_id"]: r for r in experiment["results"]}
    for example_id, (path, tokens, *_) in SUPERVISOR.items():
        assert results[example_id]["error"] is None
        assert results[example_id]["trace"]["agent_path"] == path
        assert results[example_id]["scores"]["total_tokens"] == tokens


def test_a_target_that_loads_langchain_on_its_first_call_is_called_once_per_example(tmp_path):
    """Nothing of LangChain is loaded when the run starts; the target imports it inside its
    first call. That call is traced as it is, never made a second time to trace it."""
    (tmp_path / "lazy_runnable.py").write_text(
        "import sys\n"
        "from pathlib import Path\n"
        "def target(inputs):\n"
        "    loaded = 'langchain_core' in sys.modules\n"
        "    from langchain_core.language_models.fake_chat_models import GenericFakeChatModel\n"
        "    from langchain_core.messages import AIMessage\n"
        "    with (Path(__file__).parent / 'calls.txt').open('a') as calls:\n"
        "        calls.write(f\"{inputs['question']} {loaded}\\n\")\n"
        "    usage = {'input_tokens': 7, 'output_tokens': 2, 'total_tokens': 9}\n"
        "    reply = AIMessage(inputs['question'].upper(), usage_metadata=usage)\n"
        "    model = GenericFakeChatModel(messages=iter([reply]))\n"
        "    return {'final_response': model.invoke(inputs['question']).content}\n"
    )
    rows = [{"inputs": {"question": f"q{i}"}, "outputs": {}} for i in range(3)]
    (tmp_path / "rows.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (tmp_path / "spec.yaml").write_text(
        "dataset: rows.jsonl\ntargets: {lazy: lazy_runnable.py:target}\n"
        "evaluators: [token_cost]\nconcurrency: 1\n"
    )
    proc = subprocess.run(
        [sys.executable, "-m", "agenteval_cli.cli", "run", "spec.yaml", "--store", "db",
         "--json", "out.json"],
        capture_output=True, text=True, timeout=120, cwd=tmp_path,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    # LangChain was first imported by the first call itself, which was made once
    calls = (tmp_path / "calls.txt").read_text().splitlines()
    assert calls == ["q0 False", "q1 True", "q2 True"]
    [experiment] = json.loads((tmp_path / "out.json").read_text())["experiments"]
    results = sorted(experiment["results"], key=lambda r: r["outputs"]["final_response"])
    assert [r["outputs"]["final_response"] for r in results] == ["Q0", "Q1", "Q2"]
    # and traced from its first model call: every call's 9 tokens, the first one's too
    assert [r["scores"]["total_tokens"] for r in results] == [9, 9, 9]
    assert [r["trace"]["untraced"] for r in results] == [None, None, None]


def test_a_run_of_plain_function_targets_never_imports_langchain(tmp_path):
    """Start-up follows the targets: functions that never use LangChain never load it."""
    (tmp_path / "plain.py").write_text(
        "import sys\n"
        "from pathlib import Path\n"
        "async def target(inputs):\n"
        "    loaded = sorted(m for m in sys.modules if m.split('.')[0] in\n"
        "                    ('langchain_core', 'langchain', 'langgraph', 'langsmith'))\n"
        "    with (Path(__file__).parent / 'seen.txt').open('a') as seen:\n"
        "        seen.write(f'{len(loaded)}\\n')\n"
        "    return {'final_response': inputs['question']}\n"
    )
    rows = [{"inputs": {"question": f"q{i}"}, "outputs": {"must_mention": ["q"]}} for i in range(3)]
    (tmp_path / "rows.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (tmp_path / "spec.yaml").write_text(
        "dataset: rows.jsonl\ntargets: {plain: plain.py:target}\n"
        "evaluators: [resolution_coverage]\nconcurrency: 2\n"
    )
    proc = subprocess.run(
        [sys.executable, "-m", "agenteval_cli.cli", "run", "spec.yaml", "--store", "db",
         "--json", "out.json"],
        capture_output=True, text=True, timeout=120, cwd=tmp_path,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "seen.txt").read_text().split() == ["0", "0", "0"]
    [experiment] = json.loads((tmp_path / "out.json").read_text())["experiments"]
    assert experiment["metrics"]["resolution_coverage"] == 1.0


def test_experiments_lists_whole_names_when_piped_and_as_json(tmp_path, invoke):
    from agenteval_cli.store.db import Store

    long_target = "a_target_whose_name_is_far_too_long_to_fit_" * 3
    with Store(tmp_path / "s.db") as store:
        made = store.create_experiment(
            prefix="wide", target=long_target, target_path="m:f", spec={}, repetitions=2
        )
    piped = invoke("experiments", "--store", str(tmp_path / "s.db"))
    assert piped.exit_code == 0, piped.output
    assert made.name in piped.output and long_target in piped.output  # nothing cut short
    listed = invoke("experiments", "--json", "--store", str(tmp_path / "s.db"))
    (row,) = json.loads(listed.output)["experiments"]
    assert row["name"] == made.name and row["target"] == long_target
    assert (row["status"], row["results"], row["repetitions"]) == ("running", 0, 2)
