"""langgraph-supervisor forms: a supervisor over ``billing`` and ``tech``, as its README builds
it, with the options that change what a trace sees (output modes, handoff messages on or
off, custom handoff tools and prefixes, a checkpointer, a model without usage), and plain
functions that call such a graph themselves (inline, on the event loop, on a worker thread).

Every module-level graph is one spec target; its models log under the target's name.
"""

from __future__ import annotations

import warnings
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from langchain.agents import create_agent
from langchain_core.messages import HumanMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph_supervisor import create_handoff_tool, create_supervisor

from forms.model import form_model, text_of
from forms.policy import specialist, supervisor
from forms.tools import TOOL_OF

with warnings.catch_warnings():
    warnings.simplefilter("ignore", DeprecationWarning)
    from langgraph.prebuilt import create_react_agent

AGENTS = ("billing", "tech")
COORDINATOR = "supervisor"
DEMO_PROMPTS = {
    "supervisor": "You route each part of a customer's request to billing or tech.",
    "billing": "You are the billing specialist: invoices and refunds.",
    "tech": "You are the tech specialist: crashes and errors.",
}


def react_specialist(graph: str, name: str, **model: Any) -> Any:
    """``create_react_agent(model, tools, name=...)``, the README's specialist."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        return create_react_agent(
            form_model(graph, name, specialist(name), **model), [TOOL_OF[name]], name=name
        )


def agent_specialist(graph: str, name: str, *, prompt: str | None = None, **model: Any) -> Any:
    """``create_agent(model, tools, name=...)``, LangChain 1's agent."""
    return create_agent(
        form_model(graph, name, specialist(name), **model),
        [TOOL_OF[name]],
        system_prompt=prompt,
        name=name,
    )


def build(
    graph: str,
    *,
    agents: str = "react",
    handoff: Any = None,
    checkpointer: Any = None,
    compile_name: str | None = None,
    tech_usage: bool = True,
    **options: Any,
) -> Any:
    """``create_supervisor([billing, tech], model=..., supervisor_name="supervisor")``."""
    usage = {"billing": {}, "tech": {"usage": tech_usage}}
    if agents == "react":
        members = [react_specialist(graph, name, **usage[name]) for name in AGENTS]
    else:
        members = [
            agent_specialist(graph, name, prompt=DEMO_PROMPTS[name], **usage[name])
            for name in AGENTS
        ]
    policy = supervisor(
        AGENTS,
        **({"handoff": handoff} if handoff else {}),
        parallel=options.get("parallel_tool_calls", False),
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        workflow = create_supervisor(
            members,
            model=form_model(graph, COORDINATOR, policy, large=True),
            supervisor_name=COORDINATOR,
            **options,
        )
    if compile_name:
        return workflow.compile(checkpointer=checkpointer, name=compile_name)
    return workflow.compile(checkpointer=checkpointer)


# 1. The README's supervisor, and the bundled demo's style (create_agent specialists with
#    system prompts, full history, a named graph).
react_supervisor = build("react_supervisor")
demo_supervisor = build(
    "demo_supervisor",
    agents="create_agent",
    prompt=DEMO_PROMPTS["supervisor"],
    output_mode="full_history",
    compile_name="support_demo",
)

# 8. Handoff messages off: no transfer_back_to_supervisor pair, or no handoff pairs at all.
no_back_messages = build("no_back_messages", add_handoff_back_messages=False)
no_handoff_messages = build("no_handoff_messages", add_handoff_messages=False)

# 9. Handoff tools named by the user: given as tools, or by a prefix.
assign_supervisor = build(
    "assign_supervisor",
    tools=[create_handoff_tool(agent_name=a, name=f"assign_to_{a}") for a in AGENTS],
    handoff=lambda agent: f"assign_to_{agent}",
    output_mode="full_history",
)
delegate_supervisor = build(
    "delegate_supervisor",
    handoff_tool_prefix="delegate_to_",
    handoff=lambda agent: f"delegate_to_{agent}",
    output_mode="full_history",
)

# 12. A checkpointer and no thread id from the spec.
checkpointed = build("checkpointed", checkpointer=InMemorySaver())

# 14. The tech specialist's model reports no usage.
no_usage = build("no_usage", tech_usage=False)

# 16. Only each specialist's last message reaches the final state.
last_message = build("last_message", output_mode="last_message")


# 10b. The supervisor hands a request's parts to both agents in one turn (parallel tool
#      calls): langgraph-supervisor sends them to both at once.
parallel_supervisor = build("parallel_supervisor", parallel_tool_calls=True)


# 4. and 11. Plain functions that run a graph themselves, without any config.
_sync_graph = build("sync_function")
_async_graph = build("async_function")
_threaded_graph = build("threaded_function")


def _state(inputs: dict[str, Any]) -> dict[str, Any]:
    return {"messages": [HumanMessage(content=inputs["question"])]}


def _outputs(result: dict[str, Any]) -> dict[str, Any]:
    return {"final_response": text_of(result["messages"][-1])}


def sync_function(inputs: dict) -> dict:
    """A common pattern: ``graph.invoke`` inside a plain function."""
    return _outputs(_sync_graph.invoke(_state(inputs)))


async def async_function(inputs: dict) -> dict:
    return _outputs(await _async_graph.ainvoke(_state(inputs)))


_POOL = ThreadPoolExecutor(max_workers=4, thread_name_prefix="forms-worker")


def threaded_function(inputs: dict) -> dict:
    """The graph runs on a worker thread of the function's own pool."""
    return _outputs(_POOL.submit(_threaded_graph.invoke, _state(inputs)).result())


# A request whose answer is lost on the way back the first time (the graph ran, then the
# connection reset): the run's retry policy calls it again, and both attempts' calls are spent.
_flaky_graph = build("flaky_function")
FAILED_ONCE: set[str] = set()


async def flaky_function(inputs: dict) -> dict:
    result = await _flaky_graph.ainvoke(_state(inputs))
    if inputs["question"] not in FAILED_ONCE:
        FAILED_ONCE.add(inputs["question"])
        raise ConnectionError("connection reset by peer")
    return _outputs(result)
