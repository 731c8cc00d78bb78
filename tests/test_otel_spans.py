"""How a recorded trace is laid out as spans (agenteval_cli.otel.export.spans), on traces built
by hand: nested teams, a handoff to an agent that called no model, a trace stored without
times, null and boolean scores."""

from __future__ import annotations

from agenteval_cli.core.records import Handoff, ModelCall, Result, Score, ToolCall, Trace
from agenteval_cli.otel.export.spans import Request, SpanPlan, result_span

REQUEST = Request("graph", "exp-1", "e1", 0)
T0 = 1_800_000_000.0


def agents(span: SpanPlan) -> list[tuple[int, str]]:
    """(depth, agent) of every invoke_agent span under ``span``, in order."""

    def walk(node: SpanPlan, depth: int) -> list[tuple[int, str]]:
        found = []
        for child in node.children:
            if child.attributes.get("gen_ai.operation.name") == "invoke_agent":
                found.append((depth, str(child.attributes["gen_ai.agent.name"])))
                found += walk(child, depth + 1)
        return found

    return walk(span, 0)


def call(path: list[str], start: float, seconds: float = 1.0, **kw: object) -> ModelCall:
    return ModelCall(path[-1], "m", 10, 2, seconds, path=path, started_at=start, **kw)  # type: ignore[arg-type]


def test_members_of_a_team_nest_under_its_span_and_times_cover_them():
    trace = Trace(
        agent_path=["router", "account", "billing"],
        model_calls=[
            call(["router"], T0),
            call(["money", "account"], T0 + 2),
            call(["money", "billing"], T0 + 4),
        ],
        handoffs=[Handoff("router", "money", via="edge"), Handoff("account", "billing")],
        latency_s=6.0,
        started_at=T0,
    )
    root = result_span(Result("e1", 0, {}, trace), REQUEST, fallback_start=0.0)
    assert agents(root) == [(0, "router"), (0, "money"), (1, "account"), (1, "billing")]
    money = root.children[1]
    assert (money.start, money.end) == (T0 + 2, T0 + 5)
    assert (root.start, root.end) == (T0, T0 + 6)
    assert money.attributes["gen_ai.transfer.target.name"] == "money"
    assert money.attributes["gen_ai.transfer.mode"] == "pass_control"
    billing = money.children[1]
    assert billing.attributes["agenteval.transfer.source"] == "account"


def test_a_handoff_to_an_agent_that_called_no_model_is_an_empty_agent_span():
    trace = Trace(
        agent_path=["front"],
        model_calls=[call(["front"], T0)],
        tool_calls=[ToolCall("front", "transfer_to_desk", kind="handoff", target="desk")],
        handoffs=[Handoff("front", "desk", tool="transfer_to_desk")],
        coordinators=["front"],
        latency_s=2.0,
        started_at=T0,
    )
    root = result_span(Result("e1", 0, {}, trace), REQUEST, fallback_start=0.0)
    assert agents(root) == [(0, "front"), (0, "desk")]
    desk = root.children[1]
    assert desk.children == [] and desk.start == desk.end == T0 + 1
    tool = root.children[0].children[1]
    assert tool.name == "execute_tool transfer_to_desk"
    assert (tool.start, tool.end) == (T0 + 1, T0 + 1)  # no tool ran it: where front ended
    # the transfer is on the tool span that made it (its agent the source), not on desk's
    assert tool.attributes["gen_ai.agent.name"] == "front"
    assert tool.attributes["gen_ai.transfer.mode"] == "return_to_caller"
    assert tool.attributes["gen_ai.transfer.target.name"] == "desk"
    assert tool.attributes["gen_ai.transfer.target.type"] == "agent"
    assert "gen_ai.transfer.mode" not in desk.attributes


def test_a_trace_stored_without_times_is_laid_out_call_after_call_and_says_so():
    trace = Trace(
        agent_path=["a", "b"],
        model_calls=[
            ModelCall("a", "m", 10, 2, 0.5, path=["a"]),
            ModelCall("b", "m", None, None, 0.25, path=["b"], no_usage_reason="no usage sent"),
        ],
        handoffs=[Handoff("a", "b")],
        latency_s=1.0,
    )
    root = result_span(Result("e1", 0, {}, trace), REQUEST, fallback_start=T0)
    assert root.attributes["agenteval.times_unrecorded"] is True
    chats = [s for s in root.walk() if s.attributes.get("gen_ai.operation.name") == "chat"]
    assert [(s.start, s.end) for s in chats] == [(T0, T0 + 0.5), (T0 + 0.5, T0 + 0.75)]
    assert "gen_ai.usage.input_tokens" not in chats[1].attributes  # unknown, never 0
    assert chats[1].attributes["agenteval.usage.unknown"] == "no usage sent"


def test_scores_are_evaluation_events_a_null_one_without_a_value():
    trace = Trace(model_calls=[call(["a"], T0)], agent_path=["a"], started_at=T0, latency_s=1)
    scores = [
        Score("routing_accuracy", 0.5, "invoked ['a']"),
        Score("ping_pong", False, "no bounce"),
        Score("cost_usd", None, "no price for model m"),
    ]
    root = result_span(Result("e1", 0, {}, trace, scores=scores), REQUEST, fallback_start=0)
    events = {str(e.attributes["gen_ai.evaluation.name"]): e for e in root.events}
    assert {e.name for e in root.events} == {"gen_ai.evaluation.result"}
    assert events["routing_accuracy"].attributes["gen_ai.evaluation.score.value"] == 0.5
    assert events["ping_pong"].attributes["gen_ai.evaluation.score.value"] == 0.0
    assert events["ping_pong"].attributes["gen_ai.evaluation.score.label"] == "fail"
    assert "gen_ai.evaluation.score.value" not in events["cost_usd"].attributes
    assert events["cost_usd"].attributes["gen_ai.evaluation.explanation"] == "no price for model m"
    assert all(e.time == root.end for e in root.events)


def test_a_handoff_arrives_in_the_last_attempt_not_a_failed_one():
    trace = Trace(
        agent_path=["a", "b"],
        model_calls=[
            call(["a"], T0, retried=True),
            call(["b"], T0 + 1, retried=True),
            call(["a"], T0 + 3),
            call(["b"], T0 + 5),
        ],
        handoffs=[Handoff("a", "b")],
        latency_s=7.0,
        started_at=T0 + 3,
    )
    root = result_span(Result("e1", 0, {}, trace), REQUEST, fallback_start=0.0)
    assert [s.attributes["gen_ai.agent.name"] for s in root.children] == ["a", "b", "a", "b"]
    arrived = [s for s in root.children if "gen_ai.transfer.mode" in s.attributes]
    assert [(s.attributes["gen_ai.agent.name"], s.start) for s in arrived] == [("b", T0 + 5)]
    retried = root.children[1].children[0]
    assert retried.attributes["agenteval.model_call.retried"] is True
    assert root.start == T0  # the request's span covers its failed attempt's calls
