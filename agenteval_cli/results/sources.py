"""Experiments to compare or report on, from the store, JSON files or LangSmith, in one shape.

A command argument is a target name (its latest stored experiment), an experiment name,
id or unique prefix, or a JSON file: a ``--json`` export (every experiment in it) or a
``--save-baseline`` file (per-example scores only, no traces). With ``--from-langsmith``
every argument names a LangSmith experiment instead (:func:`from_langsmith`).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agenteval_cli.core.errors import UserError
from agenteval_cli.core.records import (
    ERROR,
    INTERRUPTED,
    ModelCall,
    Run,
    Score,
    Trace,
    Turn,
    price_from_json,
)
from agenteval_cli.core.token_counts import UsageCounts
from agenteval_cli.metrics.catalog import BUILT_IN, Catalog
from agenteval_cli.metrics.summary import Summary
from agenteval_cli.results.figures import experiment_catalog, from_runs

if TYPE_CHECKING:
    from collections.abc import Callable

    from agenteval_cli.core.records import Result
    from agenteval_cli.store.db import ExperimentRecord, Store


BASELINE_FORMAT = "agenteval-baseline/1"


@dataclass
class ExperimentData:
    """An experiment's identity and its runs; what compare, report and the gate work on."""

    name: str
    target: str
    runs: list[Run]
    dataset_hash: str | None = None
    repetitions: int = 1
    source: str = ""
    pricing: dict[str, Any] = field(default_factory=dict)
    has_traces: bool = True
    has_model_calls: bool = True  # False for a --json file written before they were kept
    records_errors: bool = True  # False for a baseline file: scores only, no errored call
    # A baseline file's per-example error shares (the share of each example's repetitions
    # that errored), when it was written with them; None for one written before.
    example_errors: dict[str, float] | None = None
    # A baseline file's run figures (totals, error and interrupt rates) as it was written:
    # its per-example means cannot give them again (a total of means is the total over
    # the repetitions).
    run_figures: dict[str, float | None] = field(default_factory=dict)
    git_commit: str | None = None
    thresholds: dict[str, Any] = field(default_factory=dict)  # from the experiment's spec
    url: str | None = None  # its LangSmith experiment, when uploaded or read from there
    url_status: str | None = None  # uploaded, imported, read, or an unfinished upload
    # The experiment's metrics (its evaluators' keys in order, and how each reads); and its
    # spec's evaluator items, for options the reports honour (the routing confusion's
    # ignore_agents).
    catalog: Catalog = BUILT_IN
    evaluators: list[Any] = field(default_factory=list)
    # Per example, the conversation of its first repetition (OpenAI-form messages, each
    # assistant message named after its agent), when the source keeps it (the store does).
    conversations: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    # (example id, repetition) -> the LangSmith run of that result, when it was uploaded.
    run_urls: dict[tuple[str, int], str] = field(default_factory=dict)
    # its figures, computed once when first asked for (results.figures.from_data)
    _figures: Summary | None = field(default=None, init=False, repr=False, compare=False)

    def summary(self) -> Summary:
        """The experiment's figures: the read model every view renders
        (:mod:`agenteval_cli.results.figures`), over these runs."""
        if self._figures is None:
            self._figures = from_runs(
                self.runs,
                catalog=self.catalog,
                has_latency=self.has_traces,
                kept=self.kept_figures(),
            )
        return self._figures

    def kept_figures(self) -> dict[str, float | None]:
        """The run figures its results cannot give: a baseline file's, as it was written
        (unknown, never 0, for a rate it did not keep)."""
        if self.records_errors:
            return dict(self.run_figures)
        return {"error_rate": None, "interrupt_rate": None, **self.run_figures}

    @property
    def metric_keys(self) -> tuple[str, ...]:
        """The experiment's metric keys (its evaluators'), in order."""
        return self.catalog.keys

    def example_ids(self) -> list[str]:
        return list(dict.fromkeys(r.example_id for r in self.runs))

    def score_keys(self) -> set[str]:
        return {k for r in self.runs for k, v in r.scores.items() if v is not None}

    def by_example(self) -> dict[str, list[Run]]:
        grouped: dict[str, list[Run]] = {}
        for run in self.runs:
            grouped.setdefault(run.example_id, []).append(run)
        return grouped

    def per_example_figure(self, paired: str) -> dict[str, float] | None:
        """A run figure per example, as a metric's ``paired`` names it (see
        :class:`~agenteval_cli.metrics.registry.MetricInfo`): ``errors``, the share of the
        example's repetitions that errored, ``interrupts`` that stopped at interrupt(); None
        when the source does not record it."""
        if paired not in ("errors", "interrupts"):
            raise ValueError(f"no per-example figure {paired!r}")
        if not self.records_errors:
            return self.example_errors if paired == "errors" else None
        status = ERROR if paired == "errors" else INTERRUPTED
        counts: dict[str, list[int]] = {}
        for run in self.runs:
            count = counts.setdefault(run.example_id, [0, 0])
            count[0] += run.status == status
            count[1] += 1
        return {eid: errored / n for eid, (errored, n) in counts.items()}

    def per_example(self, key: str) -> dict[str, float]:
        """Each example's score for ``key``, averaged over its repetitions that scored it
        (a null one, as an unanswered result's answer scores are, left out)."""
        return self.summary().per_example(key)


def _example_errors(exp: dict[str, Any], runs: list[Run]) -> dict[str, float] | None:
    """A baseline file's per-example error shares (examples it leaves out errored on no
    repetition); None for a file written before it kept them."""
    errors = exp.get("errors")
    if not isinstance(errors, dict):
        return None
    return {run.example_id: float(errors.get(run.example_id, 0.0)) for run in runs}


def _run_figures(exp: dict[str, Any]) -> dict[str, float | None]:
    """A baseline file's figures of the whole run, by its catalog (timings are not kept)."""
    catalog = json_catalog(exp)
    metrics = exp.get("metrics") or {}
    return {
        str(k): None if v is None else float(v)
        for k, v in (metrics.items() if isinstance(metrics, dict) else ())
        if catalog.info(str(k)).scope == "run" and isinstance(v, int | float | None)
    }


def run_from_result(inputs: dict[str, Any], reference: dict[str, Any], result: Result) -> Run:
    return Run.from_result(result, inputs, reference)


def from_store(store: Store, record: ExperimentRecord) -> ExperimentData:
    from agenteval_cli.store.langsmith_state import LangSmithState

    runs = []
    conversations: dict[str, list[dict[str, Any]]] = {}
    first: dict[str, int] = {}  # the repetition each example's conversation is of
    for stored in store.results(record.id):
        result = stored.result
        runs.append(run_from_result(stored.inputs, stored.reference_outputs, result))
        if result.repetition < first.get(result.example_id, result.repetition + 1):
            first[result.example_id] = result.repetition
            conversations[result.example_id] = list(result.trace.messages)
    upload = LangSmithState.of(store).upload(record.id) or {}
    return ExperimentData(
        name=record.name,
        target=record.target,
        runs=runs,
        dataset_hash=record.dataset_hash,
        repetitions=record.repetitions,
        source=str(store.path),
        pricing=record.spec.get("pricing") or {},
        git_commit=record.git_commit,
        thresholds=record.spec.get("thresholds") or {},
        url=upload.get("url"),
        url_status=upload.get("status"),
        catalog=experiment_catalog(record),
        evaluators=list(record.spec.get("evaluators") or []),
        conversations=conversations,
        run_urls=uploaded_runs(store, record, upload),
    )


def uploaded_runs(
    store: Store, record: ExperimentRecord, upload: dict[str, Any]
) -> dict[tuple[str, int], str]:
    """The LangSmith run of each result of the experiment that was sent (its root run's id
    is derived from the result, see :func:`agenteval_cli.langsmith.upload.root_run_id`)."""
    from agenteval_cli.langsmith.upload import root_run_id
    from agenteval_cli.store.langsmith_state import LangSmithState

    url, project = upload.get("url"), upload.get("project_id")
    if not url or not project:
        return {}
    base = url.partition("/datasets/")[0]
    return {
        (eid, rep): f"{base}/projects/p/{project}/r/{root_run_id(record, eid, rep)}"
        for eid, rep in sorted(LangSmithState.of(store).sent(record.id))
    }


def from_langsmith(
    names: Iterable[str], *, say: Callable[[str], None] = lambda _: None
) -> list[ExperimentData]:
    """Each named LangSmith experiment (a unique name prefix will do), read through the
    client: its root runs, their reference examples and feedback, and model/tool runs."""
    from agenteval_cli.langsmith.client import connect, credentials
    from agenteval_cli.langsmith.experiments import read_experiments

    conn = connect(credentials())
    loaded = []
    for remote in read_experiments(conn, names, say=say):
        loaded.append(
            ExperimentData(
                name=remote.name,
                target=remote.target,
                runs=[run_from_result(e.inputs, e.outputs, r) for e, r in remote.pairs],
                dataset_hash=remote.dataset_hash,
                repetitions=remote.repetitions,
                source=f"LangSmith {remote.endpoint}",
                has_traces=remote.has_traces,
                url=remote.url,
                url_status="read",
            )
        )
    return loaded


def _run_from_json(data: dict[str, Any]) -> Run:
    trace = data.get("trace") or {}
    return Run(
        example_id=str(data["example_id"]),
        repetition=int(data.get("repetition", 0)),
        inputs=data.get("inputs") or {},
        reference=data.get("reference_outputs") or {},
        outputs=data.get("outputs"),
        scores=dict(data.get("scores") or {}),
        comments=dict(data.get("comments") or {}),
        agent_path=list(trace.get("agent_path") or []),
        handoffs=list(trace.get("handoffs") or []),
        tool_calls=list(trace.get("tool_calls") or []),
        tokens=dict(trace.get("tokens") or {}),
        latency_s=float(data.get("latency_s") or 0.0),
        error=data.get("error"),
        interrupt=data.get("interrupt"),
        model_calls=[_model_call(m) for m in trace.get("model_calls") or []],
        untraced=trace.get("untraced"),
        unattributed=trace.get("unattributed"),
        coordinators=tuple(str(a) for a in trace.get("coordinators") or ()),
        cached=bool(data.get("cached")),
        turns=None if data.get("turns") is None else [_turn_from_json(t) for t in data["turns"]],
        blame=data["blame"] if isinstance(data.get("blame"), dict) else None,
    )


def _turn_from_json(data: dict[str, Any]) -> Turn:
    """A conversation's turn as ``--json`` writes it (its scores a map, beside comments)."""
    comments = data.get("comments") or {}
    latency_s = float(data.get("latency_s") or 0.0)
    # the export's traces are of the current schema; each call keeps its price
    trace = {"schema": 2, **(data.get("trace") or {}), "latency_s": latency_s}
    return Turn(
        inputs=dict(data.get("inputs") or {}),
        outputs=data.get("outputs"),
        trace=Trace.from_dict({**trace, "error": data.get("error")}),
        scores=[Score(str(k), v, comments.get(k)) for k, v in (data.get("scores") or {}).items()],
        error=data.get("error"),
        interrupt=data.get("interrupt"),
        latency_s=latency_s,
        user_calls=[_model_call(c) for c in data.get("user_calls") or []],
        sent=data.get("sent") is not False,
        ended=data.get("ended"),
    )


def _model_call(data: dict[str, Any]) -> ModelCall:
    """A model call of a ``--json`` file (fields it does not know are left out); its token
    counts checked as a model's usage is, an impossible one unknown with the reason."""
    counts = UsageCounts()
    details = data.get("token_details")
    return ModelCall(
        agent=str(data["agent"]),
        model=str(data.get("model") or ""),
        input_tokens=counts.read("input_tokens", data.get("input_tokens")),
        output_tokens=counts.read("output_tokens", data.get("output_tokens")),
        latency_s=float(data.get("latency_s") or 0.0),
        path=[str(a) for a in data.get("path") or []],
        failed=bool(data.get("failed")),
        retried=bool(data.get("retried")),
        cut_off=bool(data.get("cut_off")),
        cache_read_tokens=counts.read("cache_read_tokens", data.get("cache_read_tokens")),
        cache_write_tokens=counts.read("cache_write_tokens", data.get("cache_write_tokens")),
        reasoning_tokens=counts.read("reasoning_tokens", data.get("reasoning_tokens")),
        token_details={
            str(k): count
            for k, v in (details.items() if isinstance(details, dict) else ())
            if (count := counts.read(f"token_details.{k}", v)) is not None
        },
        provider=None if data.get("provider") is None else str(data["provider"]),
        # keyword order is evaluation order: the counts above are read by now
        no_usage_reason=_optional_text(data.get("no_usage_reason")) or counts.reason,
        injected=_optional_text(data.get("injected")),
        price=price_from_json(data),  # the price its run gave it, as the export says
    )


def _optional_text(value: Any) -> str | None:
    return None if value is None else str(value)


def from_json_file(path: Path) -> list[ExperimentData]:
    """Every experiment of a ``--json`` export or a saved baseline."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise UserError(f"cannot read {path}: {exc.strerror}") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        line = getattr(exc, "lineno", None)
        raise UserError(
            f"not valid JSON ({exc})".replace("\n", " "),
            file=path,
            line=line,
            hint="give a file written by 'agenteval run --json' or '--save-baseline'",
        ) from None
    experiments = data.get("experiments") if isinstance(data, dict) else None
    if not isinstance(experiments, list) or not experiments:
        raise UserError(
            "no 'experiments' list in this file",
            file=path,
            hint="give a file written by 'agenteval run --json' or '--save-baseline'",
        )
    baseline = data.get("format") == BASELINE_FORMAT
    loaded = []
    for index, exp in enumerate(experiments):
        try:
            if baseline:
                runs = [
                    Run(example_id=eid, scores=dict(scores))
                    for eid, scores in (exp.get("scores") or {}).items()
                ]
            else:
                runs = [_run_from_json(r) for r in exp.get("results") or []]
            with_calls = any(
                "model_calls" in (r.get("trace") or {}) for r in exp.get("results") or []
            )
            loaded.append(
                ExperimentData(
                    name=str(exp.get("name") or f"{path.stem}[{index}]"),
                    target=str(exp.get("target") or exp.get("name") or path.stem),
                    runs=runs,
                    dataset_hash=exp.get("dataset_hash") or data.get("dataset_hash"),
                    repetitions=int(exp.get("repetitions") or 1),
                    source=str(path),
                    has_traces=not baseline,
                    records_errors=not baseline,
                    example_errors=_example_errors(exp, runs) if baseline else None,
                    run_figures=_run_figures(exp) if baseline else {},
                    has_model_calls=with_calls,
                    git_commit=exp.get("git_commit") or data.get("git_commit"),
                    pricing=dict(exp.get("pricing") or {}),
                    catalog=json_catalog(exp),
                )
            )
        except (AttributeError, KeyError, TypeError, ValueError) as exc:
            raise UserError(
                f"experiment {index + 1} is malformed ({exc.__class__.__name__}: {exc})",
                file=path,
                hint="give a file written by 'agenteval run --json' or '--save-baseline'",
            ) from None
    return loaded


def json_catalog(exp: dict[str, Any]) -> Catalog:
    """How an exported experiment's metrics read: the catalog the export keeps (under
    ``catalog``), else the built-ins' for the keys of its ``metrics``."""
    kept = exp.get("catalog")
    if isinstance(kept, dict):
        return Catalog.from_json(kept)
    return Catalog(keys=tuple(str(k) for k in exp.get("metrics") or {}))


def looks_like_file(name: str) -> bool:
    return name.endswith(".json") or Path(name).is_file()


def load(names: Iterable[str], store: str | Path | Store) -> list[ExperimentData]:
    """Resolve each command argument to its experiment(s), in the order given; the store
    (a path: opened read-only, and only if a name needs it) resolves what is not a file."""
    from contextlib import ExitStack

    from agenteval_cli.store.lookup import open_store, resolve_experiment

    loaded: list[ExperimentData] = []
    with ExitStack() as stack:
        opened = None if isinstance(store, str | Path) else store
        for name in names:
            if looks_like_file(name):
                loaded.extend(from_file(name))
                continue
            if opened is None:
                opened = stack.enter_context(open_store(Path(str(store))))
            loaded.append(from_store(opened, resolve_experiment(opened, name)))
    return loaded


def from_file(name: str) -> list[ExperimentData]:
    """The experiments of a JSON file a command names; a missing file is a UserError."""
    path = Path(name)
    if not path.is_file():
        raise UserError(f"file not found: {path}", hint="check the path")
    return from_json_file(path)
