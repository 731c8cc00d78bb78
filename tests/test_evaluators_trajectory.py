"""trajectory_match agrees with openevals called directly; the shorthand; soundness family."""

from __future__ import annotations

import asyncio
import itertools
import json

import pytest
from openevals.trajectory.match import create_trajectory_match_evaluator

from agenteval_cli.errors import UserError
from agenteval_cli.evaluators import build_evaluator, normalize
from agenteval_cli.records import ToolCall, Trace

MODES = ("strict", "unordered", "subset", "superset")
ARG_MODES = ("exact", "ignore", "subset", "superset")


def call(name, **args):
    return {"function": {"name": name, "arguments": json.dumps(args)}}


def assistant(*calls, content=""):
    return {"role": "assistant", "content": content, "tool_calls": list(calls)}


USER = {"role": "user", "content": "What is the weather in SF and how do I get to the Presidio?"}
WEATHER = call("get_weather", city="san francisco")
WEATHER_F = call("get_weather", city="san francisco", units="F")
DIRECTIONS = call("get_directions", destination="presidio")
REFERENCE = [
    USER,
    assistant(WEATHER),
    {"role": "tool", "content": "sunny"},
    assistant(content="Sunny."),
]

# (outputs, reference) pairs covering equal, reordered, extra, missing and argument changes.
PAIRS = {
    "same": (REFERENCE, REFERENCE),
    "seed_superset": ([assistant(WEATHER, DIRECTIONS)], [assistant(WEATHER)]),
    "extra_call": (
        [USER, assistant(WEATHER), {"role": "tool", "content": "sunny"}, assistant(DIRECTIONS)],
        REFERENCE,
    ),
    "missing_call": ([USER, assistant(content="Sunny.")], REFERENCE),
    "reordered": (
        [assistant(DIRECTIONS), assistant(WEATHER)],
        [assistant(WEATHER), assistant(DIRECTIONS)],
    ),
    "more_args": ([assistant(WEATHER_F)], [assistant(WEATHER)]),
    "fewer_args": ([assistant(WEATHER)], [assistant(WEATHER_F)]),
    "other_value": ([assistant(call("get_weather", city="nyc"))], [assistant(WEATHER)]),
}


def ours(mode, tool_args, outputs, reference, **options):
    fn = build_evaluator("trajectory_match", {"mode": mode, "tool_args": tool_args, **options})
    raw = fn(
        outputs={"messages": outputs}, reference_outputs={"trajectory": reference}, trace=Trace()
    )
    [score] = normalize(raw, "trajectory_match")
    return score


@pytest.mark.parametrize(("mode", "tool_args"), list(itertools.product(MODES, ARG_MODES)))
def test_every_mode_agrees_with_openevals(mode, tool_args):
    direct = create_trajectory_match_evaluator(
        trajectory_match_mode=mode, tool_args_match_mode=tool_args
    )
    verdicts = {}
    for label, (outputs, reference) in PAIRS.items():
        expected = direct(outputs=outputs, reference_outputs=reference)["score"]
        got = ours(mode, tool_args, outputs, reference)
        assert got.score is expected, (label, got.comment)
        verdicts[label] = expected
    assert verdicts["same"] is True
    assert False in verdicts.values()  # every mode rejects at least one pair


def test_the_second_seeds_superset_example_passes():
    outputs, reference = PAIRS["seed_superset"]
    assert ours("superset", "exact", outputs, reference).score is True
    assert ours("strict", "exact", outputs, reference).score is False


def test_per_tool_overrides_agree_with_openevals():
    outputs, reference = PAIRS["other_value"]
    for rule in ("ignore", ["units"], ["city"]):
        direct = create_trajectory_match_evaluator(
            trajectory_match_mode="strict", tool_args_match_overrides={"get_weather": rule}
        )
        expected = direct(outputs=outputs, reference_outputs=reference)["score"]
        got = ours("strict", "exact", outputs, reference, tool_args_overrides={"get_weather": rule})
        assert got.score is expected
    assert expected is False  # comparing "city" sees nyc != san francisco


def test_the_comment_names_what_differed():
    got = ours("strict", "exact", *PAIRS["missing_call"])
    assert got.comment == (
        "strict/exact on outputs.messages: "
        "expected ['get_weather']; got []; missing ['get_weather']"
    )


def traced(*calls):
    return Trace(tool_calls=[ToolCall("agent", name, args) for name, args in calls])


def shorthand(mode, expected_tools, trace, tool_args="exact"):
    fn = build_evaluator("trajectory_match", {"mode": mode, "tool_args": tool_args})
    raw = fn(outputs={}, reference_outputs={"expected_tools": expected_tools}, trace=trace)
    return normalize(raw, "trajectory_match")[0]


def trace_with_messages(*calls):
    """A trace whose recorded messages hold these tool calls, handoffs in between."""
    messages = [{"role": "user", "content": "hi"}]
    for name, args in calls:
        messages.append(assistant(call(name, **args)))
        messages.append({"role": "tool", "content": "ok", "tool_call_id": ""})
    return Trace(messages=messages)


class TestExpectedToolsShorthand:
    trace = trace_with_messages(
        ("transfer_to_billing", {}),
        ("lookup_invoice", {"invoice": "42"}),
        ("refund", {"amount": 10}),
        ("transfer_back_to_supervisor", {}),
    )

    def test_names_only_match_any_arguments_in_order(self):
        assert shorthand("strict", ["lookup_invoice", "refund"], self.trace).score is True
        assert shorthand("strict", ["refund", "lookup_invoice"], self.trace).score is False
        assert shorthand("unordered", ["refund", "lookup_invoice"], self.trace).score is True

    def test_args_given_are_compared(self):
        good = [{"name": "lookup_invoice", "args": {"invoice": "42"}}, "refund"]
        bad = [{"name": "lookup_invoice", "args": {"invoice": "7"}}, "refund"]
        assert shorthand("strict", good, self.trace).score is True
        result = shorthand("strict", bad, self.trace)
        assert result.score is False
        assert shorthand("strict", bad, self.trace, tool_args="ignore").score is True

    def test_superset_and_subset(self):
        assert shorthand("superset", ["refund"], self.trace).score is True
        assert shorthand("subset", ["refund"], self.trace).score is False
        assert (
            shorthand("subset", ["lookup_invoice", "refund", "escalate"], self.trace).score is True
        )

    def test_handoffs_kept_when_the_shorthand_names_one(self):
        tools = ["transfer_to_billing", "lookup_invoice", "refund", "transfer_back_to_supervisor"]
        assert shorthand("strict", tools, self.trace).score is True
        assert shorthand("strict", tools[:3], self.trace).score is False

    def test_no_reference_is_none_with_the_fix(self):
        fn = build_evaluator("trajectory_match")
        [s] = normalize(fn(outputs={}, reference_outputs={}, trace=self.trace), "trajectory_match")
        assert s.score is None
        assert "outputs.expected_tools" in s.comment


def test_returned_messages_win_over_the_trace_unless_told():
    returned = {"messages": [assistant(WEATHER)]}
    trace = trace_with_messages(("get_directions", {"destination": "presidio"}))
    ref = {"expected_tools": ["get_weather"]}
    auto = build_evaluator("trajectory_match")(outputs=returned, reference_outputs=ref, trace=trace)
    forced = build_evaluator("trajectory_match", {"source": "trace"})(
        outputs=returned, reference_outputs=ref, trace=trace
    )
    assert auto["score"] is True
    assert forced["score"] is False
    assert "on trace messages" in forced["comment"]


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"mode": "supserset"}, "mode must be one of"),
        ({"tool_args": "fuzzy"}, "tool_args must be one of"),
        ({"tool_args_overrides": {"x": 3}}, "tool_args_overrides"),
        ({"modes": "strict"}, "did you mean 'mode'"),
    ],
)
def test_bad_options_are_user_errors(options, message):
    with pytest.raises(UserError, match=message):
        build_evaluator("trajectory_match", options)


# --- soundness family ----------------------------------------------------------------------

CLAIM_OK = traced(("fraud_check", {"claim": 1}), ("approve", {"claim": 1}))
CLAIM_LUCKY = traced(("approve", {"claim": 1}))
CLAIM_WASTEFUL = traced(
    ("fraud_check", {"claim": 1}),
    ("fraud_check", {"claim": 1}),
    ("lookup_weather", {}),
    ("fraud_check", {"claim": 1}),
    ("approve", {"claim": 1}),
)


def one(name, reference, trace, options=None):
    raw = build_evaluator(name, options)(reference_outputs=reference, trace=trace)
    return normalize(raw, name)[0]


def test_required_tools_from_the_example_or_the_yaml():
    assert one("required_tools", {"required_tools": ["fraud_check"]}, CLAIM_OK).score is True
    lucky = one("required_tools", {}, CLAIM_LUCKY, {"tools": ["fraud_check"]})
    assert lucky.score is False
    assert lucky.comment == "skipped ['fraud_check']"
    # the example's own list wins over the YAML default
    assert one(
        "required_tools", {"required_tools": []}, CLAIM_LUCKY, {"tools": ["fraud_check"]}
    ).score


def test_unnecessary_steps_counts_repeats_and_calls_outside_the_expected_set():
    s = one("unnecessary_steps", {"expected_tools": ["fraud_check", "approve"]}, CLAIM_WASTEFUL)
    assert s.score == 3.0
    assert s.comment == "repeated ['fraud_check', 'fraud_check']; not needed ['lookup_weather']"
    # without an expected set only the repeats count
    assert one("unnecessary_steps", {}, CLAIM_WASTEFUL).score == 2.0
    handoffs = traced(("transfer_to_billing", {}), ("transfer_to_billing", {}))
    assert one("unnecessary_steps", {}, handoffs).score == 0.0


def soundness(reference, trace, outputs, **options):
    fn = build_evaluator("soundness", options)
    raw = asyncio.run(fn(inputs={}, outputs=outputs, reference_outputs=reference, trace=trace))
    return {s.key: s for s in normalize(raw, "soundness")}


def test_soundness_flags_a_correct_answer_reached_by_skipping_the_check():
    ref = {"final_answer": "approve", "required_tools": ["fraud_check"]}
    lucky = soundness(ref, CLAIM_LUCKY, {"final_answer": "Approve"})
    assert {k: s.score for k, s in lucky.items()} == {
        "outcome_correct": True,
        "used_required_tools": False,
        "unnecessary_steps": 0.0,
        "trajectory_sound": False,
        "correct_but_unsound": True,
    }
    sound = soundness(ref, CLAIM_OK, {"final_answer": "approve"})
    assert sound["trajectory_sound"].score is True
    assert sound["correct_but_unsound"].score is False


def test_soundness_limit_on_wasted_steps_and_must_mention_outcome():
    ref = {"must_mention": ["approved"], "required_tools": ["fraud_check"]}
    wasteful = soundness(
        ref, CLAIM_WASTEFUL, {"final_response": "Claim approved."}, outcome="must_mention"
    )
    assert wasteful["outcome_correct"].score is True
    assert wasteful["unnecessary_steps"].score == 2.0
    assert wasteful["trajectory_sound"].score is True  # 2 < 3, the seed's limit
    strict = soundness(
        ref,
        CLAIM_WASTEFUL,
        {"final_response": "Claim approved."},
        outcome="must_mention",
        max_unnecessary=2,
    )
    assert strict["trajectory_sound"].score is False
    assert strict["correct_but_unsound"].score is True


def test_soundness_without_an_expected_answer_is_none_not_false():
    got = soundness({"required_tools": ["fraud_check"]}, CLAIM_OK, {"final_answer": "approve"})
    assert got["outcome_correct"].score is None
    assert got["correct_but_unsound"].score is None
    assert "no outputs.final_answer" in got["outcome_correct"].comment
