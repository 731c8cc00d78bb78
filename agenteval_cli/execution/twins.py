"""A faulted target's fault-free twin: the target of the same spec that is the same graph,
called the same way, without faults. Its results are the steady state the faulted
target's are paired with, example by example (the recovery evaluator's fault cost)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from agenteval_cli.spec.model import Spec, TargetSpec

# What does not change what a target does: its name, and how its trace is read.
_NOT_BEHAVIOUR = {"name", "faults", "coordinators", "skill_tools", "active_agent", "cache_env"}


def fault_free_twin(spec: Spec, name: str) -> str | None:
    """The first target of ``spec`` that is target ``name`` without its faults, or None
    (``name`` has no faults, or no target is its twin)."""
    targets = {t.name: t for t in spec.targets}
    faulted = targets.get(name)
    if faulted is None or not faulted.faults:
        return None
    for other in spec.targets:
        if not other.faults and _behaviour(other) == _behaviour(faulted):
            return other.name
    return None


def twin_experiments(spec: Spec, experiments: Mapping[str, Any]) -> dict[str, str]:
    """Each faulted target's experiment id mapped to its twin's, for the targets of this run
    (``experiments``: target name to its experiment, which has an ``id``)."""
    found = {}
    for name, experiment in experiments.items():
        twin = fault_free_twin(spec, name)
        if twin is not None and twin in experiments:
            found[experiment.id] = experiments[twin].id
    return found


def _behaviour(target: TargetSpec) -> dict[str, Any]:
    return target.model_dump(mode="json", exclude=_NOT_BEHAVIOUR)
