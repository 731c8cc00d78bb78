"""Coordinators and where the answer is, in forms built as their libraries' docs build them:

- langgraph-supervisor over one agent, with a custom ``supervisor_name``, full history and no
  handoff-back messages (its supervisor still coordinates when it answers alone);
- LangGraph's supervisor tutorial exactly as written: ``llm.with_structured_output(Router)``
  in the supervisor node, unnamed agents in worker nodes that answer with
  ``HumanMessage(content=..., name=<worker>)`` and ``Command(goto="supervisor")``;
- ``create_supervisor`` over ``create_agent`` agents that run middleware hooks;
- LangChain 1.x's Subagents with async tools that ``ainvoke`` their subagent, called in
  parallel in one turn;
- the Router pattern whose classifier answers with ``with_structured_output``, ``Send``-ing
  the question to the agents it names.
"""

from __future__ import annotations

import operator
import warnings
from typing import Annotated, Any, Literal, TypedDict

from langchain.agents import AgentState, create_agent
from langchain.agents.middleware import AgentMiddleware, before_model
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langchain_core.tools import tool
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.types import Command, Send
from langgraph_supervisor import create_supervisor
from pydantic import BaseModel

from forms.model import FormModel, form_model, text_of
from forms.policy import (
    GREETING,
    call,
    done,
    needed,
    question,
    results,
    specialist,
    supervisor,
)
from forms.tools import TOOL_OF

with warnings.catch_warnings():
    warnings.simplefilter("ignore", DeprecationWarning)
    from langgraph.prebuilt import create_react_agent

AGENTS = ("billing", "tech")


# -- langgraph-supervisor over a single agent, under a custom name ------------------------------


def build_solo_manager(graph: str) -> Any:
    billing = create_agent(
        form_model(graph, "billing", specialist("billing")), [TOOL_OF["billing"]], name="billing"
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        workflow = create_supervisor(
            [billing],
            model=form_model(graph, "manager", supervisor(("billing",)), large=True),
            supervisor_name="manager",
            output_mode="full_history",
            add_handoff_back_messages=False,
        )
    return workflow.compile()


solo_manager = build_solo_manager("solo_manager")


# -- LangGraph's supervisor tutorial, as written -----------------------------------------------


class Router(TypedDict):
    """Worker to route to next. If no workers needed, route to FINISH."""

    next: Literal["billing", "tech", "FINISH"]


class State(MessagesState):
    next: str


def route_next(messages: list[BaseMessage]) -> AIMessage:
    """The tutorial's supervisor: the first open part's worker (workers' answers are human
    messages here), then FINISH."""
    want = [d for d in needed(question(messages)) if d in AGENTS]
    open_parts = [d for d in want if not done(messages, d)]
    return call("Router", {"next": open_parts[0] if open_parts else "FINISH"})


def build_tutorial(graph: str, *, workers: str = "react") -> Any:
    """The tutorial's graph; its workers are ``create_react_agent`` agents, or with
    ``workers="create_agent"`` LangChain 1's ``create_agent``, unnamed either way."""
    llm = FormModel(graph=graph, agent="supervisor", policy=route_next, model_name="form-large")
    members = list(AGENTS)
    system_prompt = (
        "You are a supervisor tasked with managing a conversation between the following "
        f"workers: {members}. Respond with the worker to act next; when finished, FINISH."
    )

    def supervisor_node(state: State) -> Command[Literal["billing", "tech", "__end__"]]:
        messages = [{"role": "system", "content": system_prompt}, *state["messages"]]
        response = llm.with_structured_output(Router).invoke(messages)
        goto = response["next"]
        if goto == "FINISH":
            goto = END
        return Command(goto=goto, update={"next": goto})

    def worker(name: str) -> Any:
        model = form_model(graph, name, specialist(name))
        if workers == "create_agent":
            agent = create_agent(model, [TOOL_OF[name]])
        else:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", DeprecationWarning)
                agent = create_react_agent(model, [TOOL_OF[name]])

        def node(state: State) -> Command[Literal["supervisor"]]:
            result = agent.invoke(state)
            return Command(
                update={
                    "messages": [HumanMessage(content=result["messages"][-1].content, name=name)]
                },
                goto="supervisor",
            )

        return node

    builder = StateGraph(State)
    builder.add_edge(START, "supervisor")
    builder.add_node("supervisor", supervisor_node)
    for name in AGENTS:
        builder.add_node(name, worker(name))
    return builder.compile()


def workers_answer(calls: Any) -> str:
    """The tutorial's answer: the last worker's reply (the supervisor only routes)."""
    replies = [c.text for c in calls if c.agent != "supervisor"]
    return replies[-1] if replies else ""


tutorial_exact = build_tutorial("tutorial_exact")
tutorial_agents = build_tutorial("tutorial_agents", workers="create_agent")


# -- create_supervisor over create_agent agents with middleware --------------------------------


class Tagging(AgentMiddleware):
    """A class middleware with ``before_model`` and ``after_model`` hooks (graph nodes named
    ``Tagging.before_model`` ...), changing nothing."""

    def before_model(self, state: AgentState, runtime: Any) -> dict[str, Any] | None:
        return None

    def after_model(self, state: AgentState, runtime: Any) -> dict[str, Any] | None:
        return None


@before_model
def trim_nothing(state: AgentState, runtime: Any) -> dict[str, Any] | None:
    return None


def build_middleware_supervisor(graph: str) -> Any:
    members = [
        create_agent(
            form_model(graph, name, specialist(name)),
            [TOOL_OF[name]],
            middleware=[Tagging(), trim_nothing],
            name=name,
        )
        for name in AGENTS
    ]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        workflow = create_supervisor(
            members, model=form_model(graph, "supervisor", supervisor(AGENTS), large=True)
        )
    return workflow.compile()


middleware_supervisor = build_middleware_supervisor("middleware_supervisor")


# -- Subagents: async tools that ainvoke their subagent, in parallel ----------------------------


def build_async_subagents(graph: str) -> Any:
    subagents = {
        name: create_agent(form_model(graph, name, specialist(name)), [TOOL_OF[name]], name=name)
        for name in AGENTS
    }

    def ask(name: str) -> Any:
        @tool(f"ask_{name}", description=f"Ask the {name} agent to handle its part.")
        async def ask_agent(query: str) -> str:
            result = await subagents[name].ainvoke(
                {"messages": [{"role": "user", "content": query}]}
            )
            return text_of(result["messages"][-1])

        return ask_agent

    asking = supervisor(
        AGENTS,
        handoff=lambda agent: f"ask_{agent}",
        args=lambda messages: {"query": question(messages)},
        parallel=True,
    )

    def policy(messages: list[BaseMessage]) -> AIMessage:
        """Every open part at once, listed in the order of ``AGENTS`` (the branches' order)."""
        reply = asking(messages)
        order = [f"ask_{a}" for a in AGENTS]
        reply.tool_calls = sorted(reply.tool_calls, key=lambda c: order.index(c["name"]))
        return reply

    # unnamed: the target's own agent, named after the target (its model logs that name)
    return create_agent(
        form_model(graph, graph, policy, large=True), [ask(name) for name in AGENTS]
    )


async_subagents = build_async_subagents("async_subagents")


# -- Router: a structured-output classifier Send-ing to the agents it names ----------------------


class Classification(BaseModel):
    """The agents a question needs."""

    agents: list[Literal["billing", "tech"]]


class RouterState(TypedDict):
    query: str
    classifications: list[str]
    results: Annotated[list[dict[str, str]], operator.add]
    final_answer: str


class AgentInput(TypedDict):
    query: str


def classify_policy(messages: list[BaseMessage]) -> AIMessage:
    wanted = needed(question(messages), AGENTS)
    return call("Classification", {"agents": [a for a in AGENTS if a in wanted]})


def synthesize_policy(messages: list[BaseMessage]) -> AIMessage:
    found = results(messages)
    return AIMessage("Summary: " + " ".join(found) if found else GREETING)


def build_classified_router(graph: str) -> Any:
    classifier = FormModel(
        graph=graph, agent="classify", policy=classify_policy, model_name="form-large"
    ).with_structured_output(Classification)
    synthesizer = form_model(graph, "synthesize_results", synthesize_policy, large=True)
    agents = {
        name: create_agent(form_model(graph, name, specialist(name)), [TOOL_OF[name]], name=name)
        for name in AGENTS
    }

    def classify_query(state: RouterState) -> dict:
        result = classifier.invoke([HumanMessage(state["query"])])
        return {"classifications": list(result.agents)}

    def route_to_agents(state: RouterState) -> list[Send] | str:
        sends = [Send(name, {"query": state["query"]}) for name in state["classifications"]]
        return sends or "synthesize_results"

    def run(name: str) -> Any:
        def query_agent(state: AgentInput) -> dict:
            result = agents[name].invoke({"messages": [HumanMessage(state["query"])]})
            return {"results": [{"source": name, "result": text_of(result["messages"][-1])}]}

        return query_agent

    def synthesize_results(state: RouterState) -> dict:
        found = "\n".join(r["result"] for r in state["results"])
        reply = synthesizer.invoke([HumanMessage(state["query"]), AIMessage(found)])
        return {"final_answer": text_of(reply)}

    builder = StateGraph(RouterState)
    builder.add_node("classify", classify_query)
    for name in AGENTS:
        builder.add_node(name, run(name))
        builder.add_edge(name, "synthesize_results")
    builder.add_node("synthesize_results", synthesize_results)
    builder.add_edge(START, "classify")
    builder.add_conditional_edges("classify", route_to_agents, [*AGENTS, "synthesize_results"])
    builder.add_edge("synthesize_results", END)
    return builder.compile()


classified_router = build_classified_router("classified_router")


# -- deepagents: a main agent with tools of its own, the default general-purpose sub-agent, a
#    task call naming no sub-agent, and a langgraph-supervisor team as a CompiledSubAgent --------

CONCIERGE = "You are the concierge: billing yourself, tech and account parts by task."
GENERAL = "general-purpose"


def concierge_role(messages: list[BaseMessage]) -> str:
    """The main agent and the general-purpose sub-agent share one model (deepagents gives
    the sub-agent the main agent's): the main agent's prompt tells them apart."""
    system = next((text_of(m) for m in messages if m.type == "system"), "")
    return "concierge" if CONCIERGE in system else GENERAL


def concierge_policy(messages: list[BaseMessage]) -> AIMessage:
    """The main agent does billing with its own tool, gives tech to ``tech``, account to
    the general-purpose sub-agent and network to a sub-agent that does not exist (deepagents
    answers that call with an error text), one part at a time, then sums up. The
    general-purpose sub-agent does the account part by itself."""
    if concierge_role(messages) == GENERAL:
        return AIMessage("account done: " + "account-result: email updated.")
    want = needed(question(messages))
    if not want:
        return AIMessage(GREETING)
    tried = {
        c["args"].get("subagent_type")
        for m in messages
        if isinstance(m, AIMessage)
        for c in m.tool_calls
        if c["name"] == "task"
    }
    for part in want:
        if part == "billing" and not done(messages, "billing"):
            return call("lookup_invoice", {"invoice_id": "INV-42"})
        sub = {"tech": "tech", "account": GENERAL, "network": "network"}.get(part)
        if sub is not None and sub not in tried:
            return call("task", {"description": question(messages), "subagent_type": sub})
    return AIMessage("Summary: " + " ".join(results(messages)))


def build_concierge(graph: str) -> Any:
    from deepagents import SubAgent, create_deep_agent

    model = FormModel(
        graph=graph,
        agent="concierge",
        policy=concierge_policy,
        model_name="form-large",
        agent_from=concierge_role,
    )
    tech = SubAgent(
        name="tech",
        description="Handles tech questions.",
        system_prompt="You are the tech specialist.",
        tools=[TOOL_OF["tech"]],
        model=form_model(graph, "tech", specialist("tech")),
    )
    return create_deep_agent(
        model=model,
        tools=[TOOL_OF["billing"]],
        subagents=[tech],
        system_prompt=CONCIERGE,
        name="concierge",
    )


concierge = build_concierge("concierge")


def build_deep_team(
    graph: str, *, members: tuple[str, ...] = AGENTS, lead: str = "supervisor"
) -> Any:
    """A deep agent whose one sub-agent is a langgraph-supervisor team of ``members`` led by
    ``lead`` (its ``supervisor_name``)."""
    from deepagents import CompiledSubAgent, create_deep_agent

    agents = [
        create_agent(form_model(graph, name, specialist(name)), [TOOL_OF[name]], name=name)
        for name in members
    ]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        team = create_supervisor(
            agents,
            model=form_model(graph, lead, supervisor(members), large=True),
            supervisor_name=lead,
        ).compile(name="support_team")
    main_policy = _delegate_once("support_team")
    return create_deep_agent(
        model=form_model(graph, graph, main_policy, large=True),
        subagents=[
            CompiledSubAgent(
                name="support_team", description="Billing and tech support.", runnable=team
            )
        ],
        system_prompt="Hand every support question to the support team.",
    )


def _delegate_once(agent: str) -> Any:
    def policy(messages: list[BaseMessage]) -> AIMessage:
        if not needed(question(messages)):
            return AIMessage(GREETING)
        if not any(m.type == "tool" for m in messages):
            return call("task", {"description": question(messages), "subagent_type": agent})
        answer = next(text_of(m) for m in reversed(messages) if m.type == "tool")
        return AIMessage(f"Summary: {answer}")

    return policy


deep_team = build_deep_team("deep_team")
deep_solo_team = build_deep_team("deep_solo_team", members=("billing",), lead="lead")


# -- LangGraph's hierarchical agent teams tutorial ------------------------------------------------

TEAMS = {"money_team": ("billing", "account"), "tech_team": ("tech", "network")}


def team_router(members: tuple[str, ...]) -> Any:
    """``make_supervisor_node``'s router over ``members``: the first open part among them
    (a member's answer is a named human message), then FINISH."""

    def policy(messages: list[BaseMessage]) -> AIMessage:
        open_parts = [
            d for d in needed(question(messages)) if d in members and not done(messages, d)
        ]
        return call("Router", {"next": open_parts[0] if open_parts else "FINISH"})

    return policy


def top_router(messages: list[BaseMessage]) -> AIMessage:
    """The top supervisor: the first team, in the order of ``TEAMS``, with an open part."""
    want = needed(question(messages))
    for team, members in TEAMS.items():
        if any(d in want and not done(messages, d) for d in members):
            return call("Router", {"next": team})
    return call("Router", {"next": "FINISH"})


def make_supervisor_node(llm: Any, members: tuple[str, ...]) -> Any:
    """The tutorial's helper: a node asking ``llm.with_structured_output(Router)`` for the
    member to act next and going there by ``Command``."""
    options = ("FINISH", *members)

    class Router(TypedDict):
        next: str

    Router.__doc__ = f"Worker to route to next, one of {options}."
    system_prompt = f"You are a supervisor managing these workers: {list(members)}."

    def supervisor_node(state: MessagesState) -> Command:
        messages = [{"role": "system", "content": system_prompt}, *state["messages"]]
        goto = llm.with_structured_output(Router).invoke(messages)["next"]
        return Command(goto=END if goto == "FINISH" else goto)

    return supervisor_node


def build_hierarchical_teams(graph: str) -> Any:
    """Teams built like the tutorial's: each a graph of its own ``supervisor`` node and
    worker nodes running unnamed agents; the top graph's ``supervisor`` routes to team nodes
    that invoke the team's graph and answer with ``HumanMessage(name=<team>)``. (The team
    nodes pass the whole conversation, where the tutorial passes its last message.)"""

    def team_graph(team: str, members: tuple[str, ...]) -> Any:
        llm = FormModel(
            graph=graph,
            agent="supervisor",
            policy=team_router(members),
            model_name="form-large",
            team=(team,),
        )
        builder = StateGraph(MessagesState)
        builder.add_node(
            "supervisor", make_supervisor_node(llm, members), destinations=(*members, END)
        )
        for name in members:
            agent = create_agent(form_model(graph, name, specialist(name)), [TOOL_OF[name]])

            def worker(state: MessagesState, agent: Any = agent, name: str = name) -> Command:
                result = agent.invoke(state)
                answer = HumanMessage(content=result["messages"][-1].content, name=name)
                return Command(update={"messages": [answer]}, goto="supervisor")

            builder.add_node(name, worker, destinations=("supervisor",))
        builder.add_edge(START, "supervisor")
        return builder.compile()

    teams = {team: team_graph(team, members) for team, members in TEAMS.items()}
    top = FormModel(graph=graph, agent="supervisor", policy=top_router, model_name="form-large")

    def call_team(team: str) -> Any:
        def node(state: MessagesState) -> Command:
            response = teams[team].invoke({"messages": state["messages"]})
            answer = HumanMessage(content=response["messages"][-1].content, name=team)
            return Command(update={"messages": [answer]}, goto="supervisor")

        return node

    builder = StateGraph(MessagesState)
    builder.add_node(
        "supervisor", make_supervisor_node(top, tuple(TEAMS)), destinations=(*TEAMS, END)
    )
    for team in TEAMS:
        builder.add_node(team, call_team(team), destinations=("supervisor",))
    builder.add_edge(START, "supervisor")
    return builder.compile()


hierarchical_teams = build_hierarchical_teams("hierarchical_teams")
