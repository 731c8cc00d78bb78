"""Simulated users: the LLM user through a real ChatOpenAI client against the loopback
OpenAI-compatible server, a user function, the offline demo customer, the stopping rules,
and the ``simulated_user:`` spec section. A small loop stands in for the conversation
driver: it asks the source for a turn, has the target answer it, and extends the
transcript with the user's message and the answer."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from openai_server import openai_server

from agenteval_cli.core.errors import UserError
from agenteval_cli.core.records import Example, ModelCall
from agenteval_cli.data.conversations import Resume
from agenteval_cli.execution.loading import load_simulated_user
from agenteval_cli.spec.model import load_spec
from agenteval_cli.targets.users import (
    USER_AGENT,
    FunctionUser,
    ScriptedTurns,
    SimulatedTurns,
    SimulatedUser,
    SimulatedUserError,
    StopRule,
    TurnSource,
    system_prompt,
    transcript_message,
    turn_source,
)
from agenteval_cli.trace.recorder import capture

Answer = Callable[[list[dict[str, Any]], Any], Awaitable[str]]
OPENING = "Generate an initial query to start a conversation based on your instructions."
STOP_LINE = (
    "When the assistant has solved your problem, or you have nothing left to ask, reply "
    "with ###DONE### and nothing else."
)


async def numbered_answers(transcript: list[dict[str, Any]], turn: Any) -> str:
    return f"answer {len(transcript) // 2 + 1}"


async def converse(
    source: TurnSource, answer: Answer = numbered_answers, scores: Any = None
) -> tuple[list[Any], list[dict[str, Any]], list[list[ModelCall]]]:
    """The turns the source gave, the transcript, and each ``next_turn``'s user calls."""
    turns: list[Any] = []
    transcript: list[dict[str, Any]] = []
    calls: list[list[ModelCall]] = []
    while True:
        turn = await source.next_turn(transcript, scores(len(turns)) if scores else None)
        calls.append(source.user_calls)
        if turn is None:
            return turns, transcript, calls
        turns.append(turn)
        key = getattr(source, "input_key", "question")
        transcript.append(transcript_message(turn, input_key=key))
        transcript.append({"role": "assistant", "content": await answer(transcript, turn)})


def write_spec(folder: Path, section: str, evaluators: str = "[routing_accuracy]") -> Path:
    (folder / "data.jsonl").write_text('{"inputs": {"question": "hi"}}\n')
    spec = folder / "spec.yaml"
    spec.write_text(
        "dataset: data.jsonl\n"
        "targets:\n"
        "  supervisor: agenteval_cli.demo.supervisor:graph\n"
        f"evaluators: {evaluators}\n" + section
    )
    return spec


def llm_user(tmp_path: Path, base_url: str, extra: str = "") -> SimulatedUser:
    spec = write_spec(
        tmp_path,
        "simulated_user:\n"
        "  model: 'openai:gpt-4.1-mini'\n"
        f"  base_url: '{base_url}'\n"
        "  model_kwargs: {max_retries: 0}\n" + extra,
    )
    loaded = load_simulated_user(load_spec(spec))
    assert loaded is not None
    return loaded


# --- the LLM user ---------------------------------------------------------------------


def test_llm_user_plays_the_row_and_stops_at_the_marker(tmp_path, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    replies = [
        "I was charged twice in May.",
        "Can you also send the invoice?",
        "Thanks! ###DONE###",
    ]
    row = Example(id="c1", inputs={"persona": "Dana, a busy admin", "scenario": "a double charge"})
    with openai_server(replies) as server:
        server.usage = (57, 9)
        user = llm_user(
            tmp_path, server.base_url, "  system: 'You are {persona}. Problem: {scenario}.'\n"
        )
        turns, transcript, calls = asyncio.run(converse(user.turns_for(row)))
    source_turns = [{"question": "I was charged twice in May."}]
    source_turns.append({"question": "Can you also send the invoice?"})
    assert turns == source_turns
    system = {
        "role": "system",
        "content": f"You are Dana, a busy admin. Problem: a double charge.\n{STOP_LINE}",
    }
    sent = [r["messages"] for r in server.requests]
    assert sent[0] == [system, {"role": "user", "content": OPENING}]
    # openevals swaps the roles: the user's own messages go to its model as the assistant's
    assert sent[2] == [
        system,
        {"role": "assistant", "content": "I was charged twice in May."},
        {"role": "user", "content": "answer 1"},
        {"role": "assistant", "content": "Can you also send the invoice?"},
        {"role": "user", "content": "answer 2"},
    ]
    assert transcript[-1] == {"role": "assistant", "content": "answer 2"}
    # one call per next_turn, the last being the reply that ended it, as the server counted it
    assert [[(c.agent, c.input_tokens, c.output_tokens) for c in each] for each in calls] == [
        [(USER_AGENT, 57, 9)]
    ] * 3


def test_llm_user_calls_stay_out_of_the_targets_trace(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    row = Example(id="c2", inputs={"scenario": "reset MFA"})
    with openai_server(["Please reset my MFA.", "###DONE###"]) as server:
        source = llm_user(tmp_path, server.base_url).turns_for(row)
        with capture() as target_recorder:  # a driver that traces around the whole loop
            turns, _, calls = asyncio.run(converse(source))
    assert turns == [{"question": "Please reset my MFA."}]
    assert target_recorder.trace().model_calls == []
    assert [len(each) for each in calls] == [1, 1]
    assert source.ended_because == "the user said it is done"


def test_a_rows_question_is_the_opening_message_and_the_default_prompt_uses_it(
    tmp_path, monkeypatch
):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    row = Example(id="c3", inputs={"question": "Where is invoice INV-2041?"})
    with openai_server(["And the one before it?", "###DONE###"]) as server:
        source = llm_user(tmp_path, server.base_url).turns_for(row, input_key="query")
        turns, _, calls = asyncio.run(converse(source))
    assert turns == [{"query": "Where is invoice INV-2041?"}, {"query": "And the one before it?"}]
    assert [len(each) for each in calls] == [0, 1, 1]  # the opening needed no model call
    assert len(server.requests) == 2
    system = server.requests[0]["messages"][0]["content"]
    assert system.splitlines()[1:] == ["Your request: Where is invoice INV-2041?", STOP_LINE]


def test_the_marker_is_of_the_spec_and_a_template_naming_it_gets_no_stop_line(
    tmp_path, monkeypatch
):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    row = Example(id="c4", inputs={"scenario": "upgrade"})
    extra = "  system: 'Want: {scenario}. Say <bye> when done.'\n  stop: {marker: '<bye>'}\n"
    with openai_server(["Upgrade me", "ok <bye>"]) as server:
        source = llm_user(tmp_path, server.base_url, extra).turns_for(row)
        turns, _, _ = asyncio.run(converse(source))
    assert turns == [{"question": "Upgrade me"}]
    assert server.requests[0]["messages"][0]["content"] == "Want: upgrade. Say <bye> when done."


def test_a_template_is_filled_with_the_rows_fields_and_literal_braces():
    inputs = {"scenario": "refund", "details": {"amount": 49}}
    text = system_prompt("Goal {{JSON}}: {scenario}, {details}. Then ###DONE###.", inputs)
    assert text == 'Goal {JSON}: refund, {"amount": 49}. Then ###DONE###.'


def test_a_template_field_the_row_lacks_is_the_conversations_error():
    with pytest.raises(SimulatedUserError) as caught:
        system_prompt("You are {persona}.", {"scenario": "x"})
    assert str(caught.value) == (
        "simulated_user.system names {persona}, which this row's inputs do not have "
        "(they have: scenario)"
    )


def test_a_failed_user_call_is_a_simulated_user_error_with_its_calls_kept(tmp_path, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with openai_server([500]) as server:
        source = llm_user(tmp_path, server.base_url).turns_for(Example(id="c5", inputs={}))
        with pytest.raises(SimulatedUserError) as caught:
            asyncio.run(source.next_turn([]))
    assert str(caught.value) == (
        "the simulated user failed: OpenAIAPIError: Error code: 500 - scripted failure"
    )
    assert [(c.agent, c.failed) for c in source.user_calls] == [(USER_AGENT, True)]
    assert source.ended_because == str(caught.value)
    assert asyncio.run(source.next_turn([])) is None
    assert len(server.requests) == 1  # an ended conversation asks nothing more


# --- a user function ------------------------------------------------------------------


def test_a_sync_user_function_sees_the_transcript_inputs_and_turn_number():
    seen: list[tuple[list[dict[str, Any]], dict[str, Any], int]] = []

    def user(transcript, *, inputs, turn):
        seen.append((transcript, inputs, turn))
        return [inputs["first"], {"question": "q2", "account": "A-7"}, {"resume": "yes"}, None][
            turn - 1
        ]

    row = Example(id="f1", inputs={"first": "hello"})
    source = SimulatedTurns(FunctionUser(user), row, max_turns=10)
    turns, transcript, calls = asyncio.run(converse(source))
    assert turns == [{"question": "hello"}, {"question": "q2", "account": "A-7"}, Resume("yes")]
    assert [turn for _, _, turn in seen] == [1, 2, 3, 4]
    assert seen[1][0] == [
        {"role": "user", "content": "hello"},
        {"role": "assistant", "content": "answer 1"},
    ]
    assert seen[3][0] == transcript
    assert all(inputs == {"first": "hello"} for _, inputs, _ in seen)
    assert source.ended_because == "the user said it is done"
    assert calls == [[], [], [], []]


def test_an_async_user_function_and_its_mutations_do_not_reach_the_row():
    async def user(transcript, *, inputs, turn):
        inputs["first"] = "changed"
        transcript.clear()
        return None if turn > 2 else f"message {turn}"

    row = Example(id="f2", inputs={"first": "kept"})
    turns, transcript, _ = asyncio.run(
        converse(SimulatedTurns(FunctionUser(user), row, max_turns=5))
    )
    assert turns == [{"question": "message 1"}, {"question": "message 2"}]
    assert len(transcript) == 4
    assert row.inputs == {"first": "kept"}


@pytest.mark.parametrize(
    ("reply", "message"),
    [
        (
            42,
            "the simulated user returned int 42: return a message (str), the turn's input "
            "fields (dict), or None when it is done",
        ),
        (
            {},
            "the simulated user returned dict {}: return a message (str), the turn's input "
            "fields (dict), or None when it is done",
        ),
        ("   ", "the simulated user replied with an empty message"),
    ],
)
def test_a_reply_that_is_no_turn_is_one_line(reply, message):
    source = SimulatedTurns(
        FunctionUser(lambda t, *, inputs, turn: reply), Example("x", {}), max_turns=3
    )
    with pytest.raises(SimulatedUserError) as caught:
        asyncio.run(source.next_turn([]))
    assert str(caught.value) == message


def test_a_user_function_that_raises_fails_the_turn():
    def user(transcript, *, inputs, turn):
        raise KeyError("scenario")

    source = SimulatedTurns(FunctionUser(user), Example("x", {}), max_turns=3)
    with pytest.raises(
        SimulatedUserError, match=r"^the simulated user failed: KeyError: 'scenario'$"
    ):
        asyncio.run(source.next_turn([]))


def test_a_sync_user_function_calling_a_model_is_traced_as_the_users(monkeypatch):
    from langchain_openai import ChatOpenAI

    with openai_server(["What is my plan?"]) as server:
        server.usage = (11, 4)
        model = ChatOpenAI(model="gpt-4.1-mini", base_url=server.base_url, api_key="k")

        def user(transcript, *, inputs, turn):
            return None if turn > 1 else str(model.invoke("write a question").content)

        source = SimulatedTurns(FunctionUser(user), Example("t", {}), max_turns=3)
        with capture() as target_recorder:
            turns, _, calls = asyncio.run(converse(source))
    assert turns == [{"question": "What is my plan?"}]
    assert [
        [(c.agent, c.model, c.input_tokens, c.output_tokens) for c in each] for each in calls
    ] == [
        [(USER_AGENT, "gpt-4.1-mini", 11, 4)],
        [],
    ]
    assert target_recorder.trace().model_calls == []


def test_the_transcript_shows_a_turns_message_its_fields_or_its_resume_value():
    assert transcript_message({"q": "hi", "plan": "pro"}, input_key="q") == {
        "role": "user",
        "content": "hi",
    }
    assert transcript_message({"plan": "pro"}) == {"role": "user", "content": '{"plan": "pro"}'}
    assert transcript_message(Resume({"approved": True})) == {
        "role": "user",
        "content": '{"approved": true}',
    }


# --- stopping rules -------------------------------------------------------------------


def test_max_turns_ends_a_user_that_never_stops():
    source = SimulatedTurns(
        FunctionUser(lambda t, *, inputs, turn: f"again {turn}"), Example("m", {}), max_turns=3
    )
    turns, _, _ = asyncio.run(converse(source))
    assert turns == [{"question": f"again {n}"} for n in (1, 2, 3)]
    assert source.ended_because == "max_turns reached (3)"
    assert asyncio.run(source.next_turn([])) is None  # stays over


def test_the_judge_ends_the_conversation_once_the_last_turn_scores_the_threshold():
    stop = StopRule(judge="resolved", threshold=0.8)
    source = SimulatedTurns(
        FunctionUser(lambda t, *, inputs, turn: f"try {turn}"),
        Example("j", {}),
        max_turns=9,
        stop=stop,
    )
    by_turns_done = {0: None, 1: {"resolved": 0.5}, 2: {"resolved": None}, 3: {"resolved": 0.8}}
    turns, _, _ = asyncio.run(converse(source, scores=lambda done: by_turns_done[done]))
    assert turns == [{"question": "try 1"}, {"question": "try 2"}, {"question": "try 3"}]
    assert source.ended_because == "judge: resolved (resolved scored 0.8 >= 0.8)"


def test_a_bool_judge_score_of_true_is_resolved():
    source = SimulatedTurns(
        FunctionUser(lambda t, *, inputs, turn: "hi"),
        Example("j", {}),
        max_turns=9,
        stop=StopRule(judge="ok"),
    )
    turns, _, _ = asyncio.run(converse(source, scores=lambda done: {"ok": done >= 2}))
    assert len(turns) == 2
    assert source.ended_because == "judge: resolved (ok scored 1 >= 1)"


# --- scripted turns and the choice of source ------------------------------------------


def test_scripted_turns_give_the_rows_turns_in_order():
    row = Example("s", {"turns": ["refund me", {"question": "why", "plan": "pro"}, {"resume": 3}]})
    source = turn_source(row, input_key="q", simulated=SimulatedUser(FunctionUser(print)))
    assert isinstance(source, ScriptedTurns)  # a row's script wins over the simulated user
    turns, _, calls = asyncio.run(converse(source, answer=numbered_answers))
    assert turns == [{"q": "refund me"}, {"question": "why", "plan": "pro"}, Resume(3)]
    assert source.ended_because == "the script's turns are used up"
    assert calls == [[], [], [], []]


def test_rows_without_turns_are_simulated_only_when_there_is_a_user():
    row = Example("r", {"question": "hi"})
    assert turn_source(row) is None
    user = SimulatedUser(FunctionUser(print), max_turns=2)
    source = turn_source(row, simulated=user, input_key="query")
    assert isinstance(source, SimulatedTurns)
    assert (source.max_turns, source.input_key) == (2, "query")


# --- the demo's customer --------------------------------------------------------------


def test_the_demo_customer_has_the_same_conversation_with_a_real_graph_twice(tmp_path):
    from agenteval_cli.demo.swarm import graph

    spec = write_spec(
        tmp_path,
        "simulated_user:\n  function: agenteval_cli.demo.users:scripted_customer\n  max_turns: 5\n",
    )
    user = load_simulated_user(load_spec(spec))
    assert user is not None
    row = Example(
        "d",
        {
            "scenario": "I was charged twice in May, please refund $49.",
            "followups": [
                "Can you send me a copy of invoice INV-2041?",
                "Who is my account manager?",
            ],
        },
    )

    async def swarm_answer(transcript: list[dict[str, Any]], turn: Any) -> str:
        result = await graph.ainvoke({"messages": list(transcript)})
        return str(result["messages"][-1].content)

    first = asyncio.run(converse(user.turns_for(row), answer=swarm_answer))
    second = asyncio.run(converse(user.turns_for(row), answer=swarm_answer))
    assert first == second
    turns, transcript, calls = first
    assert turns == [
        {"question": "I was charged twice in May, please refund $49."},
        {"question": "Can you send me a copy of invoice INV-2041?"},
        {"question": "Who is my account manager?"},
    ]
    assert len(transcript) == 6 and "$49" in transcript[1]["content"]
    assert calls == [[], [], [], []]


def test_the_demo_customer_is_done_when_its_followups_are_used_up():
    from agenteval_cli.demo.users import scripted_customer

    inputs = {"question": "hello", "followups": ["one more"]}
    said = [scripted_customer([], inputs=inputs, turn=n) for n in (1, 2, 3)]
    assert said == ["hello", "one more", None]
    with pytest.raises(ValueError, match="no 'scenario'"):
        scripted_customer([], inputs={}, turn=1)


# --- the spec section -----------------------------------------------------------------


def test_the_spec_section_with_its_defaults(tmp_path):
    spec = load_spec(write_spec(tmp_path, "simulated_user: {function: users.py:customer}\n"))
    section = spec.simulated_user
    assert section is not None
    assert (section.function, section.model, section.max_turns) == ("users.py:customer", None, 5)
    assert (section.stop.marker, section.stop.judge, section.stop.threshold) == (
        "###DONE###",
        None,
        1.0,
    )
    assert load_spec(write_spec(tmp_path, "")).simulated_user is None


@pytest.mark.parametrize(
    ("section", "message"),
    [
        pytest.param(
            "simulated_user: {max_turns: 3}\n",
            "spec.yaml:5: simulated_user: give either 'function' or 'model' (function: "
            "pkg.mod:fn for a user of your own, or model: openai:gpt-4.1-mini for an LLM user)",
            id="neither",
        ),
        pytest.param(
            "simulated_user: {function: a.b:c, model: 'openai:x'}\n",
            "spec.yaml:5: simulated_user: both 'function' and 'model' given (function: "
            "pkg.mod:fn for a user of your own, or model: openai:gpt-4.1-mini for an LLM user)",
            id="both",
        ),
        pytest.param(
            "simulated_user:\n  function: a.b:c\n  system: hi\n",
            "spec.yaml:7: 'system' is only for a model user in simulated_user (a function "
            "writes its own messages; remove it)",
            id="system-with-a-function",
        ),
        pytest.param(
            "simulated_user: {function: nocolon}\n",
            "spec.yaml:5: simulated_user.function: malformed import path 'nocolon': no ':attr' "
            "(write 'package.module:attr' or 'path/to/file.py:attr')",
            id="import-path",
        ),
        pytest.param(
            "simulated_user:\n  model: 'openai:x'\n  system: 'You are {persona'\n",
            "spec.yaml:7: simulated_user.system: expected '}' before end of string in "
            "'You are {persona' (write {{ and }} for literal braces)",
            id="system-template",
        ),
        pytest.param(
            "simulated_user:\n  model: 'openai:x'\n  max_turns: 0\n",
            "spec.yaml:7: simulated_user.max_turns: expected an integer >= 1, got 0",
            id="max-turns",
        ),
        pytest.param(
            "simulated_user:\n  model: 'openai:x'\n  stop: {judge: resolvd}\n",
            "spec.yaml:7: simulated_user.stop.judge: 'resolvd' is not an evaluator of this "
            "spec (did you mean 'resolved'?)",
            id="judge-not-an-evaluator",
        ),
        pytest.param(
            "simulated_user:\n  model: 'openai:x'\n  stop: {threshold: 0.5}\n",
            "spec.yaml:7: 'threshold' needs 'judge' in simulated_user.stop (name the evaluator "
            "whose score ends the conversation, e.g. {judge: resolved, threshold: 1})",
            id="threshold-without-judge",
        ),
        pytest.param(
            "simulated_user:\n  model: 'openai:x'\n  stop: {judge: resolved, threshold: -1}\n",
            "spec.yaml:7: simulated_user.stop.threshold: expected a number >= 0, got -1",
            id="threshold-range",
        ),
        pytest.param(
            "simulated_user:\n  model: 'openai:x'\n  stop: {marker: ''}\n",
            "spec.yaml:7: simulated_user.stop.marker: expected a non-empty string, got ''",
            id="empty-marker",
        ),
        pytest.param(
            "simulated_user:\n  model: 'openai:x'\n  temperature: 0\n",
            "spec.yaml:7: unknown key 'temperature' in simulated_user (valid keys: function, "
            "model, base_url, model_kwargs, system, max_turns, stop)",
            id="unknown-key",
        ),
        pytest.param(
            "simulated_user: 'openai:x'\n",
            "spec.yaml:5: simulated_user: expected a mapping, got 'openai:x'",
            id="not-a-mapping",
        ),
    ],
)
def test_spec_section_errors_are_one_line(tmp_path, monkeypatch, section, message):
    monkeypatch.chdir(tmp_path)
    write_spec(
        tmp_path, section, evaluators="[routing_accuracy, {name: resolved, type: llm_judge}]"
    )
    with pytest.raises(UserError) as caught:
        load_spec("spec.yaml")
    assert str(caught.value) == message


@pytest.mark.parametrize(
    ("section", "message"),
    [
        pytest.param(
            "simulated_user: {function: 'agenteval_cli.demo.users:scripted_custmer'}\n",
            "spec.yaml:5: 'agenteval_cli.demo.users' has no attribute 'scripted_custmer' "
            "(did you mean 'scripted_customer'?)",
            id="no-such-function",
        ),
        pytest.param(
            "simulated_user: {function: 'agenteval_cli.demo.users:__doc__'}\n",
            "spec.yaml:5: simulated_user.function 'agenteval_cli.demo.users:__doc__' is a str, "
            "not a function (name a function fn(transcript, *, inputs, turn) -> str | dict | None)",
            id="not-callable",
        ),
        pytest.param(
            "simulated_user: {function: 'nosuch_users_pkg.mod:fn'}\n",
            "spec.yaml:5: cannot import 'nosuch_users_pkg.mod': no module named "
            "'nosuch_users_pkg' (check the spelling, or install the package into this environment)",
            id="no-such-module",
        ),
        pytest.param(
            "simulated_user: {model: 'openai:gpt-4.1-mini'}\n",
            "spec.yaml:5: simulated_user.model 'openai:gpt-4.1-mini' cannot run: OPENAI_API_KEY "
            "is not set (set OPENAI_API_KEY, or give a base_url)",
            id="no-key",
        ),
    ],
)
def test_loading_the_user_fails_with_exit_2_and_one_line(tmp_path, monkeypatch, section, message):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    write_spec(tmp_path, section)
    with pytest.raises(UserError) as caught:
        load_simulated_user(load_spec("spec.yaml"))
    assert (str(caught.value), caught.value.exit_code) == (message, 2)


def test_the_users_cache_identity_changes_with_its_model_options_and_holds_no_secret(tmp_path):
    """Another temperature is another user: its conversations are not served from the
    cache. A secret-named option (an API key) changes no conversation: its value is not in
    the identity, and another one leaves it as it was."""

    def identity(kwargs: str) -> str:
        folder = tmp_path / str(abs(hash(kwargs)))
        folder.mkdir()
        spec = write_spec(
            folder,
            "simulated_user:\n"
            "  model: 'openai:user-model'\n"
            "  base_url: 'http://127.0.0.1:9/v1'\n"
            f"  model_kwargs: {kwargs}\n",
        )
        user = load_simulated_user(load_spec(spec))
        assert user is not None
        return user.identity

    cold = identity("{temperature: 0, api_key: sk-first-secret}")
    warm = identity("{temperature: 0.7, api_key: sk-first-secret}")
    rekeyed = identity("{temperature: 0, api_key: sk-other-secret}")
    assert cold != warm
    assert cold == rekeyed
    assert "sk-first-secret" not in cold and "sk-other-secret" not in rekeyed
