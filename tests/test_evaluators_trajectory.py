"""trajectory_match agrees with openevals called directly; the shorthand; soundness family;
routing told from work by the trace's tool-call kinds, on hand-built traces and real graphs."""

from __future__ import annotations

import asyncio
import itertools
import json
import warnings
from typing import Any

import pytest
from fakes import reply, scripted
from langchain_core.messages import HumanMessage
from langchain_core.tools import tool
from langgraph_supervisor import create_supervisor
from langgraph_swarm import create_handoff_tool, create_swarm
from openevals.trajectory.match import create_trajectory_match_evaluator

from agenteval_cli.core.errors import UserError
from agenteval_cli.core.records import AGENT_TOOL, HANDOFF, Handoff, ToolCall, Trace
from agenteval_cli.evaluators import build_evaluator, normalize
from agenteval_cli.evaluators.trajectory import (
    actual_messages,
    is_routing_call,
    routing_names,
    tool_calls_of,
)
from agenteval_cli.trace.recorder import TraceRecorder

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    from langgraph.prebuilt import create_react_agent

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


def shorthand(mode, expected_tools, trace, tool_args="exact", outputs=None, **options):
    fn = build_evaluator("trajectory_match", {"mode": mode, "tool_args": tool_args, **options})
    raw = fn(
        outputs=outputs or {}, reference_outputs={"expected_tools": expected_tools}, trace=trace
    )
    return normalize(raw, "trajectory_match")[0]


def work(name, **args):
    return ToolCall("billing", name, args)


def handoff(name, target, agent="billing"):
    return ToolCall(agent, name, {}, kind=HANDOFF, target=target)


def agent_tool(name, agent="supervisor"):
    return ToolCall(agent, name, {}, kind=AGENT_TOOL, target=name)


def messages_of(*calls, ids=True):
    """OpenAI-form messages holding these recorded calls, one assistant message each."""
    messages: list[dict[str, Any]] = [{"role": "user", "content": "hi"}]
    for n, c in enumerate(calls):
        message = assistant(call(c.name, **c.args))
        if ids:
            message["tool_calls"][0]["id"] = f"call_{n}"
        messages += [message, {"role": "tool", "content": "ok", "tool_call_id": f"call_{n}"}]
    return messages


def trace_with_messages(*calls):
    """A trace that recorded these tool calls and the messages holding them."""
    return Trace(tool_calls=list(calls), messages=messages_of(*calls))


class TestExpectedToolsShorthand:
    trace = trace_with_messages(
        handoff("transfer_to_billing", "billing", agent="supervisor"),
        work("lookup_invoice", invoice="42"),
        work("refund", amount=10),
        handoff("transfer_back_to_supervisor", "supervisor"),
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


# --- what is routing: the trace's tool-call kinds -----------------------------------------

# A custom handoff tool, an agent run as a tool and a hand-back: none has a transfer_ name.
CUSTOM_ROUTING = trace_with_messages(
    handoff("assign_to_billing", "billing", agent="supervisor"),
    work("lookup_invoice", invoice="42"),
    agent_tool("fraud_team", agent="billing"),
    work("refund", amount=10),
    handoff("return_to_supervisor", "supervisor"),
)


class TestRoutingByKind:
    def test_custom_handoff_and_agent_tools_are_left_out_of_the_shorthand(self):
        got = shorthand("strict", ["lookup_invoice", "refund"], CUSTOM_ROUTING)
        assert got.score is True
        assert got.comment == (
            "strict/exact on trace messages: "
            "expected ['lookup_invoice', 'refund']; got ['lookup_invoice', 'refund']"
        )

    def test_naming_a_routing_tool_keeps_every_routing_call(self):
        every = ["assign_to_billing", "lookup_invoice", "fraud_team", "refund"]
        every.append("return_to_supervisor")
        assert shorthand("strict", every, CUSTOM_ROUTING).score is True
        got = shorthand("strict", ["assign_to_billing", "lookup_invoice", "refund"], CUSTOM_ROUTING)
        assert got.score is False
        assert got.comment.endswith("extra ['fraud_team', 'return_to_supervisor']")

    def test_returned_messages_without_ids_are_matched_by_name(self):
        returned = messages_of(*CUSTOM_ROUTING.tool_calls, ids=False)
        got = shorthand(
            "strict", ["lookup_invoice", "refund"], CUSTOM_ROUTING, outputs={"messages": returned}
        )
        assert got.score is True
        assert got.comment.startswith("strict/exact on outputs.messages: ")

    def test_a_transfer_prefix_alone_makes_no_handoff(self):
        # transfer_to_savings moves money: an ordinary tool, recorded as kind "tool".
        trace = trace_with_messages(
            handoff("transfer_to_billing", "billing", agent="supervisor"),
            work("transfer_to_savings", amount=5),
        )
        assert shorthand("strict", ["transfer_to_savings"], trace).score is True
        assert routing_names(trace)("transfer_to_billing") is True
        assert routing_names(trace)("transfer_to_savings") is False
        steps = one("unnecessary_steps", {"expected_tools": ["refund"]}, trace)
        assert (steps.score, steps.comment) == (1.0, "not needed ['transfer_to_savings']")
        # a trace with kinds and no handoff at all: transfer_ names are ordinary tools too
        plain = traced(("transfer_to_billing", {}), ("transfer_to_billing", {}))
        assert one("unnecessary_steps", {}, plain).score == 1.0

    def test_traces_stored_before_kinds_fall_back_to_the_prefixes(self):
        stored = {  # the shape written before tool calls had a kind or a handoff a via
            "agent_path": ["supervisor", "billing", "supervisor"],
            "handoffs": [
                {"source": "supervisor", "target": "billing", "tool": "transfer_to_billing"},
                {"source": "billing", "target": "supervisor", "tool": "assign_to_supervisor"},
            ],
            "tool_calls": [
                {"agent": "supervisor", "name": "transfer_to_billing", "args": {}},
                {"agent": "billing", "name": "refund", "args": {"amount": 10}},
                {"agent": "billing", "name": "transfer_back_to_supervisor", "args": {}},
                {"agent": "billing", "name": "assign_to_supervisor", "args": {}},
            ],
        }
        trace = Trace.from_dict(stored)
        assert [is_routing_call(c, trace) for c in trace.tool_calls] == [
            True,
            False,
            True,
            False,  # scored as those traces always were: by the two prefixes
        ]
        steps = one("unnecessary_steps", {"expected_tools": ["refund"]}, trace)
        assert (steps.score, steps.comment) == (1.0, "not needed ['assign_to_supervisor']")
        # once one call has a kind, the kinds decide and the prefixes mean nothing
        trace.tool_calls[3].kind = HANDOFF
        assert [is_routing_call(c, trace) for c in trace.tool_calls] == [
            False,
            False,
            False,
            True,
        ]
        # handoffs by edges only (a router graph) are no sign of an old trace
        edges = Trace(
            handoffs=[Handoff("router", "billing", via="edge")],
            tool_calls=[ToolCall("billing", "transfer_to_savings", {})],
        )
        assert is_routing_call(edges.tool_calls[0], edges) is False

    def test_unnecessary_steps_and_required_tools_by_kind(self):
        trace = Trace(
            tool_calls=[
                handoff("assign_to_fraud", "fraud", agent="supervisor"),
                work("fraud_check", claim=1),
                handoff("return_to_supervisor", "supervisor", agent="fraud"),
                handoff("assign_to_fraud", "fraud", agent="supervisor"),
                agent_tool("claims_team"),
                work("approve", claim=1),
            ]
        )
        # By name these would be 3 wasted: assign_to_fraud and return_to_supervisor outside
        # the expected set, then assign_to_fraud repeated. All three are routing.
        steps = one("unnecessary_steps", {"expected_tools": ["fraud_check", "approve"]}, trace)
        assert (steps.score, steps.comment) == (0.0, "no wasted tool calls")
        assert one("unnecessary_steps", {}, trace).score == 0.0
        # a requirement may name an agent run as a tool: it ran
        named = one("required_tools", {"required_tools": ["claims_team", "fraud_check"]}, trace)
        assert (named.score, named.comment) == (
            True,
            "called all of ['claims_team', 'fraud_check']",
        )
        ref = {"final_answer": "approve", "required_tools": ["fraud_check"]}
        got = soundness(ref, trace, {"final_answer": "approve"}, max_unnecessary=1)
        assert {k: s.score for k, s in got.items()} == {
            "outcome_correct": True,
            "used_required_tools": True,
            "unnecessary_steps": 0.0,
            "trajectory_sound": True,  # 0 < 1
            "correct_but_unsound": False,
        }


# --- which messages are judged ------------------------------------------------------------

# A supervisor's research run: the supervisor planned, delegated twice and published; the
# specialists searched, fetched and drafted inside their own conversations.
RESEARCH = trace_with_messages(
    work("plan", topic="tides"),
    handoff("delegate_to_research", "research", agent="supervisor"),
    work("search", q="tides"),
    work("fetch", url="https://example.org/tides"),
    handoff("delegate_to_writer", "writer", agent="supervisor"),
    work("draft", words=300),
    work("publish", slug="tides"),
)
# What output_mode="last_message" returns: the supervisor's own calls only.
RESEARCH_RETURNED = messages_of(*(RESEARCH.tool_calls[i] for i in (0, 1, 4, 6)))
RESEARCH_TOOLS = ["plan", "search", "fetch", "draft", "publish"]


class TestWhichMessagesAreJudged:
    def test_returned_messages_short_of_calls_give_way_to_the_trace(self):
        got = shorthand("strict", RESEARCH_TOOLS, RESEARCH, outputs={"messages": RESEARCH_RETURNED})
        assert got.score is True
        assert got.comment == (
            "strict/exact on trace messages (returned messages hold 2 of 5 non-routing tool "
            f"calls): expected {RESEARCH_TOOLS}; got {RESEARCH_TOOLS}"
        )

    def test_source_outputs_judges_the_returned_messages_anyway(self):
        got = shorthand(
            "strict",
            RESEARCH_TOOLS,
            RESEARCH,
            outputs={"messages": RESEARCH_RETURNED},
            source="outputs",
        )
        assert got.score is False
        assert got.comment == (
            f"strict/exact on outputs.messages: expected {RESEARCH_TOOLS}; "
            "got ['plan', 'publish']; missing ['search', 'fetch', 'draft']"
        )

    def test_routing_calls_missing_from_the_output_do_not_count(self):
        # add_handoff_messages=False: the output hides the handoffs, every tool call is there
        returned = messages_of(*(c for c in RESEARCH.tool_calls if not c.is_routing))
        messages, where = actual_messages({"messages": returned}, RESEARCH)
        assert (messages, where) == (returned, "outputs.messages")

    def test_returned_messages_holding_as_many_calls_win(self):
        returned = messages_of(*RESEARCH.tool_calls, ids=False)
        assert actual_messages({"messages": returned}, RESEARCH) == (returned, "outputs.messages")
        # no trace messages to compare with: the returned ones, whatever they hold
        bare = Trace(tool_calls=list(RESEARCH.tool_calls))
        assert actual_messages({"messages": RESEARCH_RETURNED}, bare)[1] == "outputs.messages"


def test_returned_messages_win_over_the_trace_unless_told():
    returned = {"messages": [assistant(WEATHER)]}
    trace = trace_with_messages(work("get_directions", destination="presidio"))
    ref = {"expected_tools": ["get_weather"]}
    auto = build_evaluator("trajectory_match")(outputs=returned, reference_outputs=ref, trace=trace)
    forced = build_evaluator("trajectory_match", {"source": "trace"})(
        outputs=returned, reference_outputs=ref, trace=trace
    )
    assert auto["score"] is True
    assert auto["comment"].startswith("strict/exact on outputs.messages: ")
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
    handoffs = Trace(tool_calls=[handoff("transfer_to_billing", "billing")] * 2)
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
    assert wasteful["trajectory_sound"].score is True  # 2 < 3, the default limit
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


# --- real graphs: langgraph-supervisor and langgraph-swarm, driven by scripted models --------

# create_react_agent is deprecated in langgraph 1.x, yet langgraph-supervisor builds on it.
graphs = pytest.mark.filterwarnings("ignore::langgraph.warnings.LangGraphDeprecationWarning")


@tool
def get_weather(city: str) -> str:
    """Current weather for a city."""
    return f"Sunny in {city}"


@tool
def lookup_invoice(invoice_id: str) -> str:
    """Look an invoice up."""
    return f"Invoice {invoice_id}: paid"


def react_agent(model: Any, tools: list[Any], name: str) -> Any:
    return create_react_agent(model, tools=tools, name=name, prompt=f"You are {name}.")


def weather_supervisor(visits: int = 1, **options: Any) -> Any:
    """The supervisor hands weather_agent the question ``visits`` times; each time the agent
    calls get_weather for SF, answers and is handed back."""
    steps = [reply(tools=[("get_weather", {"city": "SF"})]), reply("Sunny in SF.")] * visits
    weather = react_agent(scripted("weather-model", *steps), [get_weather], "weather_agent")
    billing = react_agent(scripted("billing-model"), [lookup_invoice], "billing_agent")
    prefix = options.get("handoff_tool_prefix") or "transfer_to_"
    supervisor = scripted(
        "supervisor-model",
        *[reply(tools=[(f"{prefix}weather_agent", {})])] * visits,
        reply("Final: sunny in SF."),
    )
    return create_supervisor([weather, billing], model=supervisor, **options).compile()


def run_graph(graph: Any, question: str) -> tuple[dict[str, Any], Trace]:
    recorder = TraceRecorder()
    result = graph.invoke({"messages": [HumanMessage(question)]}, config={"callbacks": [recorder]})
    return {"messages": result["messages"]}, recorder.trace()


def kinds(trace: Trace) -> list[tuple[str, bool]]:
    return [(c.name, c.is_routing) for c in trace.tool_calls]


@graphs
def test_supervisor_last_message_is_judged_on_the_trace():
    outputs, trace = run_graph(weather_supervisor(output_mode="last_message"), "Weather in SF?")
    # the returned state kept the supervisor's handoff and the hand-back, not get_weather
    assert [name for name, _ in tool_calls_of(outputs["messages"])] == [
        "transfer_to_weather_agent",
        "transfer_back_to_supervisor",
    ]
    got = shorthand("strict", ["get_weather"], trace, outputs=outputs)
    assert got.score is True
    assert got.comment == (
        "strict/exact on trace messages (returned messages hold 0 of 1 non-routing tool calls): "
        "expected ['get_weather']; got ['get_weather']"
    )
    forced = shorthand("strict", ["get_weather"], trace, outputs=outputs, source="outputs")
    assert forced.score is False
    assert forced.comment == (
        "strict/exact on outputs.messages: expected ['get_weather']; got []; "
        "missing ['get_weather']"
    )


@graphs
def test_supervisor_full_history_is_judged_on_the_returned_messages():
    outputs, trace = run_graph(weather_supervisor(output_mode="full_history"), "Weather in SF?")
    got = shorthand("strict", ["get_weather"], trace, outputs=outputs)
    assert got.score is True
    assert got.comment == (
        "strict/exact on outputs.messages: expected ['get_weather']; got ['get_weather']"
    )


@graphs
def test_supervisor_with_a_delegate_to_prefix():
    graph = weather_supervisor(visits=2, handoff_tool_prefix="delegate_to_")
    outputs, trace = run_graph(graph, "Weather in SF, twice?")
    assert (
        kinds(trace)
        == [
            ("delegate_to_weather_agent", True),
            ("get_weather", False),
            ("transfer_back_to_supervisor", True),
        ]
        * 2
    )
    got = shorthand("strict", ["get_weather", "get_weather"], trace, outputs=outputs)
    assert got.score is True
    assert got.comment == (
        "strict/exact on trace messages (returned messages hold 0 of 2 non-routing tool calls): "
        "expected ['get_weather', 'get_weather']; got ['get_weather', 'get_weather']"
    )
    # the second delegation is routing, not a repeated step; the second get_weather is one
    steps = one("unnecessary_steps", {"expected_tools": ["get_weather"]}, trace)
    assert (steps.score, steps.comment) == (1.0, "repeated ['get_weather']")


@graphs
def test_swarm_with_a_custom_handoff_tool():
    front = react_agent(
        scripted(
            "front-model",
            reply(tools=[("assign_to_billing", {})]),
            reply("Your invoice is paid."),
        ),
        [create_handoff_tool(agent_name="billing_Bob", name="assign_to_billing")],
        "front_desk",
    )
    bob = react_agent(
        scripted(
            "bob-model",
            reply(tools=[("lookup_invoice", {"invoice_id": "INV-1"})]),
            reply(tools=[("transfer_to_front_desk", {})]),
        ),
        [lookup_invoice, create_handoff_tool(agent_name="front_desk")],
        "billing_Bob",
    )
    graph = create_swarm([front, bob], default_active_agent="front_desk").compile()
    outputs, trace = run_graph(graph, "Is INV-1 paid?")
    assert kinds(trace) == [
        ("assign_to_billing", True),
        ("lookup_invoice", False),
        ("transfer_to_front_desk", True),
    ]
    got = shorthand("strict", ["lookup_invoice"], trace, outputs=outputs)
    assert got.score is True
    assert got.comment == (
        "strict/exact on outputs.messages: expected ['lookup_invoice']; got ['lookup_invoice']"
    )
    steps = one("unnecessary_steps", {"expected_tools": ["lookup_invoice"]}, trace)
    assert (steps.score, steps.comment) == (0.0, "no wasted tool calls")
