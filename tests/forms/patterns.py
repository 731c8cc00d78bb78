"""LangChain 1.x's multi-agent patterns (its docs' "Multi-agent" pages) and the forms whose
answer or input is not where a ``messages`` graph keeps it, each built the way its docs
build it and driven by the corpus's logging model:

- *Subagents*: a ``create_agent`` supervisor whose tools run ``create_agent`` subagents;
- *Handoffs* by state: one ``create_agent`` whose tool sets ``current_step`` with
  ``Command(update=...)``, ``@dynamic_prompt`` and ``@wrap_model_call`` middleware swapping
  its prompt and tools (one model plays every role: the log reads the role off the prompt;
  the ``@wrap_model_call`` is sync only, as the docs write it, so LangChain refuses
  ``ainvoke`` and agenteval calls the graph as ``graph.invoke`` runs it);
- *Skills*: one agent with a ``load_skill`` tool that loads a skill's instructions;
- *Router*: a classify node ``Send``-ing the question to agents in parallel, then a
  synthesize node writing ``final_answer``; the state has no ``messages`` (inputs pass
  through), like the state ``{question, routes, answers}``;
- *Custom workflow*: a ``StateGraph`` mixing agent nodes with plain nodes;
- LangGraph's supervisor tutorial, whose workers return ``HumanMessage(content=...,
  name=<worker>)``, and ``create_agent(response_format=...)`` answering in
  ``structured_response``.
"""

from __future__ import annotations

import json
import operator
from collections.abc import Callable
from typing import Annotated, Any, NotRequired, TypedDict

from langchain.agents import AgentState, create_agent
from langchain.agents.middleware import (
    ModelRequest,
    ModelResponse,
    dynamic_prompt,
    wrap_model_call,
)
from langchain.agents.structured_output import ProviderStrategy, ToolStrategy
from langchain.tools import ToolRuntime
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
)
from langchain_core.tools import tool
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.types import Command, Send
from pydantic import BaseModel

from forms.model import form_model, text_of
from forms.policy import (
    GREETING,
    TOOLS,
    agent_tools_supervisor,
    call,
    called,
    done,
    needed,
    question,
    results,
    route_of,
    router,
    specialist,
    supervisor,
)
from forms.tools import TOOL_OF

AGENTS = ("billing", "tech")


def _agent(graph: str, name: str) -> Any:
    return create_agent(form_model(graph, name, specialist(name)), [TOOL_OF[name]], name=name)


# -- Subagents: a supervisor whose tools run the subagents ---------------------------------------


def build_subagents(graph: str) -> Any:
    """The docs' subagents: ``@tool`` wrappers that invoke a subagent and return its last
    message, given to a ``create_agent`` supervisor."""
    subagents = {name: _agent(graph, name) for name in AGENTS}

    def ask(name: str) -> Any:
        @tool(f"ask_{name}", description=f"Ask the {name} agent to handle its part.")
        def ask_agent(query: str) -> str:
            result = subagents[name].invoke({"messages": [HumanMessage(query)]})
            return text_of(result["messages"][-1])

        return ask_agent

    return create_agent(
        form_model(graph, "supervisor", agent_tools_supervisor(AGENTS), large=True),
        [ask(name) for name in AGENTS],
        name="supervisor",
    )


subagents = build_subagents("subagents")


def dispatching(agents: tuple[str, ...]) -> Any:
    """The supervisor's policy with one ``task(agent_name, description)`` tool for all."""
    inner = supervisor(agents, handoff=lambda agent: agent)

    def policy(messages: list[BaseMessage]) -> AIMessage:
        reply = inner(messages)
        if not reply.tool_calls:
            return reply
        args = {"agent_name": reply.tool_calls[0]["name"], "description": question(messages)}
        return call("task", args)

    return policy


def build_dispatcher(graph: str, *, named: bool = False) -> Any:
    """The docs' single dispatch tool: ``task(agent_name, description)`` looks the subagent up
    in a dict and invokes it; the subagents are ``create_agent`` graphs given no ``name=``
    (``named``: given one, which the trace then tells apart)."""
    subagents = {
        name: create_agent(
            form_model(graph, name, specialist(name)),
            [TOOL_OF[name]],
            system_prompt=f"You handle {name} requests.",
            name=name if named else None,
        )
        for name in AGENTS
    }

    @tool
    def task(agent_name: str, description: str) -> str:
        """Launch a subagent (billing, tech) on a task."""
        result = subagents[agent_name].invoke({"messages": [HumanMessage(description)]})
        return text_of(result["messages"][-1])

    return create_agent(
        form_model(graph, "supervisor", dispatching(AGENTS), large=True),
        [task],
        name="supervisor",
    )


dispatcher = build_dispatcher("dispatcher")
named_dispatcher = build_dispatcher("named_dispatcher", named=True)


# -- Handoffs: one agent whose state says which step it is at ------------------------------------

STEPS = ("triage", *AGENTS)


class SupportState(AgentState):
    current_step: NotRequired[str]


@tool
def record_issue(kind: str, runtime: ToolRuntime) -> Command:
    """Record which kind of issue the customer has; the next step handles it."""
    return Command(
        update={
            "messages": [
                ToolMessage(f"recorded a {kind} issue", tool_call_id=runtime.tool_call_id)
            ],
            "current_step": kind,
        }
    )


STEP_TOOLS = {
    "triage": [record_issue],
    "billing": [TOOL_OF["billing"], record_issue],
    "tech": [TOOL_OF["tech"]],
}


def step_prompt(step: str) -> str:
    return f"You are the {step} step of customer support."


def step_of(messages: list[BaseMessage]) -> str:
    """The role a call serves, read off the system prompt the middleware put in."""
    system = next((text_of(m) for m in messages if isinstance(m, SystemMessage)), "")
    return next((s for s in STEPS if step_prompt(s) == system), "unknown")


def stepped(messages: list[BaseMessage]) -> AIMessage:
    """Triage records the first part; billing does its part, then records tech's when the
    request has one; tech does its part; each closes with what was found."""
    step = step_of(messages)
    want = needed(question(messages), AGENTS)
    if step == "triage":
        return call("record_issue", {"kind": want[0]}) if want else AIMessage(GREETING)
    tool_name, args = TOOLS[step]
    if not called(messages, tool_name):
        return call(tool_name, args)
    rest = [d for d in want if d != step and not done(messages, d)]
    if step == "billing" and rest:
        return call("record_issue", {"kind": rest[0]})
    return AIMessage(f"{step} done: " + " ".join(results(messages)))


@dynamic_prompt
def step_system_prompt(request: ModelRequest) -> str:
    return step_prompt(request.state.get("current_step", "triage"))


@wrap_model_call
def step_tools(
    request: ModelRequest, handler: Callable[[ModelRequest], ModelResponse]
) -> ModelResponse:
    step = request.state.get("current_step", "triage")
    return handler(request.override(tools=STEP_TOOLS[step]))


def build_handoffs(graph: str) -> Any:
    model = form_model(graph, "support", stepped, agent_from=step_of)
    tools = list({t.name: t for step in STEPS for t in STEP_TOOLS[step]}.values())
    return create_agent(
        model,
        tools,
        state_schema=SupportState,
        middleware=[step_system_prompt, step_tools],
        name="support",
    )


handoffs = build_handoffs("handoffs")


# -- Skills: one agent loads a skill's instructions when it needs them ---------------------------

SKILLS = {
    "billing": "Billing skill: look the invoice up with lookup_invoice, then refund it.",
    "tech": "Tech skill: run run_diagnostics on the app that crashed.",
}


@tool
def load_skill(skill_name: str) -> str:
    """Load a skill's instructions (billing, tech) into the conversation."""
    return SKILLS.get(skill_name, f"no skill {skill_name}")


def loaded(messages: list[BaseMessage], skill: str) -> bool:
    return any(
        c["name"] == "load_skill" and c["args"].get("skill_name") == skill
        for m in messages
        if isinstance(m, AIMessage)
        for c in m.tool_calls
    )


def skilled(messages: list[BaseMessage]) -> AIMessage:
    """Per part of the request: load its skill, then use its tool; then sum up."""
    for domain in needed(question(messages), AGENTS):
        if not loaded(messages, domain):
            return call("load_skill", {"skill_name": domain})
        tool_name, args = TOOLS[domain]
        if not called(messages, tool_name):
            return call(tool_name, args)
    found = results(messages)
    return AIMessage("assistant done: " + " ".join(found) if found else GREETING)


skills = create_agent(
    form_model("skills", "assistant", skilled),
    [load_skill, *(TOOL_OF[a] for a in AGENTS)],
    system_prompt="You help customers. Skills: billing, tech; load one with load_skill.",
    name="assistant",
)


# -- Router: classify, Send to the agents in parallel, synthesize --------------------------------


class RouterState(TypedDict):
    question: str
    classifications: list[str]
    results: Annotated[list[dict[str, str]], operator.add]
    final_answer: str


class AgentInput(TypedDict):
    question: str


def build_router(graph: str) -> Any:
    classify_model = form_model(graph, "classify", router(AGENTS, all_at_once=True), large=True)
    synthesize_model = form_model(graph, "synthesize", _synthesize, large=True)
    agents = {name: _agent(graph, name) for name in AGENTS}

    def classify(state: RouterState) -> dict:
        reply = classify_model.invoke([HumanMessage(state["question"])])
        return {"classifications": route_of(reply)}

    def route(state: RouterState) -> Any:
        chosen = state["classifications"]
        sends = [Send(name, {"question": state["question"]}) for name in AGENTS if name in chosen]
        return sends or "synthesize"

    def run(name: str) -> Any:
        def query(state: AgentInput) -> dict:
            result = agents[name].invoke({"messages": [HumanMessage(state["question"])]})
            return {"results": [{"source": name, "result": text_of(result["messages"][-1])}]}

        return query

    def synthesize(state: RouterState) -> dict:
        found = "\n".join(r["result"] for r in state["results"])
        reply = synthesize_model.invoke([HumanMessage(state["question"]), AIMessage(found)])
        return {"final_answer": text_of(reply)}

    builder = StateGraph(RouterState)
    builder.add_node("classify", classify)
    for name in AGENTS:
        builder.add_node(name, run(name))
        builder.add_edge(name, "synthesize")
    builder.add_node("synthesize", synthesize)
    builder.add_edge(START, "classify")
    builder.add_conditional_edges("classify", route, [*AGENTS, "synthesize"])
    builder.add_edge("synthesize", END)
    return builder.compile()


def _synthesize(messages: list[BaseMessage]) -> AIMessage:
    found = results(messages)
    return AIMessage("Summary: " + " ".join(found) if found else GREETING)


router_workflow = build_router("router_workflow")


class RoutedState(TypedDict):
    question: str
    routes: list[str]
    answers: Annotated[list[str], operator.add]


def build_routed_answers(graph: str) -> Any:
    """The state ``{question, routes, answers}``: the agents' answers are the output."""
    route_model = form_model(graph, "router", router(AGENTS, all_at_once=True), large=True)
    agents = {name: _agent(graph, name) for name in AGENTS}

    def classify(state: RoutedState) -> dict:
        reply = route_model.invoke([HumanMessage(state["question"])])
        chosen = route_of(reply)
        return {"routes": chosen, "answers": [] if chosen else [text_of(reply)]}

    def send(state: RoutedState) -> Any:
        return [Send(name, state) for name in AGENTS if name in state["routes"]] or END

    def run(name: str) -> Any:
        def answer(state: RoutedState) -> dict:
            result = agents[name].invoke({"messages": [HumanMessage(state["question"])]})
            return {"answers": [text_of(result["messages"][-1])]}

        return answer

    builder = StateGraph(RoutedState)
    builder.add_node("router", classify)
    for name in AGENTS:
        builder.add_node(name, run(name))
        builder.add_edge(name, END)
    builder.add_edge(START, "router")
    builder.add_conditional_edges("router", send, [*AGENTS, END])
    return builder.compile()


routed_answers = build_routed_answers("routed_answers")


class QuestionOnly(TypedDict):
    question: str


def _takes_a_question() -> Any:
    builder = StateGraph(QuestionOnly)
    builder.add_node("echo", lambda state: {"question": state["question"]})
    builder.add_edge(START, "echo")
    return builder.compile()


question_only = _takes_a_question()  # rows with more fields than it takes: refused


# -- Custom workflow: agent nodes and plain nodes in one StateGraph ------------------------------


class WorkflowState(MessagesState):
    parts: list[str]
    resolution_notes: list[str]


def build_custom_workflow(graph: str) -> Any:
    """``triage`` (plain: keywords) picks the parts; ``billing`` is a ``create_agent`` added
    as a node, ``tech`` one invoked inside a node function; ``notes`` (plain) writes the
    resolution notes."""
    tech = _agent(graph, "tech")

    def triage(state: WorkflowState) -> dict:
        return {"parts": needed(question(state["messages"]), AGENTS)}

    def after_triage(state: WorkflowState) -> str:
        return state["parts"][0] if state["parts"] else "notes"

    def after_billing(state: WorkflowState) -> str:
        return "tech" if "tech" in state["parts"] else "notes"

    def tech_node(state: WorkflowState) -> dict:
        result = tech.invoke({"messages": state["messages"]})
        return {"messages": result["messages"][len(state["messages"]) :]}

    def notes(state: WorkflowState) -> dict:
        return {"resolution_notes": [f"parts handled: {', '.join(state['parts']) or 'none'}"]}

    builder = StateGraph(WorkflowState)
    builder.add_node("triage", triage)
    builder.add_node("billing", _agent(graph, "billing"))
    builder.add_node("tech", tech_node)
    builder.add_node("notes", notes)
    builder.add_edge(START, "triage")
    builder.add_conditional_edges("triage", after_triage, ["billing", "tech", "notes"])
    builder.add_conditional_edges("billing", after_billing, ["tech", "notes"])
    builder.add_edge("tech", "notes")
    builder.add_edge("notes", END)
    return builder.compile()


custom_workflow = build_custom_workflow("custom_workflow")


# -- LangGraph's supervisor tutorial: workers answer as named human messages ---------------------


def build_tutorial_supervisor(graph: str) -> Any:
    """The tutorial's supervisor node picks the next worker (here from its reply's
    ``ROUTE:`` line) and goes there by ``Command``; each worker runs its agent on the state
    and returns ``HumanMessage(content=<its answer>, name=<worker>)``."""
    supervisor_model = form_model(graph, "supervisor", router(AGENTS), large=True)
    agents = {name: _agent(graph, name) for name in AGENTS}

    def supervisor(state: MessagesState) -> Command:
        chosen = route_of(supervisor_model.invoke(state["messages"]))
        return Command(goto=chosen[0] if chosen else END)

    def worker(name: str) -> Any:
        def node(state: MessagesState) -> Command:
            result = agents[name].invoke(state)
            answer = HumanMessage(content=text_of(result["messages"][-1]), name=name)
            return Command(update={"messages": [answer]}, goto="supervisor")

        return node

    builder = StateGraph(MessagesState)
    builder.add_node("supervisor", supervisor, destinations=(*AGENTS, END))
    for name in AGENTS:
        builder.add_node(name, worker(name), destinations=("supervisor",))
    builder.add_edge(START, "supervisor")
    return builder.compile()


tutorial_supervisor = build_tutorial_supervisor("tutorial_supervisor")


# -- create_agent(response_format=...): the answer is the structured response --------------------


class Resolution(BaseModel):
    """What the agent resolved, as the caller wants it back."""

    handled: list[str]
    summary: str


def _resolution(messages: list[BaseMessage], *, as_tool: bool) -> AIMessage:
    want = needed(question(messages), AGENTS)
    for domain in want:
        tool_name, args = TOOLS[domain]
        if not called(messages, tool_name):
            return call(tool_name, args)
    found = results(messages) or [GREETING]
    answer = {"handled": want, "summary": " ".join(found)}
    if as_tool:
        return call("Resolution", answer)
    return AIMessage(json.dumps(answer))


def build_structured(graph: str, *, as_tool: bool) -> Any:
    strategy = ToolStrategy(Resolution) if as_tool else ProviderStrategy(Resolution)
    return create_agent(
        form_model(graph, "resolver", lambda m: _resolution(m, as_tool=as_tool)),
        [TOOL_OF[a] for a in AGENTS],
        response_format=strategy,
        name="resolver",
    )


structured_tool = build_structured("structured_tool", as_tool=True)
structured_provider = build_structured("structured_provider", as_tool=False)
