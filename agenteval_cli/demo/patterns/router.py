"""Router: a classifier picks the agents a request needs and ``Send``s each its query in
parallel; a synthesiser sums their results up, as LangChain's docs build it.

The router is stateless: each turn is classified afresh from the latest user message (the
conversation's history comes in ``messages`` and goes out with the answer appended). With
one result there is nothing to combine, so it is the answer as it is: "Buy milk" costs the
docs' three calls, routing, the milk agent's ``buy_milk`` and its reply.
"""

from __future__ import annotations

import operator
from typing import Annotated, Any, NotRequired, TypedDict

from langchain.agents import create_agent
from langchain_core.messages import AIMessage, AnyMessage, HumanMessage, SystemMessage
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.graph.state import CompiledStateGraph
from langgraph.types import Send
from pydantic import BaseModel, Field

from agenteval_cli.demo.patterns.knowledge import DESCRIPTIONS, DOMAINS, MILK, assistant_prompt
from agenteval_cli.demo.patterns.model import pattern_model
from agenteval_cli.demo.patterns.policy import request, text_of
from agenteval_cli.demo.patterns.subagents import subagent_prompt
from agenteval_cli.demo.patterns.tools import buy_milk

AGENT_LIST = "\n".join(f"- {domain}: {DESCRIPTIONS[domain]}" for domain in DOMAINS)
CLASSIFY_PROMPT = (
    assistant_prompt()
    + "\nClassify the request: which of these agents it needs, and the query each of them "
    f"should answer on its own, without the rest of the request:\n{AGENT_LIST}\n"
    "Choose every agent a part of the request belongs to, and none for small talk."
)
SYNTHESIZE_PROMPT = (
    assistant_prompt()
    + "\nCombine the agents' results, given after the request, into one answer to it. Keep "
    "what each agent found, drop what repeats, and do not add facts none of them gave; "
    "where they disagree, say so."
)


class Classification(BaseModel):
    source: str = Field(description=f"the agent: one of {', '.join(DOMAINS)}")
    query: str = Field(description="what that agent should answer")


class Classifications(BaseModel):
    """The agents a request needs."""

    classifications: list[Classification]


class AgentResult(TypedDict):
    source: str
    result: str


class RouterState(TypedDict):
    messages: Annotated[list[AnyMessage], add_messages]
    classifications: NotRequired[list[Classification]]
    results: Annotated[list[AgentResult], operator.add]
    final_answer: NotRequired[str]


class AgentInput(TypedDict):
    query: str


def build_graph() -> CompiledStateGraph:
    classifier = pattern_model("classify").with_structured_output(Classifications)
    synthesizer = pattern_model("synthesize")
    agents = {
        domain: create_agent(
            pattern_model(domain),
            [buy_milk] if domain == MILK else [],
            system_prompt=subagent_prompt(domain),
            name=domain,
        )
        for domain in DOMAINS
    }

    def classify(state: RouterState) -> dict[str, Any]:
        question = request(state["messages"])
        chosen = classifier.invoke([SystemMessage(CLASSIFY_PROMPT), HumanMessage(question)])
        assert isinstance(chosen, Classifications)
        return {"classifications": chosen.classifications}

    def route(state: RouterState) -> list[Send] | str:
        sends = [
            Send(c.source, {"query": c.query})
            for c in state.get("classifications", [])
            if c.source in agents
        ]
        return sends or "synthesize"

    def run(domain: str) -> Any:
        def query(state: AgentInput) -> dict[str, Any]:
            result = agents[domain].invoke({"messages": [HumanMessage(state["query"])]})
            return {"results": [{"source": domain, "result": text_of(result["messages"][-1])}]}

        return query

    def synthesize(state: RouterState) -> dict[str, Any]:
        found = state.get("results", [])
        if len(found) == 1:
            answer = found[0]["result"]
        else:
            parts = [f"From the {r['source']} agent:\n{r['result']}" for r in found]
            question = request(state["messages"])
            given = HumanMessage("\n\n".join([question, *parts]))
            answer = text_of(synthesizer.invoke([SystemMessage(SYNTHESIZE_PROMPT), given]))
        return {"final_answer": answer, "messages": [AIMessage(answer)]}

    builder = StateGraph(RouterState)
    builder.add_node("classify", classify)
    for domain in DOMAINS:
        builder.add_node(domain, run(domain))
        builder.add_edge(domain, "synthesize")
    builder.add_node("synthesize", synthesize)
    builder.add_edge(START, "classify")
    builder.add_conditional_edges("classify", route, [*DOMAINS, "synthesize"])
    builder.add_edge("synthesize", END)
    return builder.compile(name="router")


graph = build_graph()
