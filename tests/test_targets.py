"""Import paths and the adapters that turn graphs, Runnables and functions into targets."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Annotated, TypedDict

import pytest
from fakes import reply, scripted
from langchain_core.messages import AnyMessage
from langgraph.graph.message import add_messages

from agenteval_cli.core.errors import UserError
from agenteval_cli.core.imports import import_object
from agenteval_cli.targets import MissingInputField, MissingOutput, TargetOptionError, adapt
from agenteval_cli.targets.inputs import graph_input_keys, input_builder
from agenteval_cli.targets.outputs import as_outputs, graph_outputs


class State(TypedDict):
    messages: Annotated[list[AnyMessage], add_messages]
    resolution_notes: list[str]


def call(target, inputs):
    return asyncio.run(target(inputs, []))


class TestImportObject:
    def test_module_attribute(self, tmp_path):
        obj = import_object("agenteval_cli.targets.outputs:message_text", base_dir=tmp_path)
        assert obj("hi") == "hi"

    def test_file_relative_to_the_spec(self, tmp_path):
        (tmp_path / "helper.py").write_text("VALUE = 41\n")
        (tmp_path / "my_target.py").write_text(
            "from helper import VALUE\n\ndef target(inputs):\n    return {'n': VALUE + 1}\n"
        )
        fn = import_object("my_target.py:target", base_dir=tmp_path)
        assert fn({}) == {"n": 42}

    def test_malformed_path(self, tmp_path):
        with pytest.raises(UserError) as info:
            import_object("agenteval_cli.targets", base_dir=tmp_path, file="s.yaml", line=4)
        assert str(info.value) == (
            "s.yaml:4: import path 'agenteval_cli.targets' is not 'package.module:attr' "
            "or 'file.py:attr'"
        )

    def test_missing_module_suggests_a_sibling(self, tmp_path):
        with pytest.raises(UserError) as info:
            import_object("agenteval_cli.targest:adapt", base_dir=tmp_path, file="s.yaml", line=5)
        assert str(info.value) == (
            "s.yaml:5: cannot import 'agenteval_cli.targest': no module named "
            "'agenteval_cli.targest' (did you mean 'agenteval_cli.targets'?)"
        )

    def test_missing_attribute_suggests_the_closest(self, tmp_path):
        with pytest.raises(UserError) as info:
            import_object("agenteval_cli.targets:adpat", base_dir=tmp_path)
        assert "has no attribute 'adpat' (did you mean 'adapt'?)" in str(info.value)

    def test_module_raising_on_import(self, tmp_path):
        (tmp_path / "broken.py").write_text("raise RuntimeError('no config')\n")
        with pytest.raises(UserError) as info:
            import_object("broken.py:graph", base_dir=tmp_path, file="s.yaml", line=2)
        assert str(info.value) == (
            "s.yaml:2: importing 'broken.py' raised RuntimeError: no config "
            "(fix the module so it imports cleanly)"
        )

    def test_missing_file(self, tmp_path):
        with pytest.raises(UserError, match=r"target file .*nope\.py' does not exist"):
            import_object("nope.py:graph", base_dir=tmp_path)


class TestAdapters:
    def test_sync_and_async_functions(self):
        def sync_target(inputs):
            return {"final_response": inputs["question"].upper()}

        async def async_target(inputs):
            return f"async {inputs['question']}"

        assert call(adapt(sync_target, name="s", import_path="x:s"), {"question": "hi"}) == {
            "final_response": "HI"
        }
        target = adapt(async_target, name="a", import_path="x:a")
        assert target.kind == "function"
        assert call(target, {"question": "hi"}) == {"final_response": "async hi"}

    def test_compiled_graph_gets_messages_and_initial_state(self):
        from langchain_core.messages import AIMessage
        from langgraph.graph import StateGraph

        def answer(state: State) -> dict:
            question = state["messages"][-1].content
            notes = [*state["resolution_notes"], f"seen: {question}"]
            return {"messages": [AIMessage(f"answer to {question}")], "resolution_notes": notes}

        builder = StateGraph(State)
        builder.add_node("answer", answer)
        builder.set_entry_point("answer")
        target = adapt(
            builder,  # an uncompiled graph is compiled
            name="g",
            import_path="x:g",
            input_key="q",
            initial_state={"resolution_notes": ["start"]},
        )
        assert target.kind == "graph"
        out = call(target, {"q": "refund?"})
        assert out["final_response"] == "answer to refund?"
        assert out["resolution_notes"] == ["start", "seen: refund?"]
        assert [m["role"] for m in out["messages"]] == ["user", "assistant"]
        # the initial state is copied per call, never mutated across examples
        assert call(target, {"q": "again"})["resolution_notes"] == ["start", "seen: again"]

    def test_graph_missing_input_key_raises(self):
        from langgraph.graph import MessagesState, StateGraph

        builder = StateGraph(MessagesState)
        builder.add_node("n", lambda s: {})
        builder.set_entry_point("n")
        target = adapt(builder.compile(), name="g", import_path="x:g", input_key="question")
        with pytest.raises(KeyError, match="inputs have no 'question'"):
            call(target, {"text": "hi"})

    def test_runnable_gets_the_inputs_dict(self):
        from langchain_core.runnables import RunnableLambda

        runnable = RunnableLambda(lambda inputs: {"final_response": f"got {sorted(inputs)}"})
        target = adapt(runnable, name="r", import_path="x:r")
        assert target.kind == "runnable"
        assert call(target, {"a": 1, "b": 2}) == {"final_response": "got ['a', 'b']"}

    def test_non_callable_is_refused(self):
        with pytest.raises(TypeError, match="is a int, not a graph, Runnable or function"):
            adapt(3, name="n", import_path="x:n")


def test_outputs_mapping():
    from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

    state = {
        "messages": [
            HumanMessage("hi"),
            AIMessage([{"type": "text", "text": "block "}, {"type": "text", "text": "text"}]),
            ToolMessage("tool out", tool_call_id="1"),
        ],
        "active_agent": "billing",
    }
    out = graph_outputs(state)
    assert out["final_response"] == "block text"
    assert out["resolution_notes"] == []
    assert out["active_agent"] == "billing"
    assert as_outputs({"final_response": "x"}) == {"final_response": "x"}
    assert as_outputs(AIMessage("plain")) == {"final_response": "plain"}
    with pytest.raises(TypeError, match="target returned int"):
        as_outputs(5)


# --- any state shape: input, output, config, checkpointers ---------------------------------

FORMS = Path(__file__).parent / "data" / "forms_targets"
QA_INPUT = {"question": "Q: {question}", "customer": "{customer_id}"}


def forms_attr(name):
    """An attribute of tests/data/forms_targets/forms_graphs.py, loaded as the CLI loads it."""
    return import_object(f"forms_graphs.py:{name}", base_dir=FORMS)


class TestInputMapping:
    def test_typed_dict_state_without_messages(self):
        target = adapt(
            forms_attr("qa_graph"), name="qa", import_path="x:qa", input=QA_INPUT, output="answer"
        )
        out = call(target, {"question": "refund?", "customer_id": 7})
        # "{customer_id}" alone keeps the int; "Q: {question}" is text
        assert out["final_response"] == "int 7 asked: Q: refund?"
        assert (out["question"], out["customer"]) == ("Q: refund?", 7)
        assert "messages" not in out  # the state has none

    def test_nested_values_lists_and_literal_braces(self):
        template = {
            "query": "{{literal}} {question}",
            "meta": {"ids": ["{customer_id}", "id-{customer_id}"], "tags": "{tags}", "n": 3},
        }
        fill = input_builder(template)
        inputs = {"question": "why?", "customer_id": 7, "tags": ["a", "b"]}
        assert fill(inputs) == {
            "query": "{literal} why?",
            "meta": {"ids": [7, "id-7"], "tags": ["a", "b"], "n": 3},
        }
        filled = fill(inputs)
        filled["meta"]["tags"].append("c")  # a copy: the example's inputs stay as they were
        assert inputs["tags"] == ["a", "b"]

    def test_a_missing_field_errors_the_row_naming_the_fields(self):
        target = adapt(forms_attr("qa_graph"), name="qa", import_path="x:qa", input=QA_INPUT)
        with pytest.raises(MissingInputField) as info:
            call(target, {"question": "hi", "user": "u1"})
        assert str(info.value) == (
            "input: this example's inputs have no field 'customer_id' (its fields: question, user)"
        )

    def test_initial_state_is_merged_under_the_built_input(self):
        from langchain_core.messages import AIMessage
        from langgraph.graph import START, StateGraph

        def answer(state: State) -> dict:
            notes = [*state["resolution_notes"], f"got {state['messages'][-1].content}"]
            return {"messages": [AIMessage("done")], "resolution_notes": notes}

        builder = StateGraph(State)
        builder.add_node("answer", answer)
        builder.add_edge(START, "answer")
        target = adapt(
            builder,
            name="g",
            import_path="x:g",
            initial_state={"resolution_notes": ["start"], "messages": ["overridden"]},
            input={"messages": "{text}"},  # a string is read as a user message
        )
        out = call(target, {"text": "hello"})
        assert out["resolution_notes"] == ["start", "got hello"]
        assert out["messages"] == [
            {"role": "user", "content": "hello"},
            {"role": "assistant", "content": "done"},
        ]

    def test_input_function_sync_or_async_gets_a_copy(self):
        seen = []

        def prepare(inputs):
            inputs["question"] = "changed"  # cannot reach the example
            seen.append(inputs)
            return {"query": "q1", "tags": ["t"]}

        async def prepare_async(inputs):
            return {"query": inputs["question"], "tags": []}

        graph = forms_attr("nested_graph")
        inputs = {"question": "kept"}
        sync = adapt(graph, name="n", import_path="x:n", input=prepare, output="result.text")
        assert call(sync, inputs)["final_response"] == "q1 [t]"
        assert inputs == {"question": "kept"} and seen == [{"question": "changed"}]
        asyn = adapt(graph, name="n", import_path="x:n", input=prepare_async, output="result.text")
        assert call(asyn, inputs)["final_response"] == "kept []"

    def test_runnables_and_functions_take_the_built_input_too(self):
        from langchain_core.runnables import RunnableLambda

        runnable = RunnableLambda(lambda value: {"final_response": repr(value)})
        target = adapt(runnable, name="r", import_path="x:r", input={"q": "{question}!"})
        assert call(target, {"question": "hi"}) == {"final_response": "{'q': 'hi!'}"}
        function = adapt(lambda v: v["q"], name="f", import_path="x:f", input={"q": "<{a}>"})
        assert call(function, {"a": 1}) == {"final_response": "<1>"}


class TestOutputPath:
    def test_dotted_path_and_message_values(self):
        from langchain_core.messages import AIMessage

        state = {"result": {"text": "deep", "reply": AIMessage([{"type": "text", "text": "m"}])}}
        assert graph_outputs(state, "result.text")["final_response"] == "deep"
        assert graph_outputs(state, "result.reply")["final_response"] == "m"
        assert as_outputs({"items": ["a", "b"]}, "items.-1") == {
            "items": ["a", "b"],
            "final_response": "b",
        }

    def test_a_missing_path_names_the_keys_there_are(self):
        with pytest.raises(MissingOutput) as info:
            graph_outputs({"result": {"body": "x"}, "n": 1}, "result.text")
        assert str(info.value) == "output 'result.text': 'result' has no 'text' (its keys: body)"
        with pytest.raises(MissingOutput) as info:
            as_outputs({"answer": 1}, "anwser")
        assert str(info.value) == "output 'anwser': the result has no 'anwser' (its keys: answer)"

    def test_a_state_final_response_key_is_the_answer(self):
        from langchain_core.messages import AIMessage

        state = {"messages": [AIMessage("chatter")], "final_response": "the answer"}
        assert graph_outputs(state)["final_response"] == "the answer"


def memory_graph():
    from langchain_core.messages import AIMessage
    from langgraph.checkpoint.memory import InMemorySaver
    from langgraph.graph import START, MessagesState, StateGraph

    def reply(state: MessagesState) -> dict:
        return {"messages": [AIMessage(f"seen {len(state['messages'])}")]}

    builder = StateGraph(MessagesState)
    builder.add_node("reply", reply)
    builder.add_edge(START, "reply")
    saver = InMemorySaver()
    return builder.compile(checkpointer=saver), saver


class TestCheckpointersAndConfig:
    def test_each_call_gets_a_thread_of_its_own(self):
        graph, saver = memory_graph()
        target = adapt(graph, name="m", import_path="x:m")
        outs = [call(target, {"question": q}) for q in ("one", "two", "three")]
        # without a thread each, the third call would see 5 messages and return 6
        assert [o["final_response"] for o in outs] == ["seen 1", "seen 1", "seen 1"]
        assert [len(o["messages"]) for o in outs] == [2, 2, 2]
        threads = {c.config["configurable"]["thread_id"] for c in saver.list(None)}
        assert len(threads) == 3

    def test_config_reaches_the_graph_and_the_callbacks_stay(self):
        from langchain_core.callbacks import BaseCallbackHandler

        class Starts(BaseCallbackHandler):
            def __init__(self):
                self.names = []

            def on_chain_start(self, serialized, inputs, **kwargs):
                self.names.append(kwargs.get("name"))

        config = {"recursion_limit": 5, "configurable": {"user_id": "u7"}}
        target = adapt(forms_attr("memory_graph"), name="m", import_path="x:m", config=config)
        handler = Starts()
        out = asyncio.run(target({"question": "hi"}, [handler]))
        assert out["final_response"] == "u7 saw 1 message(s), limit 5"
        assert handler.names[:2] == ["LangGraph", "remember"]
        assert config == {"recursion_limit": 5, "configurable": {"user_id": "u7"}}  # untouched

    def test_react_agent_with_a_checkpointer(self):
        from langgraph.checkpoint.memory import InMemorySaver
        from langgraph.prebuilt import create_react_agent

        model = scripted("m", reply("first answer"), reply("second answer"))
        agent = create_react_agent(model, tools=[], checkpointer=InMemorySaver())
        target = adapt(agent, name="a", import_path="x:a")
        call(target, {"question": "first question"})
        second = call(target, {"question": "second question"})
        assert second["final_response"] == "second answer"
        assert [(m["role"], m["content"]) for m in second["messages"]] == [
            ("user", "second question"),
            ("assistant", "second answer"),
        ]

    def test_a_function_target_refuses_config(self):
        with pytest.raises(TargetOptionError) as info:
            adapt(lambda inputs: "x", name="f", import_path="x:f", config={"tags": ["t"]})
        assert str(info.value) == (
            "'config' is for graphs and Runnables; a function target calls its graph itself"
        )
        assert info.value.at == ("config",)


class TestPreflight:
    @pytest.mark.parametrize("shape", ["typed_dict", "pydantic", "dataclass"])
    def test_input_keys_of_every_state_shape(self, shape):
        from dataclasses import dataclass

        from langgraph.graph import START, StateGraph
        from pydantic import BaseModel

        class TD(TypedDict):
            question: str
            answer: str

        class PM(BaseModel):
            question: str = ""
            answer: str = ""

        @dataclass
        class DC:
            question: str = ""
            answer: str = ""

        builder = StateGraph({"typed_dict": TD, "pydantic": PM, "dataclass": DC}[shape])
        builder.add_node("n", lambda state: {"answer": "a"})
        builder.add_edge(START, "n")
        assert graph_input_keys(builder.compile()) == ["question", "answer"]
        # no messages to put a question in: the inputs go to the graph as they are
        target = adapt(builder, name="g", import_path="x:g", input_key="text")
        assert target.passes_through == ("question", "answer")
        assert target.input_fields == ()
        assert call(target, {"question": "q"})["final_response"] == "a"
        with pytest.raises(MissingInputField) as info:
            call(target, {"text": "q"})
        assert str(info.value) == (
            "the graph does not take inputs.text (its input has no 'messages' key; its input "
            'keys: question, answer): add input: {question: "{text}"} to fill them from the inputs'
        )

    def test_messages_state_and_an_input_schema(self):
        from langgraph.graph import START, MessagesState, StateGraph

        class Only(TypedDict):
            question: str

        class Full(TypedDict):
            question: str
            answer: str

        graph, _ = memory_graph()
        assert graph_input_keys(graph) == ["messages"]
        builder = StateGraph(Full, input_schema=Only)
        builder.add_node("n", lambda state: {"answer": "a"})
        builder.add_edge(START, "n")
        assert graph_input_keys(builder.compile()) == ["question"]
        messages = StateGraph(MessagesState)
        messages.add_node("n", lambda state: {})
        messages.add_edge(START, "n")
        assert adapt(messages, name="m", import_path="x:m").kind == "graph"

    def test_an_input_key_the_graph_does_not_take(self):
        with pytest.raises(TargetOptionError) as info:
            adapt(forms_attr("qa_graph"), name="qa", import_path="x:qa", input={"qestion": "q"})
        assert str(info.value) == "input key 'qestion' is not in the graph's input"
        assert info.value.hint == (
            "did you mean 'question'?; its input keys: question, customer, answer"
        )
        assert info.value.at == ("input", "qestion")

    def test_a_graph_without_a_schema_is_not_checked(self):
        from langgraph.func import entrypoint

        @entrypoint()
        def echo(value: dict) -> dict:
            return {"final_response": str(sorted(value))}

        assert graph_input_keys(echo) is None
        target = adapt(echo, name="e", import_path="x:e", input={"a": "{question}"})
        assert call(target, {"question": "hi"}) == {
            "final_response": "['a']",  # the state's own final_response
            "resolution_notes": [],
        }


# --- messages returned in any form ---------------------------------------------------------

# The openevals README's trajectory: OpenAI form, a tool call and a tool reply without ids.
OPENEVALS_TRAJECTORY = [
    {"role": "user", "content": "What is the weather in SF?"},
    {
        "role": "assistant",
        "content": "",
        "tool_calls": [
            {"function": {"name": "get_weather", "arguments": json.dumps({"city": "SF"})}}
        ],
    },
    {"role": "tool", "content": "It's 80 degrees and sunny in SF."},
    {"role": "assistant", "content": "The weather in SF is 80 degrees and sunny."},
]


class TestReturnedMessages:
    def test_the_openevals_readme_trajectory(self):
        target = adapt(
            lambda inputs: {"messages": OPENEVALS_TRAJECTORY}, name="f", import_path="x:f"
        )
        out = call(target, {"question": "What is the weather in SF?"})
        assert out["final_response"] == "The weather in SF is 80 degrees and sunny."
        assert out["messages"] == OPENEVALS_TRAJECTORY  # kept as given: no ids made up
        assert out["messages"] is not OPENEVALS_TRAJECTORY

    def test_langchain_dicts_without_ids_are_converted_without_ids(self):
        messages = [
            {"type": "human", "content": "weather?"},
            {"type": "ai", "content": "", "tool_calls": [{"name": "get_weather", "args": {}}]},
            {"type": "tool", "content": "sunny"},
            {"type": "ai", "content": [{"type": "text", "text": "It is "}, "sunny."]},
            {"type": "ai", "content": "", "tool_calls": [{"name": "done", "args": {"x": 1}}]},
        ]
        out = as_outputs({"messages": messages})
        # the last AI message has no text: the answer is the one before it
        assert out["final_response"] == "It is sunny."
        assert out["messages"] == [
            {"role": "user", "content": "weather?"},
            {
                "role": "assistant",
                "content": "",
                "tool_calls": [
                    {"type": "function", "function": {"name": "get_weather", "arguments": "{}"}}
                ],
            },
            {"role": "tool", "content": "sunny"},
            # LangChain's converter joins text blocks with a newline
            {"role": "assistant", "content": "It is \nsunny."},
            {
                "role": "assistant",
                "content": "",
                "tool_calls": [
                    {"type": "function", "function": {"name": "done", "arguments": '{"x": 1}'}}
                ],
            },
        ]

    def test_message_objects_and_mixed_forms(self):
        from langchain_core.messages import AIMessage, HumanMessage

        messages = [
            HumanMessage("hi"),
            {"role": "assistant", "content": "from a dict"},
            AIMessage("", tool_calls=[{"name": "t", "args": {}, "id": "c1"}]),
        ]
        out = as_outputs({"messages": messages})
        assert out["final_response"] == "from a dict"
        assert [m["role"] for m in out["messages"]] == ["user", "assistant", "assistant"]
        assert out["messages"][2]["tool_calls"][0]["id"] == "c1"
        later = as_outputs({"messages": [*messages, ("assistant", "a tuple")]})
        assert later["final_response"] == "a tuple"


# --- through the CLI ----------------------------------------------------------------------


def run_cli(spec, tmp_path):
    from typer.testing import CliRunner

    from agenteval_cli.cli import app

    report = tmp_path / "r.json"
    args = ["run", str(spec), "--store", str(tmp_path / "db"), "--json", str(report)]
    result = CliRunner().invoke(app, args, catch_exceptions=False)
    if result.exit_code != 0:
        return result, None
    data = json.loads(report.read_text())
    return result, {
        e["target"]: {r["example_id"]: r for r in e["results"]} for e in data["experiments"]
    }


def test_every_state_shape_through_the_cli(tmp_path):
    result, runs = run_cli(FORMS / "forms.yaml", tmp_path)
    assert result.exit_code == 0, result.output
    for target in ("qa", "nested", "memory", "openai"):
        assert [r["error"] for r in runs[target].values()] == [None, None]
    outputs = {t: {e: r["outputs"] for e, r in rows.items()} for t, rows in runs.items()}
    assert outputs["qa"]["sf"]["final_response"] == "int 7 asked: Q: What is the weather in SF?"
    assert outputs["qa"]["nyc"]["customer"] == 8
    assert outputs["nested"]["nyc"]["final_response"] == "AND IN NYC? [customer-8]"
    # the checkpointer graph: the second example sees its own question only
    assert outputs["memory"]["nyc"]["messages"] == [
        {"role": "user", "content": "And in NYC?"},
        {"role": "assistant", "content": "u7 saw 1 message(s), limit 5"},
    ]
    assert outputs["memory"]["sf"]["final_response"] == "u7 saw 1 message(s), limit 5"
    assert outputs["openai"]["sf"]["final_response"] == (
        "The weather in SF is 80 degrees and sunny."
    )
    assert outputs["openai"]["sf"]["messages"][1]["tool_calls"] == [
        {"function": {"name": "get_weather", "arguments": '{"city": "SF"}'}}
    ]


@pytest.mark.parametrize(
    ("entry", "line", "message"),
    [
        (
            "  qa: {graphs}:qa_graph\n",
            3,
            "target 'qa' gets each example's inputs as they are, and the graph does not take "
            "inputs.customer_id of row 1 (its input has no 'messages' key; its input keys: "
            'question, customer, answer) (add input: {question: "{question}"} to fill them '
            "from the inputs)",
        ),
        (
            "  qa:\n    target: {graphs}:qa_graph\n    input:\n      question: '{question}'\n"
            "      custmer: '{customer_id}'\n",
            7,
            "targets.qa.input.custmer: input key 'custmer' is not in the graph's input "
            "(did you mean 'customer'?; its input keys: question, customer, answer)",
        ),
        (
            "  f:\n    target: {graphs}:openai_target\n    config: {tags: [t]}\n",
            5,
            "targets.f.config: 'config' is for graphs and Runnables; a function target calls "
            "its graph itself (pass config=... to the graph call inside the function)",
        ),
        (
            "  qa:\n    target: {graphs}:qa_graph\n    input: {graphs}:START\n",
            5,
            "input '{graphs}:START' is a str, not a function "
            "(name a function fn(inputs: dict) -> dict)",
        ),
    ],
)
def test_targets_that_cannot_work_fail_before_any_call(tmp_path, entry, line, message):
    graphs = FORMS / "forms_graphs.py"
    spec = tmp_path / "spec.yaml"
    spec.write_text(
        f"dataset: {FORMS / 'forms.jsonl'}\ntargets:\n" + entry.replace("{graphs}", str(graphs))
    )
    result, _ = run_cli(spec, tmp_path)
    assert result.exit_code == 2
    assert result.output.strip() == (
        f"error: {spec}:{line}: " + message.replace("{graphs}", str(graphs))
    )
    if (tmp_path / "db").exists():  # no experiment was started
        from agenteval_cli.store.db import Store

        assert Store(tmp_path / "db").experiments() == []


def test_the_cache_tells_targets_apart_by_input_output_and_config(tmp_path):
    """A changed ``input:`` (or ``output:``, ``config:``) is another target for the cache."""
    graphs = FORMS / "forms_graphs.py"
    spec = tmp_path / "spec.yaml"
    head = f"dataset: {FORMS / 'forms.jsonl'}\ncache: true\ntargets:\n  qa:\n"
    head += f"    target: {graphs}:qa_graph\n    output: answer\n"
    answers = []
    for template in ("A: {question}", "A: {question}", "B: {question}"):
        spec.write_text(head + f"    input: {{question: '{template}', customer: 0}}\n")
        result, runs = run_cli(spec, tmp_path)
        assert result.exit_code == 0, result.output
        row = runs["qa"]["nyc"]
        answers.append((row["cached"], row["outputs"]["final_response"]))
    assert answers == [
        (False, "int 0 asked: A: And in NYC?"),
        (True, "int 0 asked: A: And in NYC?"),
        (False, "int 0 asked: B: And in NYC?"),
    ]
    from agenteval_cli.execution.cache import target_identity, target_options
    from agenteval_cli.spec.model import TargetSpec

    plain = TargetSpec(name="t", target="pkg.mod:graph")
    assert target_identity("pkg.mod:graph", **target_options(plain, tmp_path)) == (
        target_identity("pkg.mod:graph")  # no options: the identity it always had
    )
    prepared = TargetSpec(name="t", target="pkg.mod:graph", input="prep.py:fn", output="a")
    assert target_options(prepared, tmp_path) == {
        "input": f"{tmp_path.resolve() / 'prep.py'}:fn",
        "output": "a",
        "config": None,
        "faults": None,  # none: the identity it had before faults existed
    }


class TestWhereTheAnswerIs:
    """The final response is found where the graph put it (docs/spec.md, "Outputs")."""

    def test_a_named_human_message_is_an_agent_answer(self):
        from langchain_core.messages import AIMessage, HumanMessage

        state = {
            "messages": [
                HumanMessage("Refund me"),
                AIMessage("routing"),
                HumanMessage("refunded", name="billing"),
            ]
        }
        assert graph_outputs(state)["final_response"] == "refunded"
        unnamed = {"messages": [AIMessage("routing"), HumanMessage("a follow-up")]}
        assert graph_outputs(unnamed)["final_response"] == "routing"

    def test_the_requests_own_messages_are_never_the_answer(self):
        from langchain_core.messages import AIMessage, HumanMessage

        given = [HumanMessage("Refund me", name="customer"), AIMessage("earlier turn")]
        state = {"messages": [*given]}
        assert graph_outputs(state, given=given)["final_response"] == ""
        copies = [HumanMessage("Refund me", name="customer"), AIMessage("earlier turn")]
        assert graph_outputs({"messages": copies}, given=given)["final_response"] == ""
        state = {"messages": [*given, AIMessage("refunded")]}
        assert graph_outputs(state, given=given)["final_response"] == "refunded"
        # an answer that repeats an earlier turn's words is still this request's answer
        state = {"messages": [*copies, AIMessage("earlier turn")]}
        assert graph_outputs(state, given=given)["final_response"] == "earlier turn"

    def test_a_graph_given_a_named_question_does_not_answer_with_it(self):
        from langgraph.graph import START, MessagesState, StateGraph

        builder = StateGraph(MessagesState)
        builder.add_node("noop", lambda state: {"messages": []})
        builder.add_edge(START, "noop")
        target = adapt(
            builder.compile(),
            name="g",
            import_path="x:g",
            input={"messages": [{"role": "user", "content": "{question}", "name": "ann"}]},
        )
        assert call(target, {"question": "hi"})["final_response"] == ""

    def test_answer_keys_and_the_structured_response(self):
        from langchain_core.messages import AIMessage
        from pydantic import BaseModel

        class Answer(BaseModel):
            summary: str

        chatter = [AIMessage("chatter")]
        structured = {"messages": chatter, "structured_response": Answer(summary="done")}
        assert graph_outputs(structured)["final_response"] == {"summary": "done"}
        routed = {"question": "q", "final_answer": "synthesized", "answer": "partial"}
        assert graph_outputs(routed)["final_response"] == "synthesized"
        assert graph_outputs({"messages": chatter, "answer": "a"})["final_response"] == "a"
        assert graph_outputs({"messages": chatter, "answer": None})["final_response"] == "chatter"


def test_an_active_agent_key_no_state_has_is_refused(tmp_path):
    from agenteval_cli.targets.inputs import check_active_agent

    graph, _ = memory_graph()
    check_active_agent(graph, "messages")
    with pytest.raises(TargetOptionError) as info:
        check_active_agent(graph, "mesages")
    assert str(info.value) == "active_agent 'mesages' is not a key of the graph's state"
    assert info.value.hint == "did you mean 'messages'?; its keys: messages"
    assert info.value.at == ("active_agent",)


def test_a_function_targets_opening_question_is_not_its_answer():
    from langchain_core.messages import HumanMessage

    asked = {"messages": [HumanMessage("Refund me", name="customer")]}
    assert as_outputs(asked)["final_response"] == ""
    answered = {"messages": [*asked["messages"], HumanMessage("refunded", name="billing")]}
    assert as_outputs(answered)["final_response"] == "refunded"
