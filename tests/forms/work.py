"""Forms whose tool calls are not all work: LangGraph's supervisor tutorial (a router that
answers with ``with_structured_output(Router)``), ``create_agent`` with
``response_format=ToolStrategy(...)``, tools that raise under
``ToolNode(handle_tool_errors=True)`` and are retried, and the docs' hand-written network,
whose nodes act on their model's tool calls themselves.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import Any, Literal, TypedDict

from langchain.agents import create_agent
from langchain.agents.structured_output import ToolStrategy
from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
from langchain_core.runnables import Runnable
from langchain_core.tools import tool
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode
from langgraph.types import Command
from pydantic import BaseModel

from forms.model import FormModel, form_model, text_of
from forms.policy import (
    GREETING,
    RESULTS,
    TOOLS,
    call,
    called,
    done,
    needed,
    question,
    results,
    specialist,
)
from forms.tools import TOOL_OF

with warnings.catch_warnings():
    warnings.simplefilter("ignore", DeprecationWarning)
    from langgraph.prebuilt import create_react_agent

WORKERS = ("billing", "tech")


# -- LangGraph's multi-agent supervisor tutorial ----------------------------------------


class Router(TypedDict):
    """Worker to route to next. If no workers needed, route to FINISH."""

    next: Literal["billing", "tech", "FINISH"]


class RoutedState(MessagesState):
    next: str


def router_policy(messages: list[BaseMessage]) -> AIMessage:
    """The tutorial's supervisor: the first open part's worker, then FINISH."""
    want = [d for d in needed(question(messages)) if d in WORKERS]
    open_parts = [d for d in want if not done(messages, d)]
    return call("Router", {"next": open_parts[0] if open_parts else "FINISH"})


class FormatKeepingModel(FormModel):
    """A FormModel whose ``bind_tools`` keeps its keyword arguments, as providers' models do:
    ``with_structured_output`` then reaches the call with ``ls_structured_output_format``."""

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> Runnable:
        return self.bind(**kwargs) if kwargs else self


def build_tutorial(graph: str, *, keep_format: bool = False) -> Any:
    """The tutorial's graph: the supervisor node asks its model for a ``Router`` and returns
    ``Command(goto=...)``; each worker node runs an unnamed react agent and returns its
    answer with ``Command(goto="supervisor")``."""
    model_class = FormatKeepingModel if keep_format else FormModel
    llm = model_class(
        graph=graph, agent="supervisor", policy=router_policy, model_name="form-large"
    )
    router = llm.with_structured_output(Router)

    def supervisor(state: RoutedState) -> Command[Literal["billing", "tech", "__end__"]]:
        system = {"role": "system", "content": "Route the request to billing or tech."}
        goto = router.invoke([system, *state["messages"]])["next"]
        goto = END if goto == "FINISH" else goto
        return Command(goto=goto, update={"next": goto})

    def worker(name: str) -> Any:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            agent = create_react_agent(form_model(graph, name, specialist(name)), [TOOL_OF[name]])

        def node(state: RoutedState) -> Command[Literal["supervisor"]]:
            result = agent.invoke(state)
            answer = AIMessage(content=text_of(result["messages"][-1]), name=name)
            return Command(update={"messages": [answer]}, goto="supervisor")

        return node

    builder = StateGraph(RoutedState)
    builder.add_node("supervisor", supervisor)
    for name in WORKERS:
        builder.add_node(name, worker(name))
    builder.add_edge(START, "supervisor")
    return builder.compile()


def workers_answer(calls: Sequence[Any]) -> str:
    """The tutorial's answer: the last worker's reply (the supervisor only routes)."""
    replies = [c.text for c in calls if c.agent != "supervisor"]
    return replies[-1] if replies else ""


tutorial = build_tutorial("tutorial")
tutorial_with_format = build_tutorial("tutorial_with_format", keep_format=True)


# -- create_agent(response_format=ToolStrategy(...)) -------------------------------------


class Answer(BaseModel):
    """The answer to the customer."""

    summary: str
    domains: list[str]


def answering_policy(messages: list[BaseMessage]) -> AIMessage:
    """Each named domain's tool, then the structured ``Answer`` (its summary also as text)."""
    want = [d for d in needed(question(messages)) if d in WORKERS]
    for domain in want:
        name, args = TOOLS[domain]
        if not called(messages, name):
            return call(name, args)
    summary = " ".join(results(messages)) or GREETING
    return AIMessage(
        summary,
        tool_calls=[{"name": "Answer", "args": {"summary": summary, "domains": want}, "id": None}],
    )


structured_agent = create_agent(
    form_model("structured_agent", "support", answering_policy),
    [TOOL_OF[d] for d in WORKERS],
    response_format=ToolStrategy(Answer),
    name="support",
)


# -- tools that raise under ToolNode(handle_tool_errors=True) ----------------------------

DIAGNOSTICS_DOWN = "diagnostics service unavailable"


@tool("lookup_invoice")
def strict_lookup_invoice(invoice_id: str) -> str:
    """Look up an invoice by its full id (INV-...) and refund it."""
    if not invoice_id.startswith("INV-"):
        raise ValueError(f"unknown invoice {invoice_id!r}: ids start with INV-")
    return RESULTS["billing"]


@tool("run_diagnostics")
def broken_diagnostics(app: str) -> str:
    """Diagnose an app crash and fix it."""
    raise RuntimeError(DIAGNOSTICS_DOWN)


def failed(name: str, args: dict[str, Any]) -> bool:
    """Whether a call of these tools fails: the truth the trace's statuses are held to."""
    if name == "lookup_invoice":
        return not str(args.get("invoice_id", "")).startswith("INV-")
    return name == "run_diagnostics"


def retrying_policy(messages: list[BaseMessage]) -> AIMessage:
    """Billing first asks for invoice ``42`` (refused), then for ``INV-42``; tech tries the
    diagnostics twice with the same arguments and then gives up."""
    want = [d for d in needed(question(messages)) if d in WORKERS]
    answers = [m for m in messages if isinstance(m, ToolMessage)]
    for domain in want:
        name = "lookup_invoice" if domain == "billing" else "run_diagnostics"
        mine = [m for m in answers if m.name == name]
        if any(m.status != "error" for m in mine):
            continue  # done
        if domain == "billing" and len(mine) < 2:
            return call(name, {"invoice_id": "42" if not mine else "INV-42"})
        if domain == "tech" and len(mine) < 2:
            return call(name, {"app": "mobile"})
    found = results(messages)
    if "tech" in want and not any(RESULTS["tech"] in t for t in found):
        found.append("Diagnostics are unavailable right now.")
    return AIMessage(" ".join(found) or GREETING)


with warnings.catch_warnings():
    warnings.simplefilter("ignore", DeprecationWarning)
    retrying_agent = create_react_agent(
        form_model("retrying_agent", "support", retrying_policy),
        ToolNode([strict_lookup_invoice, broken_diagnostics], handle_tool_errors=True),
        name="support",
    )


# -- the docs' hand-written network: nodes that act on their model's tool calls ----------


def build_network(graph: str, *, pass_call: bool = True) -> Any:
    """Nodes ``billing`` and ``tech``; each calls its model in a loop, runs the work tool the
    model asks for itself (``tool.invoke(call)``, or ``tool.invoke(call["args"])`` without
    ``pass_call``) and answers a ``transfer_to_<peer>`` call with a ToolMessage and
    ``Command(goto=peer)``."""
    builder = StateGraph(MessagesState)
    for name in WORKERS:
        peers = [p for p in WORKERS if p != name]
        model = form_model(graph, name, specialist(name, peers=peers))
        builder.add_node(
            name, _network_node(model, TOOL_OF[name], pass_call), destinations=(*peers, END)
        )
    builder.add_edge(START, "billing")
    return builder.compile()


def _network_node(model: Any, work_tool: Any, pass_call: bool) -> Any:
    def node(state: MessagesState) -> Command:
        written: list[BaseMessage] = []
        while True:
            reply = model.invoke([*state["messages"], *written])
            written.append(reply)
            if not reply.tool_calls:
                return Command(goto=END, update={"messages": written})
            tool_call = reply.tool_calls[-1]
            if tool_call["name"].startswith("transfer_to_"):
                peer = tool_call["name"].removeprefix("transfer_to_")
                done_msg = ToolMessage("Successfully transferred", tool_call_id=tool_call["id"])
                return Command(goto=peer, update={"messages": [*written, done_msg]})
            if pass_call:
                written.append(work_tool.invoke(tool_call))
            else:
                result = work_tool.invoke(tool_call["args"])
                written.append(ToolMessage(result, tool_call_id=tool_call["id"]))

    return node


inline_network = build_network("inline_network")
inline_network_args = build_network("inline_network_args", pass_call=False)
