"""Conversations over graphs whose models decide from what they are sent (forms.conversing),
run through the CLI: every score per turn and per conversation, and the experiments'
figures, held against the truth the models' own log gives (forms.conversation_truth).

A langgraph-swarm whose agents hand off mid-conversation, a langgraph-supervisor, an agent
that stops at ``interrupt()`` and is resumed (or is not), a function keeping its own history
around a swarm without a checkpointer, and a router graph without one.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

import pytest
from forms import conversing
from forms.conversation_truth import ConversationTruth, conversation_truth
from forms.harness import BASE_EVALUATORS, Row, Run, _per_agent, run_spec, write_form
from forms.model import LOG
from forms.truth import Form, truth_of

from agenteval_cli.store.db import Store

pytestmark = [
    pytest.mark.slow,
    pytest.mark.filterwarnings("ignore::langgraph.warnings.LangGraphDeprecationWarning"),
]


def conversation(example_id: str, turns: list[Any], refs: list[dict[str, Any]], **whole: Any):
    return {
        "id": example_id,
        "inputs": {"turns": turns},
        "outputs": {"turns": refs, **whole},
    }


REFUND, EMAIL, FIX = ["refunded"], ["email updated"], ["new update"]
HOURS = ["9 to 5"]

SWARM_ROWS = [
    # billing answers twice, hands the email to account, account hands the refund back
    conversation(
        "swarm-drift",
        [
            "I need a refund for my invoice.",
            "And a refund on the earlier invoice too.",
            "Now update my email address.",
            "One more refund, please.",
            "Thanks!",
        ],
        [
            {"expected_agents": ["billing"], "must_mention": REFUND},
            {"expected_agents": ["billing"], "must_mention": REFUND},
            {"expected_agents": ["account"], "must_mention": EMAIL},
            {"expected_agents": ["billing"], "must_mention": REFUND},
            {"must_mention": HOURS},
        ],
        expected_agents=["billing", "account"],
    ),
    conversation(
        "swarm-tech-then-two",
        [
            "My app shows an error after the crash.",
            "The crash is back again.",
            "Refund the invoice and update my email.",
        ],
        [
            {"expected_agents": ["tech"], "must_mention": FIX},
            {"expected_agents": ["tech"], "must_mention": FIX},
            {"expected_agents": ["billing", "account"], "must_mention": REFUND + EMAIL},
        ],
    ),
    # account stops at interrupt() in the turn billing handed to it; the resume goes on there
    conversation(
        "swarm-cancel-midway",
        [
            "Please refund my invoice.",
            "Now cancel my subscription.",
            {"resume": "yes"},
            "Thank you.",
        ],
        [
            {"expected_agents": ["billing"], "must_mention": REFUND},
            {"expected_agents": ["account"]},
            {"must_mention": ["cancelled"]},
            {"must_mention": HOURS},
        ],
    ),
    # only the conversation's own references: tech is never reached, its fix never said
    {
        "id": "swarm-whole-only",
        "inputs": {"turns": ["My email address needs updating.", "Thanks"]},
        "outputs": {"expected_agents": ["tech", "account"], "must_mention": ["new update"]},
    },
    # the second turn's reference asks for an agent the swarm never reaches: not resolved
    conversation(
        "swarm-email-then-thanks",
        ["Please update my email.", "Thanks a lot."],
        [
            {"expected_agents": ["account"], "must_mention": EMAIL},
            {"expected_agents": ["billing"], "must_mention": HOURS},
        ],
    ),
]
SUPERVISOR_ROWS = [
    conversation(
        "supervisor-refund-email-thanks",
        ["Refund my invoice.", "Also update my email.", "Thanks."],
        [
            {"expected_agents": ["billing"], "must_mention": REFUND},
            {"expected_agents": ["account"], "must_mention": EMAIL},
            {"must_mention": HOURS},
        ],
        must_mention=["refunded", "email updated"],
    ),
    conversation(
        "supervisor-two-then-one",
        ["The app crashed with an error and I want a refund for the invoice.", "Refund it again."],
        [
            {"expected_agents": ["tech", "billing"], "must_mention": FIX + REFUND},
            {"expected_agents": ["billing"], "must_mention": REFUND},
        ],
    ),
]
DESK_ROWS = [
    conversation(
        "desk-cancel-yes-then-email",
        ["Please cancel my subscription.", {"resume": "yes"}, "Also update my email address."],
        [
            {"expected_agents": ["desk"]},
            {"must_mention": ["cancelled"]},
            {"must_mention": EMAIL},
        ],
    ),
    conversation(
        "desk-cancel-unanswered", ["Cancel my subscription now."], [{"expected_agents": ["desk"]}]
    ),
    conversation(
        "desk-cancel-no",
        ["Cancel the subscription.", {"resume": "no"}],
        [{}, {"must_mention": ["kept"]}],
        must_mention=["kept"],
    ),
]
OWN_HISTORY_ROWS = [
    conversation(
        "own-refund-email-thanks",
        ["Refund my invoice, please.", "Update my email address.", "Thanks, bye."],
        [
            {"expected_agents": ["billing"], "must_mention": REFUND},
            {"expected_agents": ["account"], "must_mention": EMAIL},
            {"must_mention": HOURS},
        ],
    ),
]
ROUTER_ROWS = [
    conversation(
        "router-three",
        ["Refund my invoice now.", "Update my email address now.", "Refund the invoice again."],
        [
            {"expected_agents": ["billing"], "must_mention": REFUND},
            {"expected_agents": ["account"], "must_mention": EMAIL},
            {"expected_agents": ["billing"], "must_mention": REFUND},
        ],
    ),
    conversation(
        "router-crash-then-hi",
        ["The app crash is bad.", "Hello there."],
        [{"expected_agents": ["tech"], "must_mention": FIX}, {"must_mention": HOURS}],
    ),
]

# target -> (its import path, the graph name its models log, its rows, what the test knows)
CASES: dict[str, tuple[str, str, list[dict[str, Any]], Form]] = {
    "swarm": ("forms.conversing:swarm", "conv_swarm", SWARM_ROWS, Form()),
    "supervisor": (
        "forms.conversing:supervisor",
        "conv_supervisor",
        SUPERVISOR_ROWS,
        Form(coordinators=frozenset({"supervisor"})),
    ),
    "desk": ("forms.conversing:desk", "conv_desk", DESK_ROWS, Form()),
    "own_history": (
        "forms.conversing:own_history",
        "conv_own_history",
        OWN_HISTORY_ROWS,
        Form(),
    ),
    "router": ("forms.conversing:router", "conv_router", ROUTER_ROWS, Form()),
}
# the experiments' figures held against the truth's means over conversations
MEANS = (
    "turns",
    "resolved",
    "turns_to_resolution",
    "agent_continuity",
    "model_calls",
    "followup_model_calls",
    "followup_cost_usd",
    "conversation_handoffs",
    "conversation_ping_pong",
    "routing_accuracy",
    "handoff_chain_length",
    "cost_usd",
)


def _same(got: Any, want: Any) -> bool:
    if want is None or got is None:
        return got is None and want is None
    if isinstance(want, bool) or isinstance(got, bool):
        return bool(got) == want and float(got) == float(want)
    return math.isclose(float(got), float(want), rel_tol=1e-9, abs_tol=1e-12)


def mismatches_of_one(result: dict[str, Any], truth: ConversationTruth, where: str) -> list[str]:
    """How one conversation's result (its ``--json`` entry) differs from the truth."""
    problems: list[str] = []
    if result["status"] != truth.status:
        problems.append(f"{where}: status {result['status']} != {truth.status}")
    turns = [t for t in result["turns"] if t.get("sent", True)]
    if len(turns) != len(truth.turns):
        problems.append(f"{where}: {len(turns)} turns != {len(truth.turns)} logged")
        return problems
    for number, (got, want) in enumerate(zip(turns, truth.turns, strict=True), 1):
        if got["trace"]["agent_path"] != want.path:
            problems.append(
                f"{where} turn {number}: agent_path {got['trace']['agent_path']} != {want.path}"
            )
        for key, value in want.scores().items():
            if not _same(got["scores"].get(key, "missing"), value):
                problems.append(
                    f"{where} turn {number}: {key} = {got['scores'].get(key, 'missing')!r}"
                    f", truth {value!r}"
                )
    for key, value in truth.scores().items():
        if not _same(result["scores"].get(key, "missing"), value):
            problems.append(
                f"{where}: {key} = {result['scores'].get(key, 'missing')!r}, truth "
                f"{value!r} ({result['comments'].get(key)})"
            )
    return problems


def mismatches(run: Run, target: str, truths: dict[str, ConversationTruth]) -> list[str]:
    problems: list[str] = []
    for row in run.rows[target]:
        truth, where = truths[row.example_id], f"{target}/{row.example_id}"
        problems += mismatches_of_one(row.json, truth, where)
        # the stored conversation's calls, tokens and cost per agent: --by-agent reads them
        every = truth_of([c for turn in truth.turns for c in turn.truth.calls], truth.form)
        problems += _per_agent(where, row.trace, every, truth.form)
    metrics = run.metrics(target)
    for key in MEANS:
        values = [t.scores()[key] for t in truths.values()]
        known = [float(v) for v in values if v is not None]
        want = sum(known) / len(known) if known else None
        if not _same(metrics.get(key, "missing"), want):
            problems.append(f"{target}: metric {key} = {metrics.get(key, 'missing')!r}, {want!r}")
    interrupted = sum(t.status == "interrupted" for t in truths.values()) / len(truths)
    if not _same(metrics.get("interrupt_rate"), interrupted):
        problems.append(f"{target}: interrupt_rate {metrics.get('interrupt_rate')!r}")
    return problems


@pytest.fixture(scope="module")
def heldout(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Run]:
    """One run of each case's target on its rows."""
    conversing.SEEN.clear()
    runs = {}
    for name, (path, _, rows, _) in CASES.items():
        folder = tmp_path_factory.mktemp(name)
        # one desk conversation of three ends at an interrupt nothing answers
        allowed = {"max_interrupt_rate": 0.5} if name == "desk" else {}
        runs[name] = run_spec(folder, targets={name: path}, rows=rows, name=name, **allowed)
    return runs


def truths_of(run: Run, target: str) -> dict[str, ConversationTruth]:
    _, graph, rows, form = CASES[target]
    return {
        row["id"]: conversation_truth(run.calls, graph, row, form, pausing=(conversing.CANCEL,))
        for row in rows
    }


def transcript(result: dict) -> list[tuple]:
    """What a stored conversation said and did, turn by turn (its latencies aside): the same
    for a simulated user that writes the same conversation twice."""
    return [
        (
            turn["inputs"],
            turn["outputs"]["final_response"],
            turn["trace"]["agent_path"],
            {k: v for k, v in turn["scores"].items() if "latency" not in k},
        )
        for turn in result["turns"]
    ]


@pytest.mark.parametrize("target", list(CASES))
def test_every_metric_per_turn_and_per_conversation_matches_the_log(heldout, target) -> None:
    run = heldout[target]
    problems = mismatches(run, target, truths_of(run, target))
    assert not problems, "\n" + "\n".join(problems)


@pytest.mark.parametrize("target", list(CASES))
def test_each_turn_reaches_the_models_with_every_message_of_the_conversation_once(
    heldout, target
) -> None:
    """A checkpointer graph was sent only the new message, a graph without one the history
    once, the function its own: the k-th message turn's calls each saw k user messages, a
    resume none more."""
    run = heldout[target]
    for row_id, truth in truths_of(run, target).items():
        script = next(r for r in CASES[target][2] if r["id"] == row_id)["inputs"]["turns"]
        said = 0
        for turn, sent in zip(truth.turns, script, strict=False):
            said += 0 if isinstance(sent, dict) and "resume" in sent else 1
            assert {call.humans for call in turn.truth.calls} == {said}, (row_id, turn.path)


def test_the_function_keeping_its_own_history_is_given_the_documented_form(heldout) -> None:
    run = heldout["own_history"]
    (row,) = OWN_HISTORY_ROWS
    questions = row["inputs"]["turns"]
    answers = next(r.json["turns"] for r in run.rows["own_history"])
    assert [seen["question"] for seen in conversing.SEEN] == questions
    assert len({seen["thread_id"] for seen in conversing.SEEN}) == 1
    for number, seen in enumerate(conversing.SEEN):
        history = []
        for question, answer in zip(questions[:number], answers, strict=False):
            history.append({"role": "user", "content": question})
            history.append({"role": "assistant", "content": answer["outputs"]["final_response"]})
        assert seen["history"] == history
        assert set(seen) == {"question", "history", "thread_id"}
    # the answers the function returned are what the swarm's agents said last
    truth = truths_of(run, "own_history")[row["id"]]
    assert [a["outputs"]["final_response"] for a in answers] == [
        t.truth.final_text for t in truth.turns
    ]


def test_conversations_stopped_at_an_interrupt_are_counted_as_conversations(
    tmp_path, invoke
) -> None:
    spec = write_form(
        tmp_path, targets={"desk": CASES["desk"][0]}, rows=DESK_ROWS, max_interrupt_rate=0.5
    )
    store, markdown = tmp_path / "s.db", tmp_path / "run.md"
    ran = invoke("run", spec, "--store", store, "--markdown", markdown)
    assert ran.exit_code == 0, ran.output
    assert "desk: 1 of 3 conversation(s) waiting for input (33.3%)" in ran.text, ran.output
    assert "count every conversation, the 1 stopped at interrupt() too" in ran.text
    assert "1 of 3 conversation(s) stopped at `interrupt()`" in markdown.read_text()
    again = invoke("run", spec, "--store", store)
    assert again.exit_code == 0, again.output
    first, second = (
        re.search(r"desk: (forms-desk-\w+) \(finished\)", r.text) for r in (ran, again)
    )
    assert first is not None and second is not None
    compared = invoke("compare", first[1], second[1], "--store", store)
    assert compared.exit_code == 0, compared.output
    assert "desk: 1 of 3 conversation(s) waiting for input" in compared.text, compared.output


SIMULATED_ROWS = [
    {
        "id": "sim-refund-email",
        "inputs": {"plan": ["I need a refund for my invoice.", "Now update my email address."]},
        "outputs": {"expected_agents": ["billing", "account"], "must_mention": ["email updated"]},
    },
    {
        "id": "sim-crash",
        "inputs": {"plan": ["The app shows a crash on start."]},
        "outputs": {"expected_agents": ["tech"]},
    },
]


def test_a_scripted_simulated_user_has_the_same_conversation_twice(tmp_path) -> None:
    """The user function reads the answers, so the swarm's answers decide the turns; two
    runs write the same conversations, and their figures match the log of each."""
    user = {"function": "forms.conversing:customer", "max_turns": 6}
    seen = []
    for attempt in ("first", "second"):
        run = run_spec(
            tmp_path / attempt,
            targets={"swarm": CASES["swarm"][0]},
            rows=SIMULATED_ROWS,
            simulated_user=user,
        )
        conversations = {}
        for row in run.rows["swarm"]:
            said = [turn["inputs"]["question"] for turn in row.json["turns"]]
            scripted = {"inputs": {"turns": said}, "outputs": row.reference}
            truth = conversation_truth(run.calls, "conv_swarm", scripted, Form())
            problems = mismatches_of_one(row.json, truth, f"{attempt}/{row.example_id}")
            assert not problems, "\n" + "\n".join(problems)
            conversations[row.example_id] = transcript(row.json)
        seen.append(conversations)
    assert seen[0] == seen[1]
    # the plan, the thanks, and the greeting that ended it
    assert [turn[0]["question"] for turn in seen[0]["sim-refund-email"]] == [
        "I need a refund for my invoice.",
        "Now update my email address.",
        "Thanks!",
    ]
    assert [turn[2] for turn in seen[0]["sim-refund-email"]] == [
        ["billing"],
        ["billing", "account"],
        ["account"],
    ]


def test_shards_of_a_conversation_run_merge_into_the_figures_of_the_log(tmp_path, invoke) -> None:
    """The swarm's conversations split over two shards, each conversation whole in one of
    them, then merged: every figure per turn, per conversation and of the experiment is the
    log's, as in one run."""
    spec = write_form(tmp_path, targets={"swarm": CASES["swarm"][0]}, rows=SWARM_ROWS)
    LOG.clear()
    for shard in (1, 2):
        ran = invoke("run", spec, "--shard", f"{shard}/2", "--store", tmp_path / f"{shard}.db")
        assert ran.exit_code == 0, ran.output
    out, merged = tmp_path / "merged.json", tmp_path / "merged.db"
    done = invoke("merge", tmp_path / "1.db", tmp_path / "2.db", "--store", merged, "--json", out)
    assert done.exit_code == 0, done.output
    document = json.loads(out.read_text())
    (experiment,) = document["experiments"]
    with Store(merged) as store:
        kept = {s.result.example_id: s for s in store.results(experiment["id"])}
    rows = [
        Row(
            entry["example_id"],
            entry["repetition"],
            kept[entry["example_id"]].inputs,
            kept[entry["example_id"]].reference_outputs,
            entry,
            kept[entry["example_id"]].result.trace,
        )
        for entry in experiment["results"]
    ]
    assert sorted(row.example_id for row in rows) == sorted(row["id"] for row in SWARM_ROWS)
    run = Run(done.output, document, {"swarm": rows}, LOG.calls())
    problems = mismatches(run, "swarm", truths_of(run, "swarm"))
    assert not problems, "\n" + "\n".join(problems)


def test_a_cached_conversation_is_served_whole_and_an_interrupted_one_runs_again(
    tmp_path, invoke
) -> None:
    spec = write_form(
        tmp_path,
        targets={"desk": CASES["desk"][0]},
        rows=DESK_ROWS,
        max_interrupt_rate=0.5,
        cache=True,
    )
    runs = []
    for attempt in ("first", "again"):
        LOG.clear()
        out = tmp_path / f"{attempt}.json"
        ran = invoke("run", spec, "--store", tmp_path / "s.db", "--json", out)
        assert ran.exit_code == 0, ran.output
        (experiment,) = json.loads(out.read_text())["experiments"]
        runs.append(({r["example_id"]: r for r in experiment["results"]}, LOG.calls()))
    (first, _), (again, calls) = runs
    unanswered = "desk-cancel-unanswered"
    assert {k: r["cached"] for k, r in again.items()} == {k: k != unanswered for k in again}
    # only the conversation that stopped at an interrupt called the model again
    assert {c.question for c in calls} == {"Cancel my subscription now."}
    for example, result in again.items():
        assert [t["inputs"] for t in result["turns"]] == [
            t["inputs"] for t in first[example]["turns"]
        ]
        same = {k: v for k, v in result["scores"].items() if "latency" not in k}
        assert same == {k: v for k, v in first[example]["scores"].items() if "latency" not in k}


def test_each_conversation_says_why_it_ended(tmp_path) -> None:
    """The ``turns`` comment and the last turn's ``ended`` say why a conversation stopped:
    its script used up, an interrupt nothing answered (the message after it never sent),
    the simulated user done."""
    rows = [
        *DESK_ROWS,
        conversation(
            "desk-cancel-then-message",
            ["Cancel it all, please.", "Also update my email address."],
            [{}, {}],
        ),
    ]
    run = run_spec(
        tmp_path / "desk", targets={"desk": CASES["desk"][0]}, rows=rows, max_interrupt_rate=1
    )
    ended = {
        r.example_id: (r.json["comments"]["turns"], r.json["turns"][-1]["ended"])
        for r in run.rows["desk"]
    }
    script = "the script's turns are used up"
    assert ended["desk-cancel-yes-then-email"] == (script, script)
    assert ended["desk-cancel-no"] == (script, script)
    stopped = "turn 1 stopped at interrupt() and no resume followed"
    assert ended["desk-cancel-unanswered"] == (stopped, stopped)
    unsent = "turn 1 stopped at interrupt() and turn 2 is a message, not a resume: it was not sent"
    assert ended["desk-cancel-then-message"] == (unsent, unsent)
    for row in run.rows["desk"]:  # only the last turn says it
        assert [t["ended"] for t in row.json["turns"][:-1]] == [None] * (len(row.json["turns"]) - 1)
    simulated = run_spec(
        tmp_path / "simulated",
        targets={"swarm": CASES["swarm"][0]},
        rows=SIMULATED_ROWS,
        simulated_user={"function": "forms.conversing:customer", "max_turns": 3},
    )
    ended = {r.example_id: r.json["comments"]["turns"] for r in simulated.rows["swarm"]}
    # the refund-then-email customer is cut at three turns (its thanks the third); the crash
    # customer thanks the agent in turn 2, is greeted back and is done
    assert ended == {
        "sim-refund-email": "max_turns reached (3)",
        "sim-crash": "the user said it is done",
    }


LLM_ROWS = [
    {
        "id": "llm-refund-email",
        "inputs": {
            "persona": "Dana, an admin at Acme",
            "scenario": "You want a refund for your invoice, then your email updated.",
        },
        "outputs": {"expected_agents": ["billing", "account"], "must_mention": REFUND + EMAIL},
    },
    {
        "id": "llm-crash",
        "inputs": {"persona": "Sam, a developer", "scenario": "Your app shows a crash on start."},
        "outputs": {"expected_agents": ["tech"]},
    },
]
# what each customer says, by a phrase of its scenario, one message a turn
PLANS = {
    "refund for your invoice": ["I need a refund for my invoice.", "Now update my email address."],
    "crash on start": ["The app shows a crash on start."],
}
DONE = "Thanks, that is all. ###DONE###"


def customer_model(request: dict[str, Any]) -> str:
    """The simulated user's model, served on loopback: the next message of the customer its
    system prompt describes (its own earlier messages come back as ``assistant``)."""
    messages = request["messages"]
    system = " ".join(str(m["content"]) for m in messages if m["role"] == "system")
    plan = next(plan for phrase, plan in PLANS.items() if phrase in system)
    said = sum(1 for m in messages if m["role"] == "assistant")
    return plan[said] if said < len(plan) else DONE


def test_an_llm_simulated_user_has_the_same_conversations_twice(tmp_path, monkeypatch) -> None:
    """openevals' simulated user on an OpenAI-compatible loopback server whose replies
    depend only on what it is sent: two runs, conversations concurrent, write the same
    conversations; the swarm's figures are its log's, the user's calls counted apart."""
    from openai_server import openai_server

    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    seen = []
    with openai_server(model="user-model") as server:
        server.reply_for = customer_model
        user = {"model": "openai:user-model", "base_url": server.base_url, "max_turns": 4}
        for attempt in ("first", "second"):
            run = run_spec(
                tmp_path / attempt,
                targets={"swarm": CASES["swarm"][0]},
                rows=LLM_ROWS,
                simulated_user=user,
            )
            conversations = {}
            for row in run.rows["swarm"]:
                said = [turn["inputs"]["question"] for turn in row.json["turns"]]
                plan = next(p for phrase, p in PLANS.items() if phrase in row.inputs["scenario"])
                assert said == plan, row.example_id
                scripted = {"inputs": {"turns": said}, "outputs": row.reference}
                truth = conversation_truth(run.calls, "conv_swarm", scripted, Form())
                problems = mismatches_of_one(row.json, truth, f"{attempt}/{row.example_id}")
                assert not problems, "\n" + "\n".join(problems)
                # one user call a message, and the one that said it was done
                assert row.json["scores"]["user_input_tokens"] == 120 * (len(plan) + 1)
                assert row.json["scores"]["user_output_tokens"] == 30 * (len(plan) + 1)
                assert row.json["comments"]["turns"] == "the user said it is done"
                conversations[row.example_id] = transcript(row.json)
            seen.append(conversations)
    assert seen[0] == seen[1]


def test_the_html_report_shows_each_turn_s_agents_as_the_log_has_them(tmp_path, invoke) -> None:
    spec = write_form(tmp_path, targets={"swarm": CASES["swarm"][0]}, rows=SWARM_ROWS)
    LOG.clear()
    page = tmp_path / "report.html"
    ran = invoke("run", spec, "--store", tmp_path / "s.db", "--html", page)
    assert ran.exit_code == 0, ran.output
    truths = {
        row["id"]: conversation_truth(
            LOG.calls(), "conv_swarm", row, Form(), pausing=(conversing.CANCEL,)
        )
        for row in SWARM_ROWS
    }
    text = page.read_text()
    blocks = re.split(r'<details class="example" data-id="', text)[1:]
    shown = {}
    for block in blocks:
        example = block.split('"', 1)[0]
        rows = re.findall(r'<tr class="turn" data-turn="(\d+)">(.*?)</tr>', block, re.S)
        shown[example] = [
            re.findall(r'<span class="agent">(?:.*?› )?([^<›]+)</span>', row) for _, row in rows
        ]
    assert shown == {
        example: [turn.path for turn in truth.turns] for example, truth in truths.items()
    }


def expected_confusion(truths: dict[str, ConversationTruth]) -> dict[str, Any]:
    """The routing confusion of the swarm's conversations from the log: each turn against its
    own expected agents where some turn has them, else the whole conversation against its
    own. A hit is on the diagonal; a missed agent goes to each specialist reached instead
    (or ``(none)``); with nothing missed, a specialist nobody expected is on ``(none)``."""
    counts: dict[tuple[str, str], int] = {}

    def add(expected: str, reached: str) -> None:
        counts[expected, reached] = counts.get((expected, reached), 0) + 1

    for truth in truths.values():
        per_turn = any("expected_agents" in t.references for t in truth.turns)
        units = (
            [(t.references.get("expected_agents", []), set(t.path)) for t in truth.turns]
            if per_turn
            else [
                (
                    truth.references.get("expected_agents", []),
                    {a for t in truth.turns for a in t.path},
                )
            ]
        )
        for wanted, reached in units:
            others = sorted(reached - set(wanted))
            missed = [a for a in wanted if a not in reached]
            for agent in wanted:
                if agent in reached:
                    add(agent, agent)
                else:
                    for other in others or ["(none)"]:
                        add(agent, other)
            if not missed:
                for other in others or ([] if wanted else ["(none)"]):
                    add("(none)", other)
    rows = sorted({e for e, _ in counts}, key=lambda a: (a == "(none)", a))
    columns = sorted({r for _, r in counts}, key=lambda a: (a == "(none)", a))
    return {
        "expected": rows,
        "invoked": columns,
        "counts": [[counts.get((e, r), 0) for r in columns] for e in rows],
    }


def test_the_routing_confusion_counts_each_turn_against_its_own_expected_agents(
    tmp_path, invoke
) -> None:
    """In --json, in compare's matrix and in the routing_confusion evaluator's score."""
    from agenteval_cli.report.comparison import Confusion, confusion_matrix
    from agenteval_cli.results.sources import load

    spec = write_form(
        tmp_path,
        targets={"swarm": CASES["swarm"][0]},
        rows=SWARM_ROWS,
        evaluators=[*BASE_EVALUATORS, "routing_confusion"],
    )
    LOG.clear()
    store, out = tmp_path / "s.db", tmp_path / "r.json"
    ran = invoke("run", spec, "--store", store, "--json", out)
    assert ran.exit_code == 0, ran.output
    truths = {
        row["id"]: conversation_truth(
            LOG.calls(), "conv_swarm", row, Form(), pausing=(conversing.CANCEL,)
        )
        for row in SWARM_ROWS
    }
    want = expected_confusion(truths)
    (experiment,) = json.loads(out.read_text())["experiments"]
    assert experiment["routing_confusion"] == want
    (side,) = load([experiment["name"]], store)
    assert confusion_matrix(side) == Confusion.from_matrix(want)
    # micro recall: the expected agents reached over every expected agent of every unit
    rows = dict(zip(want["expected"], want["counts"], strict=True))
    hits = sum(
        rows[e][want["invoked"].index(e)] for e in rows if e != "(none)" and e in want["invoked"]
    )
    total = sum(
        len(t.references.get("expected_agents", []))
        for truth in truths.values()
        for t in truth.turns
    ) + sum(
        len(truth.references.get("expected_agents", []))
        for truth in truths.values()
        if not any("expected_agents" in t.references for t in truth.turns)
    )
    score = experiment["dataset_results"]["routing_confusion"]["score"]
    assert score == pytest.approx(hits / total)
