"""LLM-as-judge through the real openevals and the real OpenAI client, against a local server."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from openai_server import openai_server

from agenteval_cli.core.records import Example, Trace
from agenteval_cli.evaluators import build_evaluator, normalize
from agenteval_cli.evaluators.judge_model import collect_judge_usage
from agenteval_cli.evaluators.loading import bind_evaluators
from agenteval_cli.evaluators.scoring import BoundEvaluator, score
from agenteval_cli.spec.model import load_spec

INPUTS = {"question": "I want to upgrade to Enterprise and also fix my broken SSO."}
OUTPUTS = {"final_response": "SSO fixed; upgrade scheduled.", "resolution_notes": ["tech: SSO"]}
REFERENCE = {"expected_agents": ["tech_support", "account"], "must_mention": ["SSO", "upgrade"]}
NO_RETRY = {"max_retries": 0}


@pytest.fixture
def server(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    with openai_server() as srv:
        yield srv


def judge(server, name="routing_quality", **options):
    options.setdefault("model", "openai:gpt-4o-mini")
    options.setdefault("base_url", server.base_url)
    options.setdefault("model_kwargs", NO_RETRY)
    return build_evaluator("llm_judge", options, context={"name": name})


def verdict(fn, outputs=OUTPUTS, reference=REFERENCE):
    raw = asyncio.run(
        fn(inputs=INPUTS, outputs=outputs, reference_outputs=reference, trace=Trace())
    )
    [result] = normalize(raw, "judge")
    return result


def test_bundled_seed_prompt_is_filled_field_by_field(server):
    server.replies = [{"score": 0.75, "reasoning": "both specialists, upgrade vague"}]
    result = verdict(judge(server, prompt="routing_quality", continuous=True))
    assert (result.key, result.score) == ("routing_quality", 0.75)
    assert result.comment == "both specialists, upgrade vague"
    [request] = server.requests
    assert request["model"] == "gpt-4o-mini"
    content = request["messages"][-1]["content"]
    assert content.startswith(
        "Customer query: I want to upgrade to Enterprise and also fix my broken SSO.\n"
        'Expected domains: ["tech_support", "account"]\n'
        "Agent response: SSO fixed; upgrade scheduled.\n"
        'Resolution notes: ["tech: SSO"]\n'
    )
    assert 'Return ONLY: {"score": <float>, "reasoning": "<explanation>"}' in content
    schema = request["response_format"]["json_schema"]["schema"]
    assert schema["properties"]["score"]["type"] == "number"


def test_boolean_judge_system_message_and_feedback_key(server):
    server.replies = [{"score": False, "reasoning": "missed billing"}]
    fn = judge(
        server, prompt="Did it answer {inputs[question]}?", system="Be strict.", feedback_key="ok"
    )
    result = verdict(fn)
    assert (result.key, result.score) == ("ok", False)
    messages = server.requests[0]["messages"]
    assert messages[0] == {"role": "system", "content": "Be strict."}
    assert (
        server.requests[0]["response_format"]["json_schema"]["schema"]["properties"]["score"][
            "type"
        ]
        == "boolean"
    )


def test_choices_and_a_score_outside_them(server):
    server.replies = [{"score": 0.5, "reasoning": "half"}, {"score": 0.3, "reasoning": "?"}]
    fn = judge(server, prompt="Rate {outputs[final_response]}", choices=[0.0, 0.5, 1.0])
    assert verdict(fn).score == 0.5
    off = verdict(fn)
    assert off.score is None
    assert off.comment == (
        "evaluator 'routing_quality' failed: judge returned 0.3, not one of [0.0, 0.5, 1.0]"
    )


@pytest.mark.parametrize(
    ("reply", "reason"),
    [
        ("The answer looks fine to me.", "OutputParserException: Invalid json output"),
        ('{"verdict": "good"}', "KeyError: 'score'"),
        ('{"score": "high", "reasoning": "r"}', None),
    ],
)
def test_malformed_reply_is_none_with_the_reason_never_zero(server, reply, reason):
    server.replies = [reply]
    result = verdict(judge(server, prompt="routing_quality", continuous=True))
    assert result.score is None
    if reason is None:
        assert result.comment == (
            "evaluator 'routing_quality' failed: judge returned 'high', not a number from 0 to 1"
        )
    else:
        assert result.comment.startswith(
            f"evaluator 'routing_quality' failed: judge reply could not be parsed: {reason}"
        )


def test_server_error_is_none_with_the_reason(server):
    server.replies = [500]
    result = verdict(judge(server, prompt="routing_quality", continuous=True))
    assert result.score is None
    assert result.comment.startswith("evaluator 'routing_quality' failed: judge call failed: ")
    assert "500" in result.comment


def test_a_field_the_example_lacks_is_named(server):
    result = verdict(judge(server, prompt="Q: {inputs[question]} A: {outputs[answer]}"))
    assert result.score is None
    assert "prompt could not be filled" in result.comment
    assert "{outputs[answer]}: outputs has no 'answer'" in result.comment
    assert server.requests == []  # nothing was sent


def test_jinja2_prompt_file_and_few_shot_examples(server, tmp_path):
    (tmp_path / "judge.j2").write_text(
        "Q: {{ inputs.question }}\nAgents: {{ trace.agent_path | join(' > ') }}\n"
    )
    server.replies = [{"score": True, "reasoning": "ok"}]
    fn = build_evaluator(
        "llm_judge",
        {
            "prompt": "judge.j2",
            "model": "openai:gpt-4o-mini",
            "base_url": server.base_url,
            "few_shot_examples": [{"inputs": "a", "outputs": "b", "score": True, "reasoning": "r"}],
        },
        context={"name": "j", "base_dir": tmp_path},
    )
    trace = Trace(agent_path=["supervisor", "billing"])
    raw = asyncio.run(fn(inputs=INPUTS, outputs=OUTPUTS, reference_outputs=REFERENCE, trace=trace))
    assert raw["score"] is True
    content = server.requests[0]["messages"][-1]["content"]
    assert content.startswith(f"Q: {INPUTS['question']}\nAgents: supervisor > billing\n")
    assert "<example>\n<input>a</input>\n<output>b</output>" in content


def test_unknown_placeholder_and_missing_prompt_are_user_errors(server):
    from agenteval_cli.core.errors import UserError

    with pytest.raises(UserError, match=r"unknown prompt placeholder \{question\}"):
        judge(server, prompt="Q: {question}")
    with pytest.raises(UserError, match="bundled prompts: handoff_judge, routing_quality"):
        judge(server, prompt="prompts/nope.txt")


def test_trajectory_judge_with_and_without_a_reference(server):
    from openevals.prompts import TRAJECTORY_ACCURACY_PROMPT

    server.replies = [{"score": True, "reasoning": "sensible"}, {"score": False, "reasoning": "no"}]
    fn = build_evaluator(
        "trajectory_judge", {"model": "openai:gpt-4o-mini", "base_url": server.base_url}
    )
    messages = [
        {"role": "user", "content": "refund me"},
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [{"function": {"name": "refund", "arguments": "{}"}}],
        },
    ]
    with_ref = asyncio.run(
        fn(
            outputs={"messages": messages},
            reference_outputs={"expected_tools": ["refund"]},
            trace=Trace(),
        )
    )
    without = asyncio.run(fn(outputs={"messages": messages}, reference_outputs={}, trace=Trace()))
    assert (with_ref["key"], with_ref["score"], without["score"]) == (
        "trajectory_judge",
        True,
        False,
    )
    first, second = (r["messages"][-1]["content"] for r in server.requests)
    assert "<reference_trajectory>" in first and "refund" in first
    assert second.startswith(TRAJECTORY_ACCURACY_PROMPT.split("{outputs}")[0].rstrip()[:60])
    assert "<reference_trajectory>" not in second


def test_judge_spend_is_recorded_apart_and_priced(server):
    server.usage = (200, 50)
    fn = judge(server, prompt="routing_quality", continuous=True)
    fn = build_evaluator(
        "llm_judge",
        {
            "prompt": "routing_quality",
            "model": "openai:gpt-4o-mini",
            "base_url": server.base_url,
            "continuous": True,
        },
        context={
            "name": "routing_quality",
            "pricing": {"judge-test-model": {"input": 1.0, "output": 4.0}},
        },
    )
    server.default = {"score": 1.0, "reasoning": "ok"}
    example = Example("e1", INPUTS, REFERENCE)
    scores = asyncio.run(score([BoundEvaluator("routing_quality", fn)], example, OUTPUTS, Trace()))
    by_key = {s.key: s.score for s in scores}
    assert by_key == {
        "routing_quality": 1.0,
        "judge_input_tokens": 200.0,
        "judge_output_tokens": 50.0,
        "judge_cost_usd": pytest.approx((200 * 1.0 + 50 * 4.0) / 1e6),
    }
    assert "cost_usd" not in by_key  # the target's cost is token_cost's, untouched


def test_unpriced_judge_model_has_null_cost_named(server):
    with collect_judge_usage():
        pass
    fn = judge(server, prompt="routing_quality", continuous=True)
    server.default = {"score": 0.5, "reasoning": "ok"}
    scores = asyncio.run(
        score([BoundEvaluator("q", fn)], Example("e", INPUTS, REFERENCE), OUTPUTS, Trace())
    )
    cost = next(s for s in scores if s.key == "judge_cost_usd")
    assert cost.score is None
    assert "judge-test-model" in cost.comment


QUALITY = (
    "  - {name: quality, type: llm_judge, prompt: routing_quality, model: 'openai:gpt-4o-mini'}\n"
)


def write_spec(tmp_path: Path, evaluators: str) -> Path:
    external = Path(__file__).parent / "data" / "external"
    spec = tmp_path / "spec.yaml"
    spec.write_text(
        f"dataset: {external / 'travel.jsonl'}\n"
        f"targets:\n  supervisor: {external / 'travel_graphs.py'}:supervisor_graph\n"
        f"  swarm: {external / 'travel_graphs.py'}:swarm_graph\n"
        f"evaluators:\n{evaluators}"
        "pricing:\n  big-model: {input: 1.0, output: 2.0}\n"
        "  small-model: {input: 0.5, output: 1.0}\n"
        "  judge-test-model: {input: 1.0, output: 4.0}\n"
    )
    return spec


def test_missing_credentials_skip_the_judges_with_one_warning(tmp_path, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    spec = load_spec(
        write_spec(
            tmp_path,
            "  - routing_accuracy\n"
            + QUALITY
            + "  - {name: trajectory_judge, model: 'openai:gpt-4o-mini'}\n",
        )
    )
    warnings: list[str] = []
    bound = bind_evaluators(spec, warn=warnings.append)
    assert [b.name for b in bound] == ["routing_accuracy"]
    assert warnings == [
        "skipping judge(s) quality, trajectory_judge: OPENAI_API_KEY is not set; "
        "the other evaluators still run"
    ]


def test_cli_run_goes_on_without_credentials(tmp_path, monkeypatch):
    from typer.testing import CliRunner

    from agenteval_cli.cli import app

    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    spec = write_spec(
        tmp_path,
        "  - routing_accuracy\n" + QUALITY,
    )
    result = CliRunner().invoke(app, ["run", str(spec), "--store", str(tmp_path / "db")])
    assert result.exit_code == 0, result.output
    assert result.output.count("OPENAI_API_KEY is not set") == 1
    assert "routing accuracy" in result.output


def test_the_library_says_a_skipped_judge_in_the_reports_warnings_and_prints_nothing(
    tmp_path, monkeypatch, capfd
):
    import agenteval_cli as agenteval

    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    spec = write_spec(tmp_path, "  - routing_accuracy\n" + QUALITY)
    report = agenteval.run(spec, store=tmp_path / "db", limit=1)
    out, err = capfd.readouterr()
    assert "OPENAI_API_KEY" not in out + err
    assert report.warnings == [
        "skipping judge(s) quality: OPENAI_API_KEY is not set; the other evaluators still run"
    ]


def test_a_rescore_says_a_skipped_judge_in_the_reports_warnings_and_prints_nothing(
    tmp_path, monkeypatch, capfd
):
    import agenteval_cli as agenteval

    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    first = write_spec(tmp_path, "  - routing_accuracy\n")
    ran = agenteval.run(first, store=tmp_path / "db", limit=1)
    capfd.readouterr()
    again = write_spec(tmp_path, "  - routing_accuracy\n" + QUALITY)
    report = agenteval.rescore(again, [ran.experiments[0].name], store=tmp_path / "db")
    out, err = capfd.readouterr()
    assert "OPENAI_API_KEY" not in out + err
    assert report.warnings == [
        "skipping judge(s) quality: OPENAI_API_KEY is not set; the other evaluators still run"
    ]


def test_a_sampled_judge_in_a_full_run(tmp_path, monkeypatch):
    """Judge on a seeded half of the examples: its own cost row, and the table says n."""
    from typer.testing import CliRunner

    from agenteval_cli.cli import app

    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    monkeypatch.setenv("COLUMNS", "200")
    with openai_server() as srv:
        srv.default = {"score": 0.5, "reasoning": "partly"}
        spec = write_spec(
            tmp_path,
            "  - routing_accuracy\n  - token_cost\n"
            f"  - {{name: quality, type: llm_judge, prompt: routing_quality, continuous: true,\n"
            f"     model: 'openai:gpt-4o-mini', base_url: '{srv.base_url}', sample: 0.5}}\n",
        )
        out = tmp_path / "r.json"
        result = CliRunner().invoke(
            app, ["run", str(spec), "--store", str(tmp_path / "db"), "--json", str(out)]
        )
        assert result.exit_code == 0, result.output
    data = {e["target"]: e for e in json.loads(out.read_text())["experiments"]}
    examples = len(data["swarm"]["results"])
    judged = round(examples * 0.5)
    assert len(srv.requests) == 2 * judged  # the same examples for both targets
    for experiment in data.values():
        judged_ids = {r["example_id"] for r in experiment["results"] if "quality" in r["scores"]}
        assert len(judged_ids) == judged
        assert experiment["metric_counts"]["quality"] == judged
        assert experiment["metrics"]["quality"] == 0.5
        assert experiment["metrics"]["judge_cost_usd_total"] == pytest.approx(judged * 240e-6)
        # the target's own cost is from its model calls only
        assert experiment["metrics"]["cost_usd"] < 0.001
    assert {r["example_id"] for r in data["swarm"]["results"] if "quality" in r["scores"]} == {
        r["example_id"] for r in data["supervisor"]["results"] if "quality" in r["scores"]
    }
    assert f"0.5 (n={judged})" in result.output
    assert "judge cost (total)" in result.output
