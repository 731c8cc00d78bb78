"""Graphs served by LangGraph's Agent Server as targets (``remote:``): ``langgraph dev``
serves the demo's supervisor and swarm and a langgraph-supervisor team and a
langgraph-swarm pair of ``create_agent`` agents (tests/served_graphs.py); each is run
through the CLI beside the very same graph in-process, on the same dataset, and every
score, agent path, handoff, tool call, token and cost must come out the same."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from langgraph_server import langgraph_dev, require_langgraph_cli

ROOT = Path(__file__).resolve().parent.parent
GRAPHS = {
    "supervisor": "agenteval_cli.demo.supervisor:graph",
    "swarm": "agenteval_cli.demo.swarm:graph",
    "conversational_supervisor": "served_graphs:conversational_supervisor",
    "conversational_swarm": "served_graphs:conversational_swarm",
    "team": "served_graphs:supervisor",
    "pair": "served_graphs:swarm",
    "broken": "served_graphs:broken",
    "refunder": "served_graphs:refunder",
    "forgiving": "served_graphs:forgiving",
}
DEMO_PRICES = """\
pricing:
  scripted-large: {input: 2.50, output: 10.00}
  scripted-small: {input: 0.15, output: 0.60}
"""
EVALUATORS = "evaluators: [routing_accuracy, resolution_coverage, handoff_chain_length, token_cost]"
# Figures of time, and ids the server or the process makes up: everything else must agree.
_VARYING = frozenset({"latency_s", "id", "tool_call_id", "started_at", "ended_at"})


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    require_langgraph_cli()
    with langgraph_dev(GRAPHS, tmp_path_factory.mktemp("langgraph")) as url:
        yield url


def _spec(folder: Path, dataset: Path, targets: str, extra: str = "") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    spec = folder / "spec.yaml"
    spec.write_text(
        f"dataset: {dataset}\ntargets:\n{targets}{EVALUATORS}\n{extra}", encoding="utf-8"
    )
    return spec


def _run(invoke: Any, spec: Path, *args: Any) -> tuple[Any, dict[str, Any]]:
    out = spec.parent / "report.json"
    result = invoke("run", spec, "--store", spec.parent / "db", "--json", out, *args)
    return result, json.loads(out.read_text())


# A row naming an agent the target lacks: an in-process graph's names are read before the
# run, a served one's after it, so their comments word it apart (tests/test_names_run.py).
_NAME_NOTE = re.compile(r"; (?:'[^']*' is no agent|no agent) of target '[^']*'.*$")


def _comparable(value: Any) -> Any:
    if isinstance(value, dict):
        return {
            k: _comparable(v) for k, v in value.items() if k not in _VARYING and "latency" not in k
        }
    if isinstance(value, list):
        return [_comparable(v) for v in value]
    if isinstance(value, str):
        return _NAME_NOTE.sub("", value)
    return value


def _experiments(report: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {e["target"]: e for e in report["experiments"]}


def _assert_same(remote: dict[str, Any], local: dict[str, Any]) -> None:
    """Every metric and every result's scores, answer and trace, time and ids aside."""
    assert _comparable(remote["metrics"]) == _comparable(local["metrics"])
    assert _comparable(remote["agents"]) == _comparable(local["agents"])
    assert remote["routing_confusion"] == local["routing_confusion"]
    mine = {r["example_id"]: r for r in remote["results"]}
    theirs = {r["example_id"]: r for r in local["results"]}
    assert mine.keys() == theirs.keys()
    for example, result in mine.items():
        assert result["status"] == "ok", (example, result["error"])
        mine_, theirs_ = _comparable(result), _comparable(theirs[example])
        assert mine_ == theirs_, (example, _first_difference(mine_, theirs_))


def _first_difference(a: Any, b: Any, at: str = "") -> str:
    """Where two JSON values first differ, for a failure one can read."""
    if isinstance(a, dict) and isinstance(b, dict):
        for key in sorted(set(a) | set(b)):
            if a.get(key) != b.get(key):
                return _first_difference(a.get(key), b.get(key), f"{at}.{key}")
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        for index, (x, y) in enumerate(zip(a, b, strict=True)):
            if x != y:
                return _first_difference(x, y, f"{at}[{index}]")
    return f"{at}: served {a!r} != in-process {b!r}"


@pytest.mark.slow
@pytest.mark.long
def test_the_demo_teams_served_score_as_they_do_in_process(
    served: str, invoke: Any, tmp_path: Path
) -> None:
    targets = f"""\
  supervisor:
    remote: {{url: "{served}", graph: supervisor}}
  swarm:
    remote: {{url: "{served}", graph: swarm}}
    initial_state: {{resolution_notes: []}}
  local_supervisor: agenteval_cli.demo.supervisor:graph
  local_swarm:
    target: agenteval_cli.demo.swarm:graph
    initial_state: {{resolution_notes: []}}
"""
    spec = _spec(tmp_path, ROOT / "datasets" / "routing.jsonl", targets, DEMO_PRICES)
    result, report = _run(invoke, spec)
    assert result.exit_code == 0, result.output
    found = _experiments(report)
    _assert_same(found["supervisor"], found["local_supervisor"])
    _assert_same(found["swarm"], found["local_swarm"])
    # the served runs are traced, not empty: every example routed, its tools called, priced
    for name in ("supervisor", "swarm"):
        for one in found[name]["results"]:
            assert one["trace"]["agent_path"], one["example_id"]
            assert all(c["cost_usd"] is not None for c in one["trace"]["model_calls"])
    first = next(
        r for r in found["supervisor"]["results"] if r["example_id"] == "billing-payment-method"
    )
    assert first["trace"]["agent_path"] == ["supervisor", "billing", "supervisor"]


def _usage(messages: int, words: int, calls: int) -> tuple[int, int]:
    """What tests/served_graphs.py's RuleModel reports for a call."""
    return 10 * messages, words + 5 * calls


@pytest.mark.slow
def test_langgraph_supervisor_and_swarm_served_score_as_in_process(
    served: str, invoke: Any, tmp_path: Path
) -> None:
    rows = [
        {"id": "refund", "inputs": {"question": "A refund please"},
         "outputs": {"expected_agents": ["billing"]}},
        {"id": "both", "inputs": {"question": "A refund, and the outage?"},
         "outputs": {"expected_agents": ["billing", "tech"]}},
        {"id": "neither", "inputs": {"question": "Hello there"},
         "outputs": {"expected_agents": []}},
    ]  # fmt: skip
    data = tmp_path / "data.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    targets = f"""\
  team:
    remote: {{url: "{served}", graph: team}}
  pair:
    remote: {{url: "{served}", graph: pair}}
  local_team: served_graphs:supervisor
  local_pair: served_graphs:swarm
"""
    extra = (
        "pricing:\n  rule-large: {input: 3.0, output: 15.0}\n"
        "  rule-small: {input: 1.0, output: 2.0}\n"
    )
    spec = _spec(tmp_path, data, targets, extra)
    result, report = _run(invoke, spec)
    assert result.exit_code == 0, result.output
    found = _experiments(report)
    _assert_same(found["team"], found["local_team"])
    _assert_same(found["pair"], found["local_pair"])

    # worked out by hand from the rules: "refund" goes supervisor -> billing -> supervisor
    refund = next(r for r in found["team"]["results"] if r["example_id"] == "refund")
    trace = refund["trace"]
    assert trace["agent_path"] == ["supervisor", "billing", "supervisor"]
    assert [(h["source"], h["target"]) for h in trace["handoffs"]] == [
        ("supervisor", "billing"),
        ("billing", "supervisor"),
    ]
    ran = [(c["name"], c["agent"], c["kind"]) for c in trace["tool_calls"]]
    assert ("transfer_to_billing", "supervisor", "handoff") in ran
    assert ("lookup_invoice", "billing", "tool") in ran
    # supervisor: [human] -> transfer (4 words, 1 call); billing: [human, ai, tool] -> lookup
    # (0 words, 1 call), then + [ai, tool] -> "Invoice INV-7 is refunded." (4 words);
    # supervisor again, given billing's last message and the two transfer-back messages: 6
    # messages, "All done: a refund please" (5 words)
    expected = [
        ("supervisor", *_usage(1, 4, 1)),
        ("billing", *_usage(3, 0, 1)),
        ("billing", *_usage(5, 4, 0)),
        ("supervisor", *_usage(6, 5, 0)),
    ]
    calls = [(c["agent"], c["input_tokens"], c["output_tokens"]) for c in trace["model_calls"]]
    assert calls == expected
    cost = 10 * 3.0 + 9 * 15.0 + 60 * 3.0 + 5 * 15.0 + 30 * 1.0 + 5 * 2.0 + 50 * 1.0 + 4 * 2.0
    assert refund["scores"]["cost_usd"] == pytest.approx(cost / 1e6)

    both = next(r for r in found["pair"]["results"] if r["example_id"] == "refund")
    assert both["trace"]["agent_path"] == ["alice", "bob"]
    assert [(h["source"], h["target"]) for h in both["trace"]["handoffs"]] == [("alice", "bob")]


@pytest.mark.slow
@pytest.mark.long
def test_a_conversation_keeps_one_thread_of_the_server(
    served: str, invoke: Any, tmp_path: Path
) -> None:
    """Follow-ups and a cancellation confirmed by a resume turn, on one server thread each."""
    targets = f"""\
  supervisor:
    remote: {{url: "{served}", graph: conversational_supervisor}}
  local_supervisor: agenteval_cli.demo.supervisor:conversational_graph
"""
    spec = _spec(tmp_path, ROOT / "datasets" / "conversations.jsonl", targets, DEMO_PRICES)
    result, report = _run(invoke, spec)
    assert result.exit_code == 0, result.output
    found = _experiments(report)
    _assert_same(found["supervisor"], found["local_supervisor"])
    # each resume turn follows a turn the served graph stopped at interrupt() in
    before_resumes = [
        turns[i - 1]
        for r in found["supervisor"]["results"]
        for turns in [r["turns"]]
        for i, turn in enumerate(turns)
        if isinstance(turn["inputs"], dict) and "resume" in turn["inputs"]
    ]
    assert before_resumes
    assert all(t["interrupt"] for t in before_resumes), [t["status"] for t in before_resumes]


@pytest.mark.slow
def test_a_server_that_cannot_serve_the_graph_errors_each_example_in_one_line(
    served: str, invoke: Any, tmp_path: Path
) -> None:
    data = tmp_path / "data.jsonl"
    data.write_text('{"id": "a", "inputs": {"question": "refund"}}\n', encoding="utf-8")
    down = f"http://127.0.0.1:{_closed_port()}"
    targets = f"""\
  unknown:
    remote: {{url: "{served}", graph: nosuch}}
  wrong_url:
    remote: {{url: "{served}/nothing", graph: team}}
  down:
    remote: {{url: "{down}", graph: team}}
  broken:
    remote: {{url: "{served}", graph: broken}}
"""
    spec = _spec(tmp_path, data, targets, "retries: {max: 0}\n")
    result, report = _run(invoke, spec)
    assert result.exit_code == 3, result.output
    errors = {e["target"]: e["results"][0]["error"] for e in report["experiments"]}
    assert errors["unknown"].startswith(
        f"RemoteGraphError: the LangGraph server at {served} answered HTTP 422: "
    )
    assert "nosuch" in errors["unknown"] and "team" in errors["unknown"]  # what it serves
    assert errors["wrong_url"] == (
        f"RemoteGraphError: the LangGraph server at {served}/nothing answered HTTP 404 "
        "(Not Found) for /nothing/threads: check the server's URL and the graph id"
    )
    assert errors["down"].startswith(
        f"RemoteGraphError: cannot reach the LangGraph server at {down}"
    )
    assert errors["broken"] == (
        f"RemoteGraphError: the graph 'broken' at {served} failed: ValueError: the model is down"
    )
    assert all("\n" not in e for e in errors.values())
    assert "Traceback" not in result.output


@pytest.mark.slow
def test_a_tool_that_raises_on_the_server_is_traced_as_in_process(
    served: str, invoke: Any, tmp_path: Path
) -> None:
    """The run fails in a tool: the example is an error with the graph's own exception, and
    its trace (the model call made and billed, the tool call that failed) is the one the
    same graph gives in-process, though the server streams no error event for the tool."""
    data = tmp_path / "data.jsonl"
    data.write_text('{"id": "a", "inputs": {"question": "refund"}}\n', encoding="utf-8")
    targets = f"""\
  refunder:
    remote: {{url: "{served}", graph: refunder}}
  local_refunder: served_graphs:refunder
"""
    spec = _spec(tmp_path, data, targets, "pricing:\n  rule-small: {input: 1.0, output: 2.0}\n")
    result, report = _run(invoke, spec)
    assert result.exit_code == 3, result.output
    found = {e["target"]: e["results"][0] for e in report["experiments"]}
    served_result, local = found["refunder"], found["local_refunder"]
    assert served_result["status"] == local["status"] == "error"
    assert served_result["error"] == (
        f"RemoteGraphError: the graph 'refunder' at {served} failed: "
        "ValueError: the refund system rejected INV-3"
    )
    assert local["error"] == "ValueError: the refund system rejected INV-3"
    trace = _comparable(served_result["trace"])
    assert trace == _comparable(local["trace"]), _first_difference(
        trace, _comparable(local["trace"])
    )
    assert [
        (c["name"], c["status"], c["output"]) for c in served_result["trace"]["tool_calls"]
    ] == [("refund_invoice", "error", "ValueError: the refund system rejected INV-3")]
    # one model call, one message given: 10 tokens in, 5 out for its tool call
    assert served_result["scores"]["cost_usd"] == pytest.approx((10 * 1.0 + 5 * 2.0) / 1e6)


@pytest.mark.slow
def test_a_remotegraph_object_is_run_and_traced_as_a_remote_target(
    served: str, invoke: Any, tmp_path: Path
) -> None:
    """``target:`` naming LangGraph's own ``RemoteGraph`` runs it as ``remote:`` does (a
    RemoteGraph called as a Runnable would leave no trace), its headers kept secret."""
    secret = "lg-remotegraph-0123456789"
    (tmp_path / "deployed.py").write_text(
        "from langgraph.pregel.remote import RemoteGraph\n"
        f"team = RemoteGraph('team', url='{served}', headers={{'x-team-auth': '{secret}'}})\n",
        encoding="utf-8",
    )
    rows = [
        {"id": "refund", "inputs": {"question": "A refund please"}},
        {"id": "both", "inputs": {"question": "A refund, and the outage?"}},
    ]
    data = tmp_path / "data.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    targets = "  team: deployed.py:team\n  local_team: served_graphs:supervisor\n"
    spec = _spec(tmp_path, data, targets, "pricing:\n  rule-large: {input: 3.0, output: 15.0}\n")
    result, report = _run(invoke, spec)
    assert result.exit_code == 0, result.output
    found = _experiments(report)
    _assert_same(found["team"], found["local_team"])
    both = next(r for r in found["team"]["results"] if r["example_id"] == "both")
    path = ["supervisor", "billing", "supervisor", "tech", "supervisor"]
    assert both["trace"]["agent_path"] == path
    assert found["team"]["results"][0]["trace"]["model_calls"]  # traced, not a bare Runnable
    for written in tmp_path.rglob("*"):  # the store, the export: all but the code itself
        code = written.name == "deployed.py" or "__pycache__" in written.parts  # and compiled
        if written.is_file() and not code:
            assert secret.encode() not in written.read_bytes(), written
    assert secret not in result.output


@pytest.mark.slow
def test_a_tool_error_the_graph_catches_is_the_tools_error_as_in_process(
    served: str, invoke: Any, tmp_path: Path
) -> None:
    """A ToolNode with ``handle_tool_errors=True`` answers the model with the error and the
    run goes on: the tool call is still ``error``, with the exception it raised."""
    data = tmp_path / "data.jsonl"
    data.write_text('{"id": "a", "inputs": {"question": "refund"}}\n', encoding="utf-8")
    targets = f"""\
  forgiving:
    remote: {{url: "{served}", graph: forgiving}}
  local_forgiving: served_graphs:forgiving
"""
    spec = _spec(tmp_path, data, targets, "pricing:\n  rule-small: {input: 1.0, output: 2.0}\n")
    result, report = _run(invoke, spec)
    assert result.exit_code == 0, result.output
    found = _experiments(report)
    _assert_same(found["forgiving"], found["local_forgiving"])
    trace = found["forgiving"]["results"][0]["trace"]
    assert [(c["name"], c["status"], c["output"]) for c in trace["tool_calls"]] == [
        ("refund_invoice", "error", "ValueError: the refund system rejected INV-4")
    ]


def _closed_port() -> int:
    from langgraph_server import free_port

    return free_port()  # bound and closed again: nothing listens there


@pytest.mark.slow
def test_headers_come_from_the_environment_and_are_never_stored(
    served: str, invoke: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    secret = "lg-test-0123456789abcdef"
    monkeypatch.setenv("TEAM_SERVER_AUTH", secret)
    data = tmp_path / "data.jsonl"
    data.write_text('{"id": "a", "inputs": {"question": "refund"}}\n', encoding="utf-8")
    targets = f"""\
  team:
    remote: {{url: "{served}", graph: team, headers: {{x-team-auth: TEAM_SERVER_AUTH}}}}
"""
    spec = _spec(tmp_path, data, targets)
    result, report = _run(invoke, spec)
    assert result.exit_code == 0, result.output
    assert report["experiments"][0]["results"][0]["trace"]["agent_path"][:2] == [
        "supervisor",
        "billing",
    ]
    for path in tmp_path.rglob("*"):
        if path.is_file():
            assert secret.encode() not in path.read_bytes(), path
    assert secret not in result.output


def test_a_header_whose_variable_is_unset_is_one_line_naming_it(
    invoke: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("TEAM_SERVER_AUTH", raising=False)
    data = tmp_path / "data.jsonl"
    data.write_text('{"id": "a", "inputs": {"question": "refund"}}\n', encoding="utf-8")
    targets = """\
  team:
    remote:
      url: http://127.0.0.1:9
      graph: team
      headers: {x-team-auth: TEAM_SERVER_AUTH}
"""
    spec = _spec(tmp_path, data, targets)
    result = invoke("run", spec, "--store", tmp_path / "db")
    assert result.exit_code == 2
    assert re.search(
        r"spec\.yaml:7: targets\.team\.remote\.headers\.x-team-auth: \$TEAM_SERVER_AUTH is "
        r"not set \(export TEAM_SERVER_AUTH=\.\.\. before the run",
        result.text,
    ), result.output
    assert "Traceback" not in result.output


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        (
            "    remote: {url: 'ftp://host', graph: g}\n",
            "targets.t.remote.url: expected an http:// or https:// URL, got 'ftp://host'",
        ),
        (
            "    remote: {url: 'http://host'}\n",
            "targets.t.remote: missing required key 'graph'",
        ),
        (
            "    remote: {url: 'http://host', graph: g, headers: {x-api-key: 'sk-live-abc123'}}\n",
            "targets.t.remote.headers.x-api-key: expected the name of an environment variable, "
            "not a value",
        ),
        (
            "    target: a.b:c\n    remote: {url: 'http://host', graph: g}\n",
            "'target' and 'remote' both given in targets.t",
        ),
    ],
)
def test_a_wrong_remote_entry_is_one_line(
    invoke: Any, tmp_path: Path, entry: str, message: str
) -> None:
    data = tmp_path / "data.jsonl"
    data.write_text('{"id": "a", "inputs": {"question": "q"}}\n', encoding="utf-8")
    spec = _spec(tmp_path, data, "  t:\n" + entry)
    result = invoke("run", spec, "--store", tmp_path / "db")
    assert result.exit_code == 2
    assert message in result.text, result.output
    assert "sk-live" not in result.output  # a header's value written in the spec is not echoed


def _compiled_graphs() -> list[Any]:
    """Every compiled graph of the demo, tests/served_graphs.py and tests/forms/."""
    import importlib
    import pkgutil

    import forms
    from langgraph.pregel import Pregel

    names = ["agenteval_cli.demo.supervisor", "agenteval_cli.demo.swarm", "served_graphs"]
    names += [f"forms.{m.name}" for m in pkgutil.iter_modules(forms.__path__)]
    found = []
    for name in names:
        module = importlib.import_module(name)
        found += [
            pytest.param(obj, id=f"{name}:{attr}")
            for attr, obj in vars(module).items()
            if isinstance(obj, Pregel)
        ]
    return found


@pytest.mark.parametrize("graph", _compiled_graphs())
def test_a_served_graph_has_the_coordinators_its_compiled_graph_has(graph: Any) -> None:
    """What the server draws of a graph (its xray drawing) names the same coordinators as
    the graph itself, so a served supervisor regains control by design as it does
    in-process, in turns where it hands nothing off too."""
    from agenteval_cli.trace.attribution import drawn_coordinators, graph_coordinators

    drawing = graph.get_graph(xray=True).to_json()
    assert sorted(drawn_coordinators(drawing)) == sorted(graph_coordinators(graph))
