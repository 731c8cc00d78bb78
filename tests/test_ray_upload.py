"""``--upload`` after a run on Ray sends what it sends after the same run in-process: every
result's root run with the LangChain runs its call made (names, parents, inputs, outputs),
a conversation's as a trace per turn; only ids and times differ."""

from __future__ import annotations

import json
import re
import sqlite3
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent

pytest.importorskip("ray")
pytestmark = pytest.mark.slow

ROUTING = """
experiment_prefix: {prefix}
dataset: {{path: {data}/routing.jsonl, name: multi-agent-routing-evals}}
targets:
  supervisor: agenteval_cli.demo.supervisor:graph
  swarm: {{target: agenteval_cli.demo.swarm:graph, initial_state: {{resolution_notes: []}}}}
evaluators: [routing_accuracy, handoff_chain_length]
repetitions: 2
"""
# a UUID, or a digest of messages that hold UUIDs (the models' message and tool call ids)
IDS = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}|[0-9a-f]{12,}")
PER_EXPERIMENT = ("agenteval_experiment",)  # metadata naming the experiment itself


def routing_spec(folder: Path, prefix: str) -> Path:
    path = folder / f"{prefix}.yaml"
    path.write_text(ROUTING.format(prefix=prefix, data=ROOT / "datasets"))
    return path


def conversation_spec(folder: Path, prefix: str) -> Path:
    text = (ROOT / "configs" / "conversations.yaml").read_text()
    text = text.replace("../datasets/", f"{ROOT / 'datasets'}/")
    text = re.sub(r"(?m)^experiment_prefix:.*$", f"experiment_prefix: {prefix}", text)
    path = folder / f"{prefix}.yaml"
    path.write_text(text)
    return path


def functions_spec(folder: Path, prefix: str) -> Path:
    """A function keeping its own history (its runs reached through LangChain's configure
    hook) and an agent resumed from interrupt(), each a conversation."""
    from forms.harness import write_form
    from test_conversation_heldout import DESK_ROWS, OWN_HISTORY_ROWS

    return write_form(
        folder / prefix,
        targets={"own": "forms.conversing:own_history", "desk": "forms.conversing:desk"},
        rows=[OWN_HISTORY_ROWS[0], DESK_ROWS[0]],
        name=prefix,
        max_error_rate=1,  # the function cannot resume: the desk's row is its error
    )


def scrubbed(value: Any) -> str:
    """``value`` as JSON with every id (the runs', the messages', the threads', the tool
    calls') replaced, so two runs of the same calls read the same."""
    return IDS.sub("<id>", json.dumps(value, sort_keys=True, default=str))


def sent_runs(server: Any, experiment: str) -> Counter[str]:
    """Every run the stand-in received for ``experiment``, as what would tell two runs of
    the same calls apart: the result (example, repetition, turn) whose trace it is in, the
    names and types of its parents from that trace's top down, its own inputs, outputs,
    error, tags and metadata. Ids, times and the experiment's name are left out."""
    runs = server.runs_of(experiment)
    by_id = {run["id"]: run for run in runs}

    def chain(run: dict[str, Any]) -> list[dict[str, Any]]:
        path = [run]
        while path[-1].get("parent_run_id"):
            path.append(by_id[path[-1]["parent_run_id"]])  # every parent was sent too
        return path[::-1]

    seen: Counter[str] = Counter()
    for run in runs:
        path = chain(run)
        top = path[0]["extra"]["metadata"]
        metadata = {
            k: v for k, v in run["extra"].get("metadata", {}).items() if k not in PER_EXPERIMENT
        }
        key = {
            "result": [top["example_id"], top["repetition"], top.get("turn")],
            "path": [[r["name"], r["run_type"]] for r in path],
            "inputs": run.get("inputs"),
            "outputs": run.get("outputs"),
            "error": run.get("error"),
            "tags": sorted(run.get("tags") or []),
            "metadata": metadata,
        }
        seen[scrubbed(key)] += 1
    return seen


def experiment_names(store: Path) -> dict[str, str]:
    with sqlite3.connect(store) as db:
        return dict(db.execute("SELECT target, name FROM experiments"))


@pytest.mark.parametrize(
    ("make_spec", "extra"),
    [
        (routing_spec, ["--limit", "6"]),
        (conversation_spec, ["--limit", "2", "--target", "swarm"]),
        (functions_spec, []),
    ],
    ids=["graphs", "conversations", "functions"],
)
@pytest.mark.long
def test_an_upload_after_a_run_on_ray_sends_the_runs_an_in_process_one_sends(
    server, tmp_path, invoke, make_spec, extra
):
    sent: dict[str, dict[str, Counter[str]]] = {}
    for where, executor in (("local", "local"), ("ray", "ray")):
        spec = make_spec(tmp_path, where)
        store = tmp_path / f"{where}.db"
        ran = invoke("run", spec, "--upload", "--executor", executor, "--store", store, *extra)
        assert ran.exit_code == 0, ran.output
        names = experiment_names(store)
        sent[where] = {target: sent_runs(server, name) for target, name in names.items()}
    assert sorted(sent["ray"]) == sorted(sent["local"])
    for target, local in sent["local"].items():
        # the graph's own runs came along: more runs than results, model calls among them
        assert sum(local.values()) > 2 * len({json.loads(k)["result"][0] for k in local})
        assert any('"llm"' in key for key in local)
        assert sent["ray"][target] == local, target
