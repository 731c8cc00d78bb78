"""handoff_context and blame on a deepagents ``task`` handoff and on a served graph's
transfer (``remote:``, a real ``langgraph dev``), against what the receiving agent's model
logged it was given (:mod:`handoff_graphs`).

The receiving agent looks the account manager up only when it is given the order number,
and asks for it again otherwise; the row's answer must name the manager, so a handoff that
lost the number fails the request, and blame names that handoff's step.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from langgraph_server import langgraph_dev, require_langgraph_cli

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

GRAPHS = Path(__file__).resolve().parent / "handoff_graphs.py"
QUESTION = "Who manages order ORD-1182?"
EXPECTS = {"expected_agents": ["account"], "must_mention": ["Priya Shah"]}
EVALUATORS = "evaluators: [routing_accuracy, resolution_coverage, handoff_context, handoff_clean]"


def _run(invoke: Any, folder: Path, rows: list[dict[str, Any]], targets: str) -> dict[str, Any]:
    """``{target: {row id: result}}`` from ``--json``."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "data.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    spec = folder / "spec.yaml"
    spec.write_text(f"dataset: data.jsonl\ntargets:\n{targets}{EVALUATORS}\nmax_error_rate: 1\n")
    out = folder / "out.json"
    result = invoke("run", spec, "--store", folder / "a.db", "--json", out)
    assert result.exit_code == 0, result.output
    return {
        e["target"]: {r["example_id"]: r for r in e["results"]}
        for e in json.loads(out.read_text())["experiments"]
    }


def test_a_deepagents_task_carries_the_request_or_loses_it_to_a_rewrite(invoke, tmp_path):
    """The orchestrator's ``task`` gives the sub-agent its description alone: the user's
    question (carried), or a rewrite without the order number (lost). The return of the
    sub-agent's answer is a handoff too, checked only without per-agent facts."""
    rows = [
        {"id": "question", "inputs": {"question": QUESTION}, "outputs": EXPECTS},
        {
            "id": "rewrite",
            "inputs": {"question": QUESTION, "rewrite": True},
            "outputs": {**EXPECTS, "handoff_facts": {"account": ["ORD-1182"]}},
        },
    ]
    found = _run(invoke, tmp_path, rows, f"  deep: {GRAPHS}:deep\n")["deep"]
    carried, rewritten = found["question"], found["rewrite"]
    # the sub-agent's own log: the first call it made was given the order number, or not
    assert any("ORD-1182" in t for t in carried["outputs"]["given"][0])
    assert not any("ORD-1182" in t for t in rewritten["outputs"]["given"][0])
    handoffs = [(h["source"], h["target"], h["tool"]) for h in carried["trace"]["handoffs"]]
    assert handoffs == [("orchestrator", "account", "task"), ("account", "orchestrator", "task")]
    assert carried["scores"]["handoff_context"] == 1.0
    assert carried["comments"]["handoff_context"] == "2/2 handoffs carried the request"
    assert carried["blame"] is None
    lost = "orchestrator → account (task) lost 'ORD-1182'"
    assert rewritten["scores"]["handoff_context"] == 0.0
    assert rewritten["comments"]["handoff_context"] == f"0/1 handoffs carried the request; {lost}"
    assert (
        rewritten["outputs"]["final_response"] == "Account says: Which order number is this about?"
    )
    assert rewritten["blame"] == {
        "agent": "orchestrator",
        "step": 0,
        "kind": "lost_context",
        "why": lost,
    }


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    require_langgraph_cli()
    graphs = {
        "kept": "handoff_graphs:served_swarm",
        "trimmed": "handoff_graphs:served_swarm_trimmed",
    }
    with langgraph_dev(graphs, tmp_path_factory.mktemp("langgraph")) as url:
        yield url


@pytest.mark.slow
def test_a_served_swarms_transfer_carries_or_loses_the_request_as_in_process(
    served: str, invoke: Any, tmp_path: Path
) -> None:
    """The swarm served by ``langgraph dev``: desk's transfer to account, account's model
    given the whole conversation, or (trimmed) only the transfer's tool message; the same
    graphs in-process score and blame the same."""
    rows = [{"id": "manager", "inputs": {"question": QUESTION}, "outputs": EXPECTS}]
    targets = (
        f'  kept: {{remote: {{url: "{served}", graph: kept}}}}\n'
        f'  trimmed: {{remote: {{url: "{served}", graph: trimmed}}}}\n'
        "  local_kept: handoff_graphs:served_swarm\n"
        "  local_trimmed: handoff_graphs:served_swarm_trimmed\n"
    )
    found = {t: rows_["manager"] for t, rows_ in _run(invoke, tmp_path, rows, targets).items()}
    lost = "desk → account (transfer_to_account) lost the human message"
    for here, there in (("kept", "local_kept"), ("trimmed", "local_trimmed")):
        served_, local = found[here], found[there]
        handoffs = [(h["source"], h["target"]) for h in served_["trace"]["handoffs"]]
        assert handoffs == [("desk", "account")]
        for key in ("handoff_context", "handoff_clean", "resolution_coverage"):
            assert served_["scores"][key] == local["scores"][key], key
            assert served_["comments"][key] == local["comments"][key], key
        assert served_["blame"] == local["blame"]
    assert found["kept"]["scores"]["handoff_context"] == 1.0 and found["kept"]["blame"] is None
    trimmed = found["trimmed"]
    assert trimmed["scores"]["handoff_context"] == 0.0
    assert trimmed["outputs"]["final_response"] == "Which order number is this about?"
    assert trimmed["blame"] == {"agent": "desk", "step": 0, "kind": "lost_context", "why": lost}
