"""A spec's targets and evaluators, imported and built: in the process that runs the spec,
and again on each Ray worker from the spec it is sent."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from agenteval_cli.core.errors import UserError, did_you_mean
from agenteval_cli.core.imports import import_object
from agenteval_cli.core.records import Example
from agenteval_cli.core.redact import is_secret_name
from agenteval_cli.evaluators.scoring import BoundEvaluator
from agenteval_cli.spec.model import Spec, TargetSpec
from agenteval_cli.targets import Target, TargetOptionError, adapt
from agenteval_cli.targets.inputs import check_active_agent
from agenteval_cli.targets.names import SystemNames, graph_names
from agenteval_cli.trace.declarations import ActiveAgent
from agenteval_cli.trace.pending import prepare_tracing

if TYPE_CHECKING:
    from agenteval_cli.targets.users import SimulatedUser, User


def load_targets(spec: Spec, only: list[str] | None = None) -> list[Target]:
    """Import and adapt every target (or those named in ``only``). A graph is checked
    against its input schema here, so a target no example can reach fails before any call."""
    from agenteval_cli.core.yamlsource import format_key_path

    names = [t.name for t in spec.targets]
    for name in only or []:
        if name not in names:
            raise UserError(
                f"--target {name!r} is not a target of this spec",
                file=spec.source,
                line=spec.line_of("targets"),
                hint=did_you_mean(name, names) or f"targets: {', '.join(names)}",
            )
    loaded = []
    for target in spec.targets:
        if only and target.name not in only:
            continue
        line = spec.line_of("targets", target.name)
        prepare_input: Mapping[str, Any] | Callable[..., Any] | None
        if isinstance(target.input, str):  # the import path of a function
            input_line = spec.line_of("targets", target.name, "input")
            prepare_input = import_object(
                target.input, base_dir=spec.base_dir, file=str(spec.source), line=input_line
            )
            if not callable(prepare_input):
                raise UserError(
                    f"input {target.input!r} is a {type(prepare_input).__name__}, not a function",
                    file=spec.source,
                    line=input_line,
                    hint="name a function fn(inputs: dict) -> dict",
                )
        else:
            prepare_input = target.input
        if target.remote is not None:
            loaded.append(_remote_target(spec, target, prepare_input))
            _declarations(loaded[-1], target)
            continue
        assert target.target is not None
        obj = import_object(target.target, base_dir=spec.base_dir, file=str(spec.source), line=line)
        served = _served_by(obj)
        if served is not None:  # a RemoteGraph object: run as remote: is
            loaded.append(_served_target(served, target, target.target, prepare_input))
            _declarations(loaded[-1], target)
            continue
        try:
            loaded.append(
                adapt(
                    obj,
                    name=target.name,
                    import_path=target.target,
                    input_key=target.input_key,
                    initial_state=target.initial_state,
                    input=prepare_input,
                    output=target.output,
                    config=target.config.runnable_config() if target.config else None,
                )
            )
            if target.active_agent is not None and loaded[-1].kind == "graph":
                check_active_agent(obj, target.active_agent.key)
        except TypeError as exc:
            raise UserError(str(exc), file=spec.source, line=line) from None
        except TargetOptionError as exc:
            at = ("targets", target.name, *exc.at)
            raise UserError(
                f"{format_key_path(at)}: {exc}",
                file=spec.source,
                line=spec.line_of(*at),
                hint=exc.hint,
            ) from None
        loaded[-1].coordinators = _coordinators(loaded[-1], obj, target.coordinators)
        _declarations(loaded[-1], target)
        loaded[-1].names = _names(loaded[-1], obj)
    # Tracing is made ready with the targets, before the run starts: a target that imports
    # LangChain lazily is then traced on its first call (called once, billed once), and a
    # run of targets that never load LangChain never imports it.
    prepare_tracing(target.kind for target in loaded)

    return loaded


def _declarations(loaded: Target, target: TargetSpec) -> None:
    """What the spec declares about how to read the target's trace."""
    if target.active_agent is not None:
        active = target.active_agent
        loaded.active_agent = ActiveAgent(active.key, active.default)
    loaded.skill_tools = dict(target.skill_tools)
    loaded.faults = tuple(target.faults)


def _remote_target(
    spec: Spec, target: TargetSpec, prepare_input: Mapping[str, Any] | Callable[..., Any] | None
) -> Target:
    """A graph served by LangGraph's Agent Server; each header's value read from the
    variable the spec names, and remembered as a secret so no output ever shows it."""
    from agenteval_cli.core.redact import remember
    from agenteval_cli.targets.remote import RemoteGraph

    remote = target.remote
    assert remote is not None
    headers = {}
    for header, variable in remote.headers.items():
        value = os.environ.get(variable)
        if not value:
            raise UserError(
                f"targets.{target.name}.remote.headers.{header}: ${variable} is not set",
                file=spec.source,
                line=spec.line_of("targets", target.name, "remote", "headers", header),
                hint=f"export {variable}=... before the run (its value is the header's)",
            )
        remember(value)
        headers[header] = value
    return _served_target(
        RemoteGraph(remote.url, remote.graph, headers), target, target.described, prepare_input
    )


def _served_by(obj: Any) -> Any:
    """Where a LangGraph ``RemoteGraph`` object sends its runs; None for anything else
    (checked only once LangGraph is loaded: a plain function's module does not load it)."""
    if "langgraph.pregel.remote" not in sys.modules:
        return None
    from agenteval_cli.core.redact import remember
    from agenteval_cli.targets.remote import served_by

    served = served_by(obj)
    for value in served.headers.values() if served is not None else ():
        remember(value)  # a key its client read from the environment, whatever its name
    return served


def _served_target(
    served: Any,
    target: TargetSpec,
    described: str,
    prepare_input: Mapping[str, Any] | Callable[..., Any] | None,
) -> Target:
    """The target running a served graph; its coordinators read off the server's drawing
    of it, with those the spec declares."""
    from agenteval_cli.targets.remote import remote_target, served_coordinators

    loaded = remote_target(
        served,
        name=target.name,
        import_path=described,
        input_key=target.input_key,
        initial_state=target.initial_state,
        input=prepare_input,
        output=target.output,
        config=target.config.runnable_config() if target.config else None,
    )
    loaded.coordinators = tuple(dict.fromkeys([*target.coordinators, *served_coordinators(served)]))
    return loaded


def load_simulated_user(spec: Spec) -> SimulatedUser | None:
    """The spec's ``simulated_user:``: its function imported, or its chat model built as a
    judge's is (credentials checked here); None when the spec has none."""
    section = spec.simulated_user
    if section is None:
        return None
    from agenteval_cli.targets.users import FunctionUser, LLMUser, SimulatedUser, StopRule

    user: User
    if section.function is not None:
        line = spec.line_of("simulated_user", "function")
        fn = import_object(
            section.function, base_dir=spec.base_dir, file=str(spec.source), line=line
        )
        if not callable(fn):
            raise UserError(
                f"simulated_user.function {section.function!r} is a {type(fn).__name__}, "
                "not a function",
                file=spec.source,
                line=line,
                hint="name a function fn(transcript, *, inputs, turn) -> str | dict | None",
            )
        user = FunctionUser(fn, section.function)
    else:
        user = LLMUser(_user_model(spec), system=section.system, marker=section.stop.marker)
    stop = StopRule(section.stop.marker, section.stop.judge, section.stop.threshold)
    described = section.model_dump(mode="json")
    described["model_kwargs"] = {  # a secret-named option's value never: it writes no turn
        name: "(secret)" if is_secret_name(name) else value
        for name, value in sorted(section.model_kwargs.items())
    }
    return SimulatedUser(
        user,
        max_turns=section.max_turns,
        stop=stop,
        pricing=spec.pricing,
        identity=json.dumps(described, sort_keys=True),
    )


def _user_model(spec: Spec) -> Any:
    from agenteval_cli.evaluators.judge_model import JudgeUnavailable, make_chat_model

    section = spec.simulated_user
    assert section is not None and section.model is not None
    kwargs = dict(section.model_kwargs)
    if section.base_url:
        kwargs["base_url"] = section.base_url
    line = spec.line_of("simulated_user", "model")
    try:
        return make_chat_model(section.model, kwargs)
    except JudgeUnavailable as exc:
        hint = f"set {exc.variable}, or give a base_url" if exc.variable else None
        raise UserError(
            f"simulated_user.model {section.model!r} cannot run: {exc}",
            file=spec.source,
            line=line,
            hint=hint,
        ) from None
    except ValueError as exc:  # init_chat_model: an unknown provider, or a model it cannot infer
        first = (str(exc).splitlines() or [""])[0]
        raise UserError(
            f"simulated_user.model {section.model!r}: {first}",
            file=spec.source,
            line=line,
            hint="write provider:model, e.g. openai:gpt-4.1-mini",
        ) from None


def _coordinators(target: Target, obj: Any, declared: Sequence[str]) -> tuple[str, ...]:
    """The agents that regain control by design: declared in the spec, or found in the
    graph (the target, or the graphs a function target holds): by its own edges, or as
    agents whose tools run other agents."""
    found: list[str] = []
    if target.kind == "graph" or "langgraph" in sys.modules:
        from agenteval_cli.trace.agent_tools import agent_tool_coordinators, graphs_run_by
        from agenteval_cli.trace.attribution import graph_coordinators

        for graph in [obj] if target.kind == "graph" else graphs_run_by(obj):
            found += [*graph_coordinators(graph), *agent_tool_coordinators(graph, target.name)]
    return tuple(dict.fromkeys([*declared, *found]))


def _names(target: Target, obj: Any) -> SystemNames:
    """The agents, tools and skills a graph target has; none read for a function or a
    Runnable, whose graph (if any) is only known by what it runs. A declared
    ``active_agent`` names agents by a state value: they are known after the run."""
    if target.kind != "graph":
        return SystemNames()
    try:
        names = graph_names(obj, target.name, target.skill_tools)
    except Exception:  # a graph that cannot be read up front: its traces tell after the run
        return SystemNames()
    return replace(names, agents=None) if target.active_agent is not None else names


def load_evaluators(
    spec: Spec,
    examples: Sequence[Example] | None = None,
    *,
    warn: Callable[[str], None] | None = None,
) -> list[BoundEvaluator]:
    """Every evaluator of the spec; with ``examples``, sampled evaluators get their sample.
    ``warn`` gets what is skipped (a judge without credentials); by default it is printed
    on stderr."""
    import agenteval_cli.evaluators  # noqa: F401 (registers every family)
    from agenteval_cli.evaluators.loading import bind_evaluators

    return bind_evaluators(spec, examples, warn=warn)
