"""The first four evaluators against hand-computed values, and the registry's errors."""

from __future__ import annotations

import pytest

from agenteval_cli.core.errors import UserError
from agenteval_cli.core.records import Handoff, ModelCall, Score, Trace
from agenteval_cli.evaluators import build_evaluator, normalize


def run(name: str, **kwargs):
    options = kwargs.pop("options", None)
    context = kwargs.pop("context", None)
    fn = build_evaluator(name, options, context=context)
    from agenteval_cli.evaluators import arguments_for

    raw = fn(**arguments_for(fn, kwargs))
    return {s.key: s for s in normalize(raw, name)}


def supervisor_trace() -> Trace:
    return Trace(
        agent_path=["supervisor", "tech_support", "supervisor", "account", "supervisor"],
        handoffs=[
            Handoff("supervisor", "tech_support", "transfer_to_tech_support"),
            Handoff("tech_support", "supervisor", "transfer_back_to_supervisor", "edge", after=[0]),
            Handoff("supervisor", "account", "transfer_to_account", after=[1]),
            Handoff("account", "supervisor", "transfer_back_to_supervisor", "edge", after=[2]),
        ],
        coordinators=["supervisor"],
    )


def swarm_bounce_trace() -> Trace:
    return Trace(
        agent_path=["account", "billing", "account"],
        handoffs=[
            Handoff("account", "billing", "transfer_to_billing"),
            Handoff("billing", "account", "transfer_to_account", after=[0]),
        ],
    )


class TestRoutingAccuracy:
    def test_all_expected_agents_invoked(self):
        ref = {"expected_agents": ["tech_support", "account"]}
        scores = run("routing_accuracy", reference_outputs=ref, trace=supervisor_trace())
        assert scores["routing_accuracy"].score == 1.0

    def test_half_of_the_expected_agents(self):
        ref = {"expected_agents": ["tech_support", "billing"]}
        scores = run("routing_accuracy", reference_outputs=ref, trace=supervisor_trace())
        assert scores["routing_accuracy"].score == 0.5
        assert "missing ['billing']" in scores["routing_accuracy"].comment

    def test_two_of_three_and_case_insensitive(self):
        ref = {"expected_agents": ["Billing", "ACCOUNT", "tech_support"]}
        scores = run("routing_accuracy", reference_outputs=ref, trace=swarm_bounce_trace())
        assert scores["routing_accuracy"].score == pytest.approx(2 / 3)

    def test_nothing_expected_is_one(self):
        scores = run("routing_accuracy", reference_outputs={}, trace=Trace())
        assert scores["routing_accuracy"].score == 1.0

    def test_nothing_invoked_is_zero(self):
        ref = {"expected_agents": ["billing"]}
        scores = run("routing_accuracy", reference_outputs=ref, trace=Trace())
        assert scores["routing_accuracy"].score == 0.0


class TestResolutionCoverage:
    def test_terms_found_across_response_and_notes(self):
        outputs = {
            "final_response": "Your sso login works again.",
            "resolution_notes": ["account: Upgrade to Enterprise scheduled"],
        }
        ref = {"must_mention": ["SSO", "upgrade"]}
        scores = run("resolution_coverage", outputs=outputs, reference_outputs=ref)
        assert scores["resolution_coverage"].score == 1.0

    def test_one_of_three_terms(self):
        outputs = {"final_response": "We changed your payment details."}
        ref = {"must_mention": ["payment", "credit card", "invoice"]}
        scores = run("resolution_coverage", outputs=outputs, reference_outputs=ref)
        assert scores["resolution_coverage"].score == pytest.approx(1 / 3)
        assert scores["resolution_coverage"].comment == "missing ['credit card', 'invoice']"

    def test_no_terms_is_one_and_missing_response_is_zero(self):
        assert (
            run("resolution_coverage", outputs={}, reference_outputs={})[
                "resolution_coverage"
            ].score
            == 1.0
        )
        ref = {"must_mention": ["refund"]}
        assert (
            run("resolution_coverage", outputs={}, reference_outputs=ref)[
                "resolution_coverage"
            ].score
            == 0.0
        )


class TestHandoffChainLength:
    def test_supervisor_return_trips_count_but_are_not_ping_pong(self):
        scores = run("handoff_chain_length", trace=supervisor_trace())
        assert scores["handoff_chain_length"].score == 4.0
        assert scores["ping_pong"].score is False

    def test_swarm_bounce_is_ping_pong(self):
        scores = run("handoff_chain_length", trace=swarm_bounce_trace())
        assert scores["handoff_chain_length"].score == 2.0
        assert scores["ping_pong"].score is True
        assert scores["ping_pong"].comment == "account → billing → account"

    def test_a_coordinator_regaining_control_is_no_bounce(self):
        # billing → supervisor → billing: the supervisor sends the request back, by design
        trace = Trace(
            agent_path=["billing", "supervisor", "billing"],
            handoffs=[
                Handoff("billing", "supervisor", "", "edge"),
                Handoff("supervisor", "billing", "transfer_to_billing", after=[0]),
            ],
            coordinators=["supervisor"],
        )
        assert run("handoff_chain_length", trace=trace)["ping_pong"].score is False
        trace.coordinators = []
        assert run("handoff_chain_length", trace=trace)["ping_pong"].score is True
        declared = run(
            "handoff_chain_length", options={"coordinators": ["Supervisor"]}, trace=trace
        )
        assert declared["ping_pong"].score is False

    def test_parallel_branches_are_no_bounce(self):
        # router → {billing ∥ tech} → router: four handoffs; the branches never handed to each
        # other, so the order they are listed in makes no bounce of billing, tech
        trace = Trace(
            coordinators=["router"],
            agent_path=["router", "billing", "tech", "router"],
            handoffs=[
                Handoff("router", "billing", "", "edge", True),
                Handoff("router", "tech", "", "edge", True),
                Handoff("billing", "router", "", "edge", True, after=[0]),
                Handoff("tech", "router", "", "edge", True, after=[1]),
            ],
        )
        scores = run("handoff_chain_length", trace=trace)
        assert scores["handoff_chain_length"].score == 4.0
        assert scores["ping_pong"].score is False

    def test_a_stored_trace_of_the_old_form_keeps_its_rule(self):
        old = Trace.from_dict(
            {
                "agent_path": ["account", "billing", "account"],
                "handoffs": [
                    {"source": "account", "target": "billing", "tool": "transfer_to_billing"}
                ],
            }
        )
        assert old.schema == 1
        scores = run("handoff_chain_length", trace=old)
        assert scores["handoff_chain_length"].score == 2.0
        assert scores["ping_pong"].score is True

    def test_untraced_is_null_not_zero(self):
        scores = run("handoff_chain_length", trace=Trace(untraced="no LangChain run was seen"))
        assert scores["handoff_chain_length"].score is None
        assert scores["ping_pong"].score is None

    def test_single_agent_and_empty_trace(self):
        assert (
            run("handoff_chain_length", trace=Trace(agent_path=["billing"]))[
                "handoff_chain_length"
            ].score
            == 0.0
        )
        assert run("handoff_chain_length", trace=Trace())["handoff_chain_length"].score == 0.0

    def test_bounce_without_handoff_tools_counts(self):
        trace = Trace(
            agent_path=["a", "b", "c", "b"],
            handoffs=[
                Handoff("a", "b", "", "edge"),
                Handoff("b", "c", "", "edge", after=[0]),
                Handoff("c", "b", "", "edge", after=[1]),
            ],
        )
        scores = run("handoff_chain_length", trace=trace)
        assert scores["handoff_chain_length"].score == 3.0
        assert scores["ping_pong"].score is True


PRICING = {
    "scripted-large": {"input": 2.5, "output": 10.0},
    "scripted-small": {"input": 0.15, "output": 0.60},
}


class TestTokenCost:
    def trace(self) -> Trace:
        return Trace(
            model_calls=[
                ModelCall("supervisor", "scripted-large", 600, 150),
                ModelCall("billing", "scripted-small", 500, 100),
                ModelCall("supervisor", "scripted-large", 400, 50),
            ]
        )

    def test_tokens_and_usd(self):
        scores = run("token_cost", trace=self.trace(), context={"pricing": PRICING})
        assert scores["input_tokens"].score == 1500.0
        assert scores["output_tokens"].score == 300.0
        assert scores["total_tokens"].score == 1800.0
        # (1000 * 2.5 + 200 * 10) / 1e6 + (500 * 0.15 + 100 * 0.6) / 1e6
        assert scores["cost_usd"].score == pytest.approx(0.004635)

    def test_unknown_usage_is_null_with_the_model_named(self):
        trace = self.trace()
        trace.model_calls.append(ModelCall("billing", "silent-model", None, None))
        scores = run("token_cost", trace=trace, context={"pricing": PRICING})
        for key in ("input_tokens", "output_tokens", "total_tokens", "cost_usd"):
            assert scores[key].score is None
        assert "silent-model" in scores["cost_usd"].comment

    def test_unpriced_model_is_reported_not_zero(self):
        pricing = {"scripted-small": {"input": 0.15, "output": 0.60}}
        scores = run("token_cost", trace=self.trace(), context={"pricing": pricing})
        assert scores["cost_usd"].score is None
        assert "scripted-large" in scores["cost_usd"].comment
        assert scores["total_tokens"].score == 1800.0


class TestRegistry:
    def test_unknown_name_suggests_the_closest(self):
        with pytest.raises(UserError) as info:
            build_evaluator("routing_acuracy", file="x.yaml", line=9)
        assert str(info.value) == (
            "x.yaml:9: unknown evaluator 'routing_acuracy' (did you mean 'routing_accuracy'?)"
        )

    def test_unknown_option(self):
        with pytest.raises(UserError, match="evaluator 'token_cost' has no option 'pricin'"):
            build_evaluator("token_cost", {"pricin": {}})


class TestNormalize:
    def test_shapes(self):
        assert normalize(True, "k") == [Score("k", True)]
        assert normalize(0.25, "k") == [Score("k", 0.25)]
        assert normalize({"score": 1, "comment": "ok"}, "k") == [Score("k", 1.0, "ok")]
        assert normalize({"results": [{"key": "a", "score": 0}]}, "k") == [Score("a", 0.0)]
        assert normalize([{"key": "a", "score": 1}, {"key": "b", "score": False}], "k") == [
            Score("a", 1.0),
            Score("b", False),
        ]

    @pytest.mark.parametrize("garbage", [None, "text", {"value": "x"}, {"nothing": 1}])
    def test_garbage_raises(self, garbage):
        with pytest.raises(ValueError):
            normalize(garbage, "k")
