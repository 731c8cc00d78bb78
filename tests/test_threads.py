"""Plain-function targets that run their graph on another thread are traced like inline ones,
and a target whose call no LangChain run was seen in is flagged untraced, with one warning."""

from __future__ import annotations

import asyncio
import contextvars
import json
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from projects import project
from typer.testing import CliRunner

from agenteval_cli.cli import app
from agenteval_cli.core.records import Example, Trace
from agenteval_cli.execution.guards.daemon_pool import DaemonThreadPool
from agenteval_cli.execution.runner import Runner
from agenteval_cli.execution.target_calls import UNTRACED_NO_RUN
from agenteval_cli.targets import Target
from agenteval_cli.trace.threads import follow_threads

# A supervisor hands over to weather_agent, which looks the weather up and answers; the
# supervisor then answers. Scripted tokens (input, output): supervisor 7+2 and 30+4, weather
# 10+5 and 20+3.
TARGETS = '''
import asyncio
import threading
import time
import warnings
from concurrent.futures import ThreadPoolExecutor

from fakes import reply, scripted
from langchain_core.messages import HumanMessage
from langchain_core.tools import tool
from langgraph.graph import END, START, StateGraph
from langgraph_supervisor import create_supervisor
from typing_extensions import TypedDict

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    from langgraph.prebuilt import create_react_agent


@tool
def get_weather(city: str) -> str:
    """Current weather for a city."""
    return f"Sunny in {city}"


ACTIVE = [0, 0]  # calls inside slow_weather now, and the most there ever were
LOCK = threading.Lock()


@tool("get_weather")
def slow_weather(city: str) -> str:
    """Current weather for a city, after a while."""
    with LOCK:
        ACTIVE[0] += 1
        ACTIVE[1] = max(ACTIVE)
    time.sleep(0.05)
    with LOCK:
        ACTIVE[0] -= 1
    return f"Sunny in {city}"


def graph(city, weather_tool=get_weather):
    weather = create_react_agent(
        scripted(
            "weather-model",
            reply(tools=[("get_weather", {"city": city})], tokens=(10, 5)),
            reply(f"It is sunny in {city}.", tokens=(20, 3)),
        ),
        tools=[weather_tool],
        name="weather_agent",
        prompt="You are weather_agent.",
    )
    supervisor = scripted(
        "supervisor-model",
        reply(tools=[("transfer_to_weather_agent", {})], tokens=(7, 2)),
        reply(f"Final: sunny in {city}.", tokens=(30, 4)),
    )
    return create_supervisor([weather], model=supervisor).compile()


def state(inputs):
    return {"messages": [HumanMessage(inputs["question"])]}


def answer(result):
    return {"final_response": result["messages"][-1].content}


def inline(inputs):
    return answer(graph(inputs["city"]).invoke(state(inputs)))


def pool(inputs):
    with ThreadPoolExecutor(max_workers=1) as executor:
        return answer(executor.submit(graph(inputs["city"]).invoke, state(inputs)).result())


async def default_executor(inputs):
    loop = asyncio.get_running_loop()
    return answer(await loop.run_in_executor(None, graph(inputs["city"]).invoke, state(inputs)))


USER_POOL = ThreadPoolExecutor(max_workers=1)  # made at import; its thread serves every call


async def user_pool(inputs):
    loop = asyncio.get_running_loop()
    invoke = graph(inputs["city"]).invoke
    return answer(await loop.run_in_executor(USER_POOL, invoke, state(inputs)))


def thread(inputs):
    done = {}

    def work():
        done["state"] = graph(inputs["city"]).invoke(state(inputs))

    worker = threading.Thread(target=work)
    worker.start()
    worker.join()
    return answer(done["state"])


class Worker(threading.Thread):
    def __init__(self, inputs):
        super().__init__()
        self.inputs = inputs

    def run(self):
        self.state = graph(self.inputs["city"]).invoke(state(self.inputs))


def thread_subclass(inputs):
    worker = Worker(inputs)
    worker.start()
    worker.join()
    return answer(worker.state)


def slow_pool(inputs):
    with ThreadPoolExecutor(max_workers=1) as executor:
        invoke = graph(inputs["city"], slow_weather).invoke
        outputs = answer(executor.submit(invoke, state(inputs)).result())
    return {**outputs, "peak": ACTIVE[1]}


def constant(inputs):
    return {"final_response": "always the same"}


class Counter(TypedDict):
    count: int


def _count(state):
    return {"count": state["count"] + 1}


def no_model(inputs):
    builder = StateGraph(Counter)
    builder.add_node("count", _count)
    builder.add_edge(START, "count")
    builder.add_edge("count", END)
    result = builder.compile().invoke({"count": 1})
    return {"final_response": str(result["count"])}
'''

THREADED = ["pool", "default_executor", "user_pool", "thread", "thread_subclass"]
CITIES = ["Oslo", "Lima", "Quito", "Rome", "Kyiv", "Doha", "Baku", "Riga"]
PATH = ["supervisor", "weather_agent", "supervisor"]
TOOLS = ["transfer_to_weather_agent", "get_weather", "transfer_back_to_supervisor"]
TOKENS = {  # by hand: supervisor 7 + 30 in, 2 + 4 out; weather 10 + 20 in, 5 + 3 out
    "supervisor-model": {"input": 37, "output": 6, "total": 43},
    "weather-model": {"input": 30, "output": 8, "total": 38},
}

cli = CliRunner()


def write_run(tmp: Path, targets: list[str], cities: list[str], concurrency: int) -> Path:
    rows = [
        {"id": c.lower(), "inputs": {"question": f"Weather in {c}?", "city": c}} for c in cities
    ]
    return project(
        tmp,
        TARGETS,
        module="threaded_targets.py",
        targets={name: name for name in targets},
        data=rows,
        prefix="threads",
        evaluators="[token_cost]",
        concurrency=concurrency,
    )


def run_cli(tmp: Path, spec: Path):
    out = tmp / "r.json"
    result = cli.invoke(
        app,
        ["run", str(spec), "--store", str(tmp / "db"), "--json", str(out)],
        catch_exceptions=False,
    )
    experiments = {e["target"]: e for e in json.loads(out.read_text())["experiments"]}
    return result, experiments


@pytest.fixture(scope="module")
def threaded(tmp_path_factory):
    """Every thread form, the inline call, a constant target and a graph without models."""
    tmp = tmp_path_factory.mktemp("threads")
    names = ["inline", *THREADED, "constant", "no_model"]
    result, experiments = run_cli(tmp, write_run(tmp, names, CITIES[:2], concurrency=2))
    return result, experiments


def untimed(calls: list[dict]) -> list[dict]:
    """Tool calls less when they ran, which differs between any two runs."""
    return [{k: v for k, v in c.items() if k not in ("started_at", "ended_at")} for c in calls]


def by_example(experiment: dict) -> dict[str, dict]:
    return {r["example_id"]: r for r in experiment["results"]}


@pytest.mark.parametrize("target", THREADED)
def test_a_graph_run_on_a_thread_is_traced_as_an_inline_one(threaded, target):
    result, experiments = threaded
    assert result.exit_code == 0, result.output
    inline = by_example(experiments["inline"])
    for city in CITIES[:2]:
        got = by_example(experiments[target])[city.lower()]
        assert got["error"] is None
        assert got["outputs"]["final_response"] == f"Final: sunny in {city}."
        trace = got["trace"]
        assert trace["agent_path"] == PATH
        assert [t["name"] for t in trace["tool_calls"]] == TOOLS
        assert trace["tool_calls"][1]["args"] == {"city": city}
        assert trace["tool_calls"][1]["output"] == f"Sunny in {city}"
        assert trace["tokens"] == TOKENS
        assert trace["untraced"] is None
        reference = inline[city.lower()]["trace"]
        assert (trace["agent_path"], untimed(trace["tool_calls"]), trace["tokens"]) == (
            reference["agent_path"],
            untimed(reference["tool_calls"]),
            reference["tokens"],
        )
        # the times are the call's own: recorded on the thread as inline, never left out
        assert [c["started_at"] is None for c in trace["tool_calls"]] == [
            c["started_at"] is None for c in reference["tool_calls"]
        ]


def test_a_call_without_langchain_runs_is_flagged_and_warned_about_once(threaded):
    result, experiments = threaded
    assert result.exit_code == 0
    for got in experiments["constant"]["results"]:
        assert got["error"] is None
        assert got["trace"]["untraced"] == UNTRACED_NO_RUN
        assert got["trace"]["agent_path"] == [] and got["trace"]["tokens"] == {}
    warnings = [line for line in result.output.splitlines() if line.startswith("warning:")]
    assert len(warnings) == 1
    assert warnings[0].startswith("warning: target 'constant': 2 result(s) untraced")
    assert UNTRACED_NO_RUN in warnings[0]
    assert "asyncio.to_thread" in warnings[0]


def test_a_graph_without_models_is_not_untraced(threaded):
    _, experiments = threaded
    for got in experiments["no_model"]["results"]:
        assert got["outputs"] == {"final_response": "2"}
        assert got["trace"]["untraced"] is None
        assert got["trace"]["tokens"] == {}


def test_concurrent_calls_on_thread_pools_each_keep_their_own_trace(tmp_path):
    result, experiments = run_cli(tmp_path, write_run(tmp_path, ["slow_pool"], CITIES, 4))
    assert result.exit_code == 0, result.output
    results = by_example(experiments["slow_pool"])
    assert sorted(results) == sorted(city.lower() for city in CITIES)
    assert max(r["outputs"]["peak"] for r in results.values()) >= 2  # calls did overlap
    for city in CITIES:
        got = results[city.lower()]
        assert got["outputs"]["final_response"] == f"Final: sunny in {city}."
        trace = got["trace"]
        assert trace["agent_path"] == PATH
        assert [t["name"] for t in trace["tool_calls"]] == TOOLS
        assert trace["tool_calls"][1]["args"] == {"city": city}
        assert trace["tool_calls"][1]["output"] == f"Sunny in {city}"
        assert trace["tokens"] == TOKENS
    assert "warning:" not in result.output


# -- the runner, without the CLI --------------------------------------------------------


def test_a_failed_call_that_ran_nothing_traceable_is_untraced_but_not_warned_about():
    """A failed call is measured from its trace too, so one in which no LangChain run was
    seen has trace figures that are unknown (untraced), never 0; the run's untraced warning
    is about answered calls and leaves it out."""
    from agenteval_cli.execution.untraced import UntracedResults

    async def call(inputs, callbacks):
        raise ValueError("boom")

    [(_, result)] = _run(Runner([Target("t", "x:t", "function", call)], []))
    assert result.error == "ValueError: boom"
    assert result.trace.untraced is not None
    counted = UntracedResults()
    counted.counting()("t", result)
    assert counted.warnings() == []


def test_an_untraced_trace_keeps_its_reason_in_the_store(tmp_path):
    from agenteval_cli.store.results import _trace_json, trace_from_row

    stored = _trace_json(Trace(untraced='no run, "quoted" é'))
    assert json.loads(stored)["untraced"] == 'no run, "quoted" é'
    assert trace_from_row(stored, 1.5, None).untraced == 'no run, "quoted" é'
    assert "untraced" not in json.loads(_trace_json(Trace()))


def _run(runner: Runner):
    results = []
    items = runner.work([Example("e", {"question": "q"})])
    asyncio.run(runner.run(items, lambda item, r: results.append((item, r))))
    return results


# -- follow_threads itself ----------------------------------------------------------------

VAR: contextvars.ContextVar[str] = contextvars.ContextVar("threads_test", default="unset")


def _seen_in_thread(start) -> str:
    """What VAR holds in the thread ``start`` runs ``VAR.get`` on."""
    seen: list[str] = []
    start(lambda: seen.append(VAR.get()))
    return seen[0]


def _in_thread(fn) -> None:
    worker = threading.Thread(target=fn)
    worker.start()
    worker.join()


def _in_pool(fn) -> None:
    with ThreadPoolExecutor(max_workers=1) as pool:
        pool.submit(fn).result()


def _in_daemon_pool(fn) -> None:
    pool = DaemonThreadPool()
    pool.submit(fn).result()
    pool.shutdown()


@pytest.mark.parametrize("start", [_in_thread, _in_pool, _in_daemon_pool])
def test_threads_and_pools_see_the_starters_context_only_inside_the_block(start):
    token = VAR.set("caller")
    try:
        assert _seen_in_thread(start) == "unset"  # what Python does on its own
        with follow_threads():
            assert _seen_in_thread(start) == "caller"
        assert _seen_in_thread(start) == "unset"
    finally:
        VAR.reset(token)


def test_each_submission_carries_its_own_submitters_context():
    """A worker thread reused by several callers runs each job in its caller's context."""
    pool = ThreadPoolExecutor(max_workers=1)

    async def caller(name: str) -> str:
        VAR.set(name)
        await asyncio.sleep(0)
        return await asyncio.get_running_loop().run_in_executor(pool, VAR.get)

    async def main() -> list[str]:
        return await asyncio.gather(*(caller(f"call-{i}") for i in range(6)))

    with follow_threads():
        assert asyncio.run(main()) == [f"call-{i}" for i in range(6)]
    pool.shutdown()


def test_the_original_methods_come_back_even_after_an_interrupt():
    submits = {cls: cls.__dict__["submit"] for cls in (ThreadPoolExecutor, DaemonThreadPool)}
    start = threading.Thread.start
    with pytest.raises(KeyboardInterrupt), follow_threads():
        with follow_threads():  # nested: the outer block still follows after this one
            pass
        assert ThreadPoolExecutor.__dict__["submit"] is not submits[ThreadPoolExecutor]
        assert DaemonThreadPool.__dict__["submit"] is not submits[DaemonThreadPool]
        assert threading.Thread.start is not start
        raise KeyboardInterrupt
    for cls, submit in submits.items():
        assert cls.__dict__["submit"] is submit
    assert threading.Thread.start is start
