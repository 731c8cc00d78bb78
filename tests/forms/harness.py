"""Run a form through the CLI and hold every result against the truth from the model log.

:func:`write_form` writes the spec and the dataset into a folder; :func:`run_spec` runs
``agenteval run SPEC --json OUT`` on them in-process and returns the results of each
target, with the traces read back from the store. :func:`mismatches` lists every way a
target's results differ from the truth, as ``example: what: agenteval=X truth=Y`` lines.
"""

from __future__ import annotations

import json
import math
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from typer.testing import CliRunner

from agenteval_cli.cli import app
from agenteval_cli.core.records import Trace
from agenteval_cli.store.db import Store
from forms.model import LOG, PRICING, Call
from forms.truth import Form, Truth, truth_of

BASE_EVALUATORS = ["routing_accuracy", "resolution_coverage", "handoff_chain_length", "token_cost"]


@dataclass
class Row:
    """One result of one target: the JSON document's entry and the stored trace."""

    example_id: str
    repetition: int
    inputs: dict[str, Any]
    reference: dict[str, Any]
    json: dict[str, Any]
    trace: Trace

    @property
    def question(self) -> str:
        return str(self.inputs.get("question", ""))

    @property
    def scores(self) -> dict[str, Any]:
        return self.json["scores"]


@dataclass
class Run:
    output: str
    document: dict[str, Any]
    rows: dict[str, list[Row]]  # by target name
    calls: list[Call]  # the model log of this run

    def metrics(self, target: str) -> dict[str, Any]:
        return next(e for e in self.document["experiments"] if e["target"] == target)["metrics"]


def write_form(
    folder: Path,
    *,
    targets: dict[str, Any],
    rows: list[dict[str, Any]],
    evaluators: list[Any] | None = None,
    name: str = "forms",
    **spec: Any,
) -> Path:
    """The spec (returned) and the dataset of a form's run, written into ``folder``. The
    spec's keys come in this order: ``experiment_prefix``, ``dataset``, ``targets`` (so
    the first target is on line 4), ``evaluators``, ``concurrency`` (4), ``pricing``, then
    those of ``spec``."""
    folder.mkdir(parents=True, exist_ok=True)
    document = {
        "experiment_prefix": name,
        "dataset": "data.jsonl",
        "targets": targets,
        "evaluators": evaluators or BASE_EVALUATORS,
        "concurrency": 4,
        "pricing": PRICING,
        **spec,
    }
    spec_path = folder / "spec.yaml"
    spec_path.write_text(yaml.safe_dump(document, sort_keys=False))
    (folder / "data.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return spec_path


def run_spec(
    folder: Path,
    *,
    targets: dict[str, Any],
    rows: list[dict[str, Any]],
    evaluators: list[Any] | None = None,
    name: str = "forms",
    exit_code: int = 0,
    **spec: Any,
) -> Run:
    """Run the form :func:`write_form` writes; its results, read back from the store."""
    spec_path = write_form(
        folder, targets=targets, rows=rows, evaluators=evaluators, name=name, **spec
    )
    out, db = folder / "out.json", folder / "agenteval.db"
    LOG.clear()
    result = CliRunner().invoke(
        app,
        ["run", str(spec_path), "--store", str(db), "--json", str(out)],
        catch_exceptions=False,
    )
    assert result.exit_code == exit_code, result.output
    data = json.loads(out.read_text())
    by_target: dict[str, list[Row]] = {}
    with Store(db) as store:
        for experiment in data["experiments"]:
            stored = list(store.results(experiment["id"]))
            rows_out = []
            for entry, kept in zip(experiment["results"], stored, strict=True):
                assert entry["example_id"] == kept.result.example_id
                rows_out.append(
                    Row(
                        example_id=entry["example_id"],
                        repetition=entry["repetition"],
                        inputs=kept.inputs,
                        reference=kept.reference_outputs,
                        json=entry,
                        trace=kept.result.trace,
                    )
                )
            by_target[experiment["target"]] = rows_out
    return Run(output=result.output, document=data, rows=by_target, calls=LOG.calls())


def truths(run: Run, graph: str, form: Form) -> dict[str, Truth]:
    """The truth of each question the graph ``graph`` answered in this run."""
    by_question: dict[str, list[Call]] = {}
    for call in run.calls:
        if call.graph == graph:
            by_question.setdefault(call.question, []).append(call)
    return {q: truth_of(calls, form) for q, calls in by_question.items()}


def _differ(problems: list[str], where: str) -> Any:
    def differ(what: str, got: Any, want: Any) -> None:
        problems.append(f"{where}: {what}: agenteval={got!r} truth={want!r}")

    return differ


def _close(a: Any, b: Any) -> bool:
    if a is None or b is None:
        return a is None and b is None
    return math.isclose(float(a), float(b), rel_tol=1e-9, abs_tol=1e-12)


# The metrics of BASE_EVALUATORS that need a final answer: null for a result without one.
ANSWER_METRICS = ("resolution_coverage",)


def mismatches(
    run: Run,
    target: str,
    form: Form,
    *,
    graph: str | None = None,
    question_key: str = "question",
    unanswered: dict[str, str] | None = None,
) -> list[str]:
    """Every difference between the target's results and the truth from the log.

    ``unanswered`` maps the examples the test expects to end without an answer to their
    status (``error`` or ``interrupted``): their trace metrics are held against the truth
    like any other's, their answer metrics must be null with the reason, and the means of
    the answer metrics are over the answered results alone. Any other errored or
    interrupted result is a mismatch."""
    truth_by_question = truths(run, graph or target, form)
    problems: list[str] = []
    means: dict[str, list[Any]] = {}
    expected_status = unanswered or {}
    one_agent = _one_agent(run.rows[target], truth_by_question, question_key)
    for row in run.rows[target]:
        where = f"{target}/{row.example_id}"
        differ = _differ(problems, where)
        status = row.json.get("status", "ok")
        wanted = expected_status.get(row.example_id, "ok")
        if status != wanted:
            differ("status", status, wanted)
            if row.json["error"] is not None and wanted == "ok":
                differ("error", row.json["error"], None)
            continue
        truth = truth_by_question.get(str(row.inputs[question_key]))
        if truth is None:
            differ("model calls", "?", "none logged")
            continue
        scores = row.scores
        checks = {
            "routing_accuracy": truth.routing_accuracy(row.reference.get("expected_agents")),
            "handoff_chain_length": truth.chain,
            "ping_pong": truth.ping_pong,
            "input_tokens": truth.input_tokens,
            "output_tokens": truth.output_tokens,
            "total_tokens": truth.total_tokens,
            "cost_usd": truth.cost_usd,
            "resolution_coverage": truth.coverage(row.reference.get("must_mention")),
        }
        if one_agent and _names(row.reference.get("expected_agents")) - truth.invoked:
            # one agent all along against references naming others: routing not measured
            checks.update(dict.fromkeys(("routing_accuracy", "handoff_chain_length", "ping_pong")))
        if wanted != "ok":
            for key in ANSWER_METRICS:
                del checks[key]
                comment = row.json["comments"].get(key, "")
                if scores.get(key, "missing") is not None or not comment.startswith("no answer:"):
                    differ(f"{key} (no answer)", (scores.get(key, "missing"), comment), None)
        for key, want in checks.items():
            got = scores.get(key, "missing")
            same = got == want if isinstance(want, bool) else _close(got, want)
            if not same:
                differ(key, got, want)
        if row.json["trace"]["agent_path"] != truth.path:
            differ("agent_path", row.json["trace"]["agent_path"], truth.path)
        if row.json["trace"].get("untraced") is not None:
            differ("untraced", row.json["trace"]["untraced"], None)
        problems += _per_agent(where, row.trace, truth, form)
        problems += _tool_calls(where, row.json["trace"]["tool_calls"], truth, form)
        for key, want in checks.items():
            means.setdefault(key, []).append(want)
    if not problems:
        problems += _means(target, run.metrics(target), means)
    return problems


def _names(agents: Any) -> set[str]:
    return {str(a).lower() for a in ([agents] if isinstance(agents, str) else agents or [])}


def _one_agent(rows: list[Row], truth: dict[str, Truth], question_key: str) -> bool:
    """Whether every result of the target shows the one same agent while rows expect
    others: then the rows naming others have no routing figures (agenteval says so)."""
    seen: set[str] = set()
    expected: set[str] = set()
    for row in rows:
        expected |= _names(row.reference.get("expected_agents"))
        found = truth.get(str(row.inputs.get(question_key)))
        seen |= found.invoked if found is not None else set()
    return len(seen) == 1 and bool(expected - seen)


def _means(target: str, metrics: dict[str, Any], truths: dict[str, list[Any]]) -> list[str]:
    """The experiment's metrics are the means of the results' true values (a figure some
    result does not know is left out here)."""
    problems = []
    for key, values in truths.items():
        if not values or any(v is None for v in values):
            continue
        want = sum(float(v) for v in values) / len(values)
        if not _close(metrics.get(key), want):
            problems.append(
                f"{target}: metric {key}: agenteval={metrics.get(key)!r} truth={want!r}"
            )
    return problems


def _per_agent(where: str, trace: Trace, truth: Truth, form: Form) -> list[str]:
    problems = []
    leaves: dict[str, list[Any]] = {}
    for call in trace.model_calls:
        if not call.failed:  # a call that raised spends nothing (its agent is in the path)
            leaves.setdefault(call.agent, []).append(call)
    got_leaf = {
        agent: (
            len(calls),
            _total([c.input_tokens for c in calls]),
            _total([c.output_tokens for c in calls]),
        )
        for agent, calls in leaves.items()
    }
    if got_leaf != truth.per_leaf:
        problems.append(
            f"{where}: model calls per agent (calls, in, out): agenteval={got_leaf} "
            f"truth={truth.per_leaf}"
        )
    usage = trace.by_agent()
    want_rows: dict[str, tuple[int, int | None, int | None]] = dict(truth.per_team)
    if form.paths_known:  # each place an agent sits in (two teams' "supervisor" are two)
        by_path: dict[str, list[Call]] = {}
        for c in truth.calls:
            if c.error is None:  # a call that raised spends nothing
                by_path.setdefault(" > ".join([*form.teams_of(c), c.agent]), []).append(c)
        for key, calls in by_path.items():
            want_rows[key] = (
                len(calls),
                _total([c.input_tokens for c in calls]),
                _total([c.output_tokens for c in calls]),
            )
    got_rows = {
        key: (
            (usage[key]["model_calls"], usage[key]["input_tokens"], usage[key]["output_tokens"])
            if key in usage
            else "missing"
        )
        for key in want_rows
    }
    if got_rows != want_rows:
        problems.append(
            f"{where}: Trace.by_agent() (calls, in, out): agenteval={got_rows} truth={want_rows}"
        )
    return problems


def _total(values: list[int | None]) -> int | None:
    return None if any(v is None for v in values) else sum(v or 0 for v in values)


def _tool_calls(where: str, calls: list[dict[str, Any]], truth: Truth, form: Form) -> list[str]:
    """The tool calls the models made are all in the trace, each of the right kind; the
    ``transfer_back_to_*`` calls langgraph-supervisor writes itself are handoffs too."""
    problems = []
    made = Counter(c["name"] for c in calls if not c["name"].startswith("transfer_back_to_"))
    if made != truth.tools:
        problems.append(f"{where}: tool calls: agenteval={dict(made)} truth={dict(truth.tools)}")
    kinds = {c["name"]: c.get("kind") for c in calls}
    want = {name: form.kind_of(name) for name in kinds}
    if kinds != want:
        problems.append(f"{where}: tool call kinds: agenteval={kinds} truth={want}")
    if form.fails is not None:
        statuses = Counter((c["name"], c.get("status")) for c in calls)
        fails = form.fails
        want_statuses = Counter(
            (name, "error" if fails(name, json.loads(args)) else "ok")
            for c in truth.calls
            for name, args in c.tools
        )
        if statuses != want_statuses:
            problems.append(
                f"{where}: tool call statuses: agenteval={dict(statuses)} "
                f"truth={dict(want_statuses)}"
            )
    return problems


def report(problems: list[str]) -> str:
    return "\n" + "\n".join(problems)
