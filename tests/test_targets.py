"""Import paths and the adapters that turn graphs, Runnables and functions into targets."""

from __future__ import annotations

import asyncio
from typing import Annotated, TypedDict

import pytest
from langchain_core.messages import AnyMessage
from langgraph.graph.message import add_messages

from agenteval_cli.errors import UserError
from agenteval_cli.targets import adapt, as_outputs, graph_outputs, import_object


class State(TypedDict):
    messages: Annotated[list[AnyMessage], add_messages]
    resolution_notes: list[str]


def call(target, inputs):
    return asyncio.run(target(inputs, []))


class TestImportObject:
    def test_module_attribute(self, tmp_path):
        obj = import_object("agenteval_cli.targets:message_text", base_dir=tmp_path)
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
