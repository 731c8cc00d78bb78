"""What the ``agenteval`` fixture gives a test: runs through the library API into this
process's store for the session, and :meth:`AgentEval.check`, whose failure message lists
what failed (the gate's thresholds and baseline, errored calls, broken evaluators)."""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Unpack

from agenteval_cli import api
from agenteval_cli.api import RunReport

if TYPE_CHECKING:
    from agenteval_cli.execution.options import RunOptions
    from agenteval_cli.spec.model import Spec

SpecArg = str | Path | None


class AgentEval:
    """The ``agenteval`` fixture: ``run`` and ``example`` (``arun`` and ``aexample`` in
    async tests) return the :class:`~agenteval_cli.api.RunReport` of what they ran;
    ``check`` asserts on it."""

    def __init__(self, *, store: Path, folder: Path, spec: SpecArg = None) -> None:
        self.store = store  # this process's store for the session
        self._folder = folder  # where a single example's dataset file is written
        self.spec = spec  # the marker's spec: what run() and example() run unless told

    def run(self, spec: SpecArg = None, **options: Unpack[RunOptions]) -> RunReport:
        """Run ``spec`` (the marker's unless given) as :func:`agenteval_cli.api.run` does:
        ``limit``, ``targets``, ``cache`` and the other run options apply."""
        return api.run(self._spec(spec), store=self.store, **options)

    async def arun(self, spec: SpecArg = None, **options: Unpack[RunOptions]) -> RunReport:
        """:meth:`run` in the test's running event loop."""
        return await api.arun(self._spec(spec), store=self.store, **options)

    def example(
        self,
        inputs: Mapping[str, Any],
        reference_outputs: Mapping[str, Any] | None = None,
        *,
        spec: SpecArg = None,
        id: str | None = None,
        metadata: Mapping[str, Any] | None = None,
        **options: Unpack[RunOptions],
    ) -> RunReport:
        """Run one example (a dataset row's ``inputs`` and ``outputs``) through every target
        of ``spec`` (or ``targets=[...]``), scored by its evaluators: each experiment's
        ``metrics`` are then that example's scores."""
        return api.run(
            self._one_example(spec, inputs, reference_outputs, id, metadata),
            store=self.store,
            **options,
        )

    async def aexample(
        self,
        inputs: Mapping[str, Any],
        reference_outputs: Mapping[str, Any] | None = None,
        *,
        spec: SpecArg = None,
        id: str | None = None,
        metadata: Mapping[str, Any] | None = None,
        **options: Unpack[RunOptions],
    ) -> RunReport:
        """:meth:`example` in the test's running event loop."""
        one = self._one_example(spec, inputs, reference_outputs, id, metadata)
        return await api.arun(one, store=self.store, **options)

    def check(
        self,
        report: RunReport,
        thresholds: Mapping[str, Any] | None = None,
        *,
        baseline: str | Path | None = None,
        max_error_rate: float | None = None,
    ) -> None:
        """Fail the test unless the run finished within its error and interrupt rates, no
        evaluator failed on every result, and the gate passed: ``thresholds`` and
        ``baseline`` are the spec's unless given. The message lists every failure."""
        __tracebackhide__ = True
        problems = report_problems(
            report, thresholds, baseline=baseline, max_error_rate=max_error_rate
        )
        if problems:
            names = ", ".join(e.name for e in report.experiments)
            lines = "\n".join(f"  {p}" for p in problems)
            raise AssertionError(f"agenteval: {len(problems)} problem(s) in {names}\n{lines}")

    def _spec(self, spec: SpecArg) -> str | Path:
        chosen = spec if spec is not None else self.spec
        if chosen is None:
            raise ValueError(
                "no spec: pass one, agenteval.run('configs/evals.yaml'), or mark the test "
                "@pytest.mark.agenteval(spec='configs/evals.yaml')"
            )
        return chosen

    def _one_example(
        self,
        spec: SpecArg,
        inputs: Mapping[str, Any],
        reference_outputs: Mapping[str, Any] | None,
        id: str | None,
        metadata: Mapping[str, Any] | None,
    ) -> Spec:
        """The spec with a dataset of one row, written beside this process's store."""
        from agenteval_cli.spec.model import DatasetSpec

        row: dict[str, Any] = {"inputs": dict(inputs), "outputs": dict(reference_outputs or {})}
        if id is not None:
            row["id"] = id
        if metadata:
            row["metadata"] = dict(metadata)
        folder = self._folder / "examples"
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"{uuid.uuid4().hex}.jsonl"
        path.write_text(json.dumps(row, ensure_ascii=False) + "\n", encoding="utf-8")
        loaded = api.load(self._spec(spec))
        dataset = DatasetSpec.model_validate({"path": str(path)})
        return loaded.model_copy(update={"dataset": dataset})


def report_problems(
    report: RunReport,
    thresholds: Mapping[str, Any] | None = None,
    *,
    baseline: str | Path | None = None,
    max_error_rate: float | None = None,
) -> list[str]:
    """A line per problem of a run: its own failures, then the gate's (thresholds and
    baseline the spec's unless given)."""
    problems = run_problems(report, max_error_rate)
    verdict = api.gate(report, thresholds=thresholds, baseline=baseline)
    return problems + [f"{f.target}: {f.message}" for f in verdict.failures]


def run_problems(report: RunReport, max_error_rate: float | None = None) -> list[str]:
    """A line per reason the run itself failed, as the command's exit code 3 or 130 says."""
    problems: list[str] = []
    if report.status != "finished":
        problems.append(f"the run was {report.status} before its end")
    allowed = report.spec.max_error_rate if max_error_rate is None else max_error_rate
    for errors in report.errors:
        if errors.errored and errors.over(allowed):
            reasons = "; ".join(f"{r.count} × {r.text}" for r in errors.reasons[:3])
            problems.append(
                f"{errors.target}: {errors.errored} of {errors.calls} {errors.unit} failed "
                f"(above max_error_rate {allowed:g}): {reasons}"
            )
        if errors.interrupted and errors.over_interrupts(report.spec.max_interrupt_rate):
            problems.append(
                f"{errors.target}: {errors.interrupted} of {errors.calls} request(s) stopped "
                f"at interrupt() (above max_interrupt_rate {report.spec.max_interrupt_rate:g})"
            )
    broken = report.broken_evaluators()
    if broken:
        problems.append(f"evaluator(s) {', '.join(broken)} failed on every result")
    return problems
