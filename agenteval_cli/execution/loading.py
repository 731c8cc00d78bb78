"""A spec's targets and evaluators, imported and built: in the process that runs the spec,
and again on each Ray worker from the spec it is sent."""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from agenteval_cli.core.errors import UserError, did_you_mean
from agenteval_cli.core.imports import import_object
from agenteval_cli.core.records import Example
from agenteval_cli.evaluators.scoring import BoundEvaluator
from agenteval_cli.spec.model import Spec
from agenteval_cli.targets import Target, TargetOptionError, adapt
from agenteval_cli.targets.inputs import check_active_agent
from agenteval_cli.trace.declarations import ActiveAgent


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
        obj = import_object(target.target, base_dir=spec.base_dir, file=str(spec.source), line=line)
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
        if target.active_agent is not None:
            active = target.active_agent
            loaded[-1].active_agent = ActiveAgent(active.key, active.default)
        loaded[-1].skill_tools = dict(target.skill_tools)
    # Tracing is made ready with the targets, before the run starts: a target that imports
    # LangChain lazily is then traced on its first call (called once, billed once), and a
    # run of targets that never load LangChain pays the import here, not in its loop.
    import agenteval_cli.trace.recorder  # noqa: F401
    return loaded


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


def load_evaluators(spec: Spec, examples: Sequence[Example] | None = None) -> list[BoundEvaluator]:
    """Every evaluator of the spec; with ``examples``, sampled evaluators get their sample."""
    import agenteval_cli.evaluators  # noqa: F401 (registers every family)
    from agenteval_cli.evaluators.loading import bind_evaluators

    return bind_evaluators(spec, examples)
