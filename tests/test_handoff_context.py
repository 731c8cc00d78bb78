"""handoff_context on other people's graphs: each agent's scripted model logs the messages
its calls were given, and the expected share is read off that log by hand (the receiving
agent's first call, and whether the user's request or the row's facts are in it)."""

from __future__ import annotations

from typing import Annotated, Any

import pytest
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.tools import InjectedToolCallId
from langgraph.prebuilt import InjectedState
from langgraph.types import Command, Send
from pydantic import ConfigDict

from agenteval_cli.core.records import Handoff, Trace
from agenteval_cli.evaluators.handoffs import context_carried
from agenteval_cli.trace.recorder import TraceRecorder

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

QUESTION = "Refund order ORD-1182, it was charged twice"


class Scripted(BaseChatModel):
    """Replies in order; logs ``(agent, [text of each message given])`` for every call."""

    model_config = ConfigDict(arbitrary_types_allowed=True)
    agent: str
    replies: list[AIMessage]
    log: Any  # the test's own list (typed Any: pydantic would copy a list)

    @property
    def _llm_type(self) -> str:
        return "scripted"

    def bind_tools(self, tools: Any, **_: Any) -> Any:
        return self

    def _generate(self, messages: list[BaseMessage], *a: Any, **k: Any) -> ChatResult:
        self.log.append((self.agent, [str(m.content) for m in messages]))
        reply = self.replies.pop(0).model_copy()
        reply.name = self.agent
        return ChatResult(generations=[ChatGeneration(message=reply)])


def call(name: str, **args: Any) -> AIMessage:
    return AIMessage("", tool_calls=[{"name": name, "args": args, "id": f"c-{name}"}])


def first_inputs(log: list[tuple[str, list[str]]], agent: str) -> list[str]:
    return next(texts for who, texts in log if who == agent)


def traced(graph: Any) -> Trace:
    recorder = TraceRecorder()
    graph.invoke({"messages": [HumanMessage(QUESTION)]}, config={"callbacks": [recorder]})
    return recorder.trace()


def test_supervisor_full_history_carries_the_request():
    """langgraph-supervisor with ``output_mode="full_history"``: billing's first call is
    given the question, and so is the supervisor's call after the return."""
    from langgraph.prebuilt import create_react_agent
    from langgraph_supervisor import create_supervisor

    log: list = []
    billing = create_react_agent(
        Scripted(agent="billing", replies=[AIMessage("Refunded ORD-1182.")], log=log),
        tools=[],
        name="billing",
    )
    supervisor = Scripted(
        agent="supervisor", replies=[call("transfer_to_billing"), AIMessage("Done.")], log=log
    )
    graph = create_supervisor([billing], model=supervisor, output_mode="full_history").compile()
    trace = traced(graph)
    assert QUESTION in first_inputs(log, "billing")
    assert [(h.source, h.target) for h in trace.handoffs] == [
        ("supervisor", "billing"),
        ("billing", "supervisor"),
    ]
    score = context_carried(trace)
    assert score["score"] == 1.0, score


def test_task_description_handoff_loses_the_request():
    """A handoff tool that sends only a task description (``Send`` with the task as the
    agent's one message), as langgraph-supervisor's docs write it: billing is given the
    task alone; the supervisor, back, still has the question. One of two carried."""
    from langchain_core.tools import tool
    from langgraph.prebuilt import create_react_agent
    from langgraph_supervisor import create_supervisor

    @tool("assign_to_billing")
    def to_billing(
        task_description: str,
        state: Annotated[dict, InjectedState],
        tool_call_id: Annotated[str, InjectedToolCallId],
    ) -> Command:
        """Ask billing to do a task."""
        return Command(
            goto=[Send("billing", {"messages": [HumanMessage(task_description)]})],
            graph=Command.PARENT,
        )

    log: list = []
    billing = create_react_agent(
        Scripted(agent="billing", replies=[AIMessage("Refund issued.")], log=log),
        tools=[],
        name="billing",
    )
    supervisor = Scripted(
        agent="supervisor",
        replies=[
            call("assign_to_billing", task_description="Issue a refund"),
            AIMessage("Done."),
        ],
        log=log,
    )
    graph = create_supervisor(
        [billing], model=supervisor, tools=[to_billing], output_mode="full_history"
    ).compile()
    trace = traced(graph)
    assert first_inputs(log, "billing") == ["Issue a refund"]  # the log: the task alone
    score = context_carried(trace)
    assert score["score"] == 0.5, score
    assert "supervisor → billing (assign_to_billing) lost the human message" in score["comment"]
    # the order number as the fact that must survive: lost the same way
    facts = context_carried(trace, ["ORD-1182"])
    assert facts["score"] == 0.5 and "lost 'ORD-1182'" in facts["comment"]


def test_swarm_member_filtering_history_loses_the_request():
    """langgraph-swarm: billing's ``pre_model_hook`` gives its model only the messages after
    the last human one written by a tool (the handoff's ToolMessage): its first call lacks
    the question."""
    from langchain_core.messages import ToolMessage
    from langgraph.prebuilt import create_react_agent
    from langgraph_swarm import create_handoff_tool, create_swarm

    def only_since_handoff(state: dict) -> dict:
        messages = state["messages"]
        last_tool = max(i for i, m in enumerate(messages) if isinstance(m, ToolMessage))
        return {"llm_input_messages": messages[last_tool:]}

    log: list = []
    triage = create_react_agent(
        Scripted(agent="triage", replies=[call("transfer_to_billing")], log=log),
        tools=[create_handoff_tool(agent_name="billing")],
        name="triage",
    )
    billing = create_react_agent(
        Scripted(agent="billing", replies=[AIMessage("Refund issued.")], log=log),
        tools=[],
        name="billing",
        pre_model_hook=only_since_handoff,
    )
    graph = create_swarm([triage, billing], default_active_agent="triage").compile()
    trace = traced(graph)
    assert QUESTION not in first_inputs(log, "billing")
    assert [(h.source, h.target) for h in trace.handoffs] == [("triage", "billing")]
    score = context_carried(trace)
    assert score["score"] == 0.0, score
    assert "triage → billing (transfer_to_billing) lost the human message" in score["comment"]


def test_sub_agent_given_a_rewritten_query():
    """A sub-agent called as a tool with a query the caller rewrote (deepagents' ``task``
    shape): the sub-agent's first call has the rewrite, not the question; its answer's
    return to the caller carries it (the caller's history holds the question)."""
    from langchain.agents import create_agent
    from langchain_core.tools import tool

    log: list = []
    researcher = create_agent(
        Scripted(agent="researcher", replies=[AIMessage("Charged twice on May 2.")], log=log),
        tools=[],
        name="researcher",
    )

    @tool
    def research(query: str) -> str:
        """Ask the researcher."""
        result = researcher.invoke({"messages": [HumanMessage(query)]})
        return str(result["messages"][-1].content)

    lead = create_agent(
        Scripted(
            agent="lead",
            replies=[call("research", query="When was the order charged?"), AIMessage("Done")],
            log=log,
        ),
        tools=[research],
        name="lead",
    )
    trace = traced(lead)
    assert first_inputs(log, "researcher") == ["When was the order charged?"]
    assert [(h.source, h.target, h.via) for h in trace.handoffs] == [
        ("lead", "researcher", "agent_tool"),
        ("researcher", "lead", "agent_tool"),
    ]
    score = context_carried(trace)
    assert score["score"] == 0.5, score
    assert "lead → researcher (research) lost the human message" in score["comment"]
    # facts per agent: only the researcher's are checked, and the rewrite lacks the order
    per_agent = context_carried(trace, {"researcher": ["ORD-1182"]})
    assert per_agent["score"] == 0.0 and "lost 'ORD-1182'" in per_agent["comment"]


def test_summariser_call_is_not_the_agents_own():
    """create_agent with SummarizationMiddleware: the summariser's model call comes first in
    the receiving agent, yet what counts is what the summary then handed the agent's model.
    The summary here drops the order number, so the fact is lost though the summariser was
    given it."""
    from langchain.agents import create_agent
    from langchain.agents.middleware import SummarizationMiddleware
    from langgraph.graph import END, START, MessagesState, StateGraph

    log: list = []
    summariser = Scripted(agent="summariser", replies=[AIMessage("A refund request.")], log=log)
    billing = create_agent(
        Scripted(agent="billing", replies=[AIMessage("Refund issued.")], log=log),
        tools=[],
        name="billing",
        middleware=[
            SummarizationMiddleware(model=summariser, trigger=("messages", 2), keep=("messages", 1))
        ],
    )
    triage_model = Scripted(agent="triage", replies=[AIMessage("Passing to billing.")], log=log)

    def triage(state: MessagesState) -> dict:
        return {"messages": [triage_model.invoke(state["messages"])]}

    builder = StateGraph(MessagesState)
    builder.add_node("triage", triage)
    builder.add_node("billing", billing)
    builder.add_edge(START, "triage")
    builder.add_edge("triage", "billing")
    builder.add_edge("billing", END)
    trace = traced(builder.compile())
    assert any("ORD-1182" in t for t in first_inputs(log, "summariser"))
    assert not any("ORD-1182" in t for t in first_inputs(log, "billing"))
    assert [(h.source, h.target) for h in trace.handoffs] == [("triage", "billing")]
    score = context_carried(trace, ["ORD-1182"])
    assert score["score"] == 0.0, score


def test_null_with_the_reason():
    assert context_carried(Trace())["comment"] == "no handoff"
    old = Trace(handoffs=[Handoff("a", "b")], request=QUESTION)
    assert context_carried(old)["score"] is None
    assert "recorded without" in context_carried(old)["comment"]
    carried = Trace(
        handoffs=[Handoff("a", "b", received=f"x\n{QUESTION.upper()}")], request=QUESTION
    )
    assert context_carried(carried)["score"] == 1.0
    assert context_carried(carried, {"c": ["x"]})["score"] is None
    assert context_carried(carried, "ORD")["score"] is None
    again = Trace.from_dict(carried.to_dict())
    assert (again.request, again.handoffs[0].received) == (QUESTION, f"x\n{QUESTION.upper()}")


@pytest.mark.parametrize(("mode", "expected"), [("last_message", 0.0), ("full_history", 1.0)])
def test_supervisor_output_mode_and_per_agent_facts(mode, expected):
    """langgraph-supervisor: billing's tool finds error code E-4411, its last message does
    not say it; the supervisor then hands over to account. With ``last_message`` the code is
    not in account's first call (the log), with ``full_history`` it is. Only account's facts
    are listed, so only the handoff into account is checked."""
    from langchain_core.tools import tool
    from langgraph.prebuilt import create_react_agent
    from langgraph_supervisor import create_supervisor

    @tool
    def lookup(order: str) -> str:
        """Look an order up."""
        return "payment failed with error code E-4411"

    log: list = []
    billing = create_react_agent(
        Scripted(
            agent="billing",
            replies=[call("lookup", order="ORD-1182"), AIMessage("Found the problem.")],
            log=log,
        ),
        tools=[lookup],
        name="billing",
    )
    account = create_react_agent(
        Scripted(agent="account", replies=[AIMessage("Card updated.")], log=log),
        tools=[],
        name="account",
    )
    supervisor = Scripted(
        agent="supervisor",
        replies=[call("transfer_to_billing"), call("transfer_to_account"), AIMessage("Done.")],
        log=log,
    )
    graph = create_supervisor([billing, account], model=supervisor, output_mode=mode).compile()
    trace = traced(graph)
    given = first_inputs(log, "account")
    assert any("E-4411" in t for t in given) == (expected == 1.0)
    assert [(h.source, h.target) for h in trace.handoffs] == [
        ("supervisor", "billing"),
        ("billing", "supervisor"),
        ("supervisor", "account"),
        ("account", "supervisor"),
    ]
    score = context_carried(trace, {"account": ["E-4411"]})
    assert score["score"] == expected, score
    assert score["comment"].startswith(f"{int(expected)}/1 handoffs carried")
