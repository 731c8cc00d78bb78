"""Experiments read back from LangSmith, so results made elsewhere can be compared here.

An experiment is a LangSmith project (tracer session) on a dataset, as ``langsmith.evaluate()``
or ``agenteval run --upload`` creates it. Its root runs are the results: each root run's
reference example gives the example (its ``agenteval_id`` when agenteval pushed the dataset,
else its LangSmith id), the example's inputs and outputs, and the root run's outputs, error
and latency; the feedback on the root run gives the scores. When the experiment kept the runs
the target made under each root (the graph, its tasks, models and tools), they are replayed
into the local tracer (:mod:`agenteval_cli.langsmith.replay`), so the trace is attributed as
a local run's is, and the handoff and token figures agenteval computes from a trace are added
for keys the feedback does not already have.

Requests: ``GET /sessions`` (read_project, list_projects), ``GET /datasets/{id}``,
``POST /runs/query`` (list_runs: the roots, then every other run), ``GET /feedback``
(list_feedback) and ``GET /examples`` (list_examples), all through the real client.
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

from agenteval_cli.core.errors import UserError, did_you_mean
from agenteval_cli.core.interrupts import returned_interrupt
from agenteval_cli.core.records import (
    ERROR,
    Example,
    Handoff,
    ModelCall,
    Result,
    Score,
    ToolCall,
    Trace,
)
from agenteval_cli.core.token_counts import UsageCounts
from agenteval_cli.langsmith.client import BLAME_KEY, Connection, failures

if TYPE_CHECKING:
    from agenteval_cli.store.db import ExperimentRecord, Store

Say = Callable[[str], None]
IMPORT_PREFIX = "langsmith-import"  # the store prefix of imported experiments
CHUNK = 50  # ids per feedback / examples request, to keep URLs short
_RUN_SUFFIX = re.compile(r"-[0-9a-f]{8}$")  # evaluate(): "<experiment_prefix>-<8 hex>"
_DERIVED = ("handoff_chain_length", "ping_pong", "input_tokens", "output_tokens", "total_tokens")


@dataclass
class RemoteExperiment:
    """One LangSmith experiment as agenteval results: (example, result) pairs."""

    name: str
    target: str
    project_id: str
    endpoint: str
    url: str | None
    dataset_id: str
    dataset_name: str | None
    dataset_hash: str
    started_at: str | None
    ended_at: str | None
    pairs: list[tuple[Example, Result]] = field(default_factory=list)
    has_traces: bool = False
    metadata: dict[str, Any] = field(default_factory=dict)

    @property
    def repetitions(self) -> int:
        return max((r.repetition for _, r in self.pairs), default=0) + 1

    @property
    def example_count(self) -> int:
        return len({r.example_id for _, r in self.pairs})


# -- reading ------------------------------------------------------------------------------


def read_experiments(
    conn: Connection,
    names: Iterable[str],
    *,
    pricing: dict[str, Any] | None = None,
    say: Say = lambda _: None,
) -> list[RemoteExperiment]:
    """Each named experiment, in order; targets that would collide keep the full name."""
    found = [read_experiment(conn, name, pricing=pricing, say=say) for name in names]
    labels = [e.target for e in found]
    for experiment in found:
        if labels.count(experiment.target) > 1:
            experiment.target = experiment.name
    return found


def read_experiment(
    conn: Connection, name: str, *, pricing: dict[str, Any] | None = None, say: Say = lambda _: None
) -> RemoteExperiment:
    client = conn.client
    project = resolve_project(conn, name)
    metadata = dict(project.metadata or {})
    with failures(conn, f"reading experiment {project.name!r}"):
        dataset = client.read_dataset(dataset_id=project.reference_dataset_id)
        roots = sorted(_runs(client, project_id=project.id, is_root=True), key=_started)
        children: dict[str, list[Any]] = {}  # every other run of each request
        for run in _runs(client, project_id=project.id, is_root=False):
            children.setdefault(str(run.trace_id), []).append(run)
        feedback = _feedback(client, [str(r.id) for r in roots])
        version = metadata.get("dataset_version")
        wanted = sorted({str(r.reference_example_id) for r in roots if r.reference_example_id})
        examples = _examples(client, str(dataset.id), wanted, version)
    from agenteval_cli.langsmith.upload import compare_url

    remote = RemoteExperiment(
        name=project.name,
        target=str(metadata.get("target") or _RUN_SUFFIX.sub("", project.name) or project.name),
        project_id=str(project.id),
        endpoint=conn.endpoint,
        url=compare_url(dataset.url, [str(project.id)]),
        dataset_id=str(dataset.id),
        dataset_name=dataset.name,
        dataset_hash=str(
            metadata.get("dataset_hash")
            or f"langsmith:{dataset.id}" + (f"@{version}" if version else "")
        ),
        started_at=_iso(project.start_time),
        ended_at=_iso(project.end_time),
        metadata=metadata,
    )
    repetitions: dict[str, int] = {}
    for root in roots:
        example, result = _pair(root, examples, feedback.get(str(root.id), []), repetitions)
        trace = trace_from_runs(root, children.get(str(root.id), []))
        trace.latency_s, trace.error = result.latency_s, result.error
        result.trace = trace
        if trace.model_calls:
            remote.has_traces = True
            _add_derived(result, trace, pricing)
        remote.pairs.append((example, result))
    scored = sum(len(r.scores) for _, r in remote.pairs)
    say(
        f"read {project.name} from LangSmith: {len(roots)} run(s), {scored} score(s)"
        + ("" if remote.has_traces else ", no model runs (no token or handoff figures)")
    )
    return remote


def resolve_project(conn: Connection, name: str) -> Any:
    """The experiment named ``name`` (or the only one whose name starts with it)."""
    from langsmith.utils import LangSmithNotFoundError

    client = conn.client
    with failures(conn, f"reading experiment {name!r}"):
        try:
            project = client.read_project(project_name=name)
        except LangSmithNotFoundError:
            project = None
        if project is None:
            started = [
                p
                for p in client.list_projects(name_contains=name, reference_free=False, limit=100)
                if p.name is not None and p.name.startswith(name)
            ]
            if len(started) > 1:
                shown = ", ".join(sorted(p.name for p in started if p.name is not None)[:5])
                raise UserError(
                    f"{len(started)} LangSmith experiments start with {name!r}: {shown}",
                    hint="give the full experiment name",
                )
            project = started[0] if started else None
        if project is None:
            listed = client.list_projects(reference_free=False, limit=200)
            known = [p.name for p in listed if p.name is not None]
    if project is None:
        raise UserError(
            f"no LangSmith experiment named {name!r} at {conn.endpoint}",
            hint=did_you_mean(name, known)
            or "give the name langsmith.evaluate() printed, e.g. 'supervisor-v1-1a2b3c4d'",
        )
    if project.reference_dataset_id is None:
        raise UserError(
            f"LangSmith project {project.name!r} is not an experiment: it has no dataset",
            hint="give an experiment run on a dataset, as langsmith.evaluate() creates",
        )
    return project


def _runs(client: Any, **query: Any) -> list[Any]:
    """``list_runs`` without its deprecation notice (its replacement is SaaS-only)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        return list(client.list_runs(**query))


def _chunks(ids: list[str]) -> Iterator[list[str]]:
    for offset in range(0, len(ids), CHUNK):
        yield ids[offset : offset + CHUNK]


def _feedback(client: Any, run_ids: list[str]) -> dict[str, list[Any]]:
    by_run: dict[str, list[Any]] = {}
    for chunk in _chunks(run_ids):
        for item in client.list_feedback(run_ids=chunk):
            by_run.setdefault(str(item.run_id), []).append(item)
    return by_run


def _examples(client: Any, dataset_id: str, ids: list[str], version: str | None) -> dict[str, Any]:
    """The reference examples as the experiment saw them (its dataset version), by id."""
    found: dict[str, Any] = {}
    for chunk in _chunks(ids):
        for example in client.list_examples(
            dataset_id=dataset_id, example_ids=chunk, as_of=version
        ):
            found[str(example.id)] = example
    missing = [i for i in ids if i not in found]
    for chunk in _chunks(missing if version else []):
        for example in client.list_examples(dataset_id=dataset_id, example_ids=chunk):
            found[str(example.id)] = example
    return found


def _started(run: Any) -> tuple[str, str]:
    return (_iso(run.start_time) or "", str(run.dotted_order or run.id))


def _iso(value: datetime | None) -> str | None:
    return value.isoformat() if value is not None else None


def _pair(
    root: Any, examples: dict[str, Any], feedback: list[Any], repetitions: dict[str, int]
) -> tuple[Example, Result]:
    """The example and result of one root run; repetitions numbered per example."""
    metadata = (root.extra or {}).get("metadata") or {}
    reference_id = str(root.reference_example_id) if root.reference_example_id else None
    remote_example = examples.get(reference_id) if reference_id else None
    if metadata.get("agenteval_experiment") and metadata.get("example_id"):
        example_id = str(metadata["example_id"])  # uploaded by agenteval
        repetition = int(metadata.get("repetition") or 0)
    else:
        example_meta = (remote_example.metadata or {}) if remote_example is not None else {}
        example_id = str(example_meta.get("agenteval_id") or reference_id or root.id)
        repetition = repetitions.get(example_id, 0)
    repetitions[example_id] = max(repetitions.get(example_id, 0), repetition + 1)
    if remote_example is not None:
        inputs, reference = dict(remote_example.inputs or {}), dict(remote_example.outputs or {})
    else:
        inputs, reference = dict(root.inputs or {}), {}
    latency = 0.0
    if root.start_time and root.end_time:
        latency = max((root.end_time - root.start_time).total_seconds(), 0.0)
    outputs = root.outputs
    result = Result(
        example_id=example_id,
        repetition=repetition,
        outputs=dict(outputs) if isinstance(outputs, dict) else None,
        trace=Trace(),
        scores=_scores(feedback),
        error=root.error or None,
        latency_s=latency,
        attempts=1,
        # an interrupted graph's state says so (its __interrupt__), whoever uploaded it
        interrupt=None if root.error else returned_interrupt(outputs),
    )
    return Example(id=example_id, inputs=inputs, outputs=reference), result


def _scores(feedback: list[Any]) -> list[Score]:
    """One score per feedback key (the newest when a key was given twice)."""
    latest: dict[str, Any] = {}
    for item in sorted(feedback, key=lambda f: _iso(f.modified_at or f.created_at) or ""):
        if item.key != BLAME_KEY:  # agenteval's blame: read again from the trace
            latest[item.key] = item
    scores = []
    for key, item in latest.items():
        exact = (item.extra or {}).get("exact_score")  # agenteval keeps unrounded scores here
        value = exact if isinstance(exact, int | float) else item.score
        if value is None and isinstance(item.value, int | float | bool):
            value = item.value
        if isinstance(value, bool):
            value = float(value)
        scores.append(Score(key, value, item.comment))
    return scores


# -- traces from child runs ---------------------------------------------------------------


def trace_from_runs(root: Any, runs: list[Any]) -> Trace:
    """The trace of one request from the runs under its root run, as the local tracer
    records it (:mod:`agenteval_cli.langsmith.replay`).

    The root run is the experiment's row: ``evaluate()``'s target function, or the run
    agenteval uploads for a result. The request starts below it, where a local run would
    see it start (a graph, or the runs a function made), unless the root is the graph.
    Runs without the graph's chain runs (only model and tool runs) keep the older rule.
    """
    from agenteval_cli.langsmith.replay import is_graph_run, replay

    if not runs:
        return Trace()
    if not any(_is_chain(run) for run in runs):
        return _legacy_trace(runs)
    below = [run for run in runs if str(run.parent_run_id) == str(root.id)]
    return replay([root] if is_graph_run(root, below) else below, runs)


def _is_chain(run: Any) -> bool:
    return run.run_type not in ("llm", "chat_model", "tool", "retriever", "embedding")


def _legacy_trace(runs: list[Any]) -> Trace:
    """Agent path, handoffs, tool calls and tokens from model and tool runs alone.

    Without the graph's chain runs, a run's agent is the first segment of its LangGraph
    checkpoint namespace and handoffs are the handoff tools called: the attribution of
    traces stored before agents were resolved from the run tree (``schema`` 1), which the
    evaluators read as such.
    """
    from agenteval_cli.trace.recorder import agent_from_metadata

    model_calls: list[ModelCall] = []
    tools: list[tuple[ToolCall, str | None]] = []
    for run in sorted(runs, key=lambda r: str(r.dotted_order or "")):
        extra = run.extra or {}
        metadata = extra.get("metadata") or {}
        latency = 0.0
        if run.start_time and run.end_time:
            latency = max((run.end_time - run.start_time).total_seconds(), 0.0)
        if run.run_type == "llm":
            model = _model_name(run, metadata, extra.get("invocation_params") or {})
            given_in, given_out = _usage(run)
            counts = UsageCounts()
            tokens_in = counts.read("input_tokens", given_in)
            tokens_out = counts.read("output_tokens", given_out)
            agent = agent_from_metadata(metadata) or model
            model_call = ModelCall(agent, model, tokens_in, tokens_out, latency)
            _usage_details(run, metadata, model_call)
            model_call.no_usage_reason = model_call.no_usage_reason or counts.reason
            model_calls.append(model_call)
        elif run.run_type == "tool":
            inputs = run.inputs if isinstance(run.inputs, dict) else {}
            output = (run.outputs or {}).get("output") if isinstance(run.outputs, dict) else None
            agent = agent_from_metadata(metadata) or run.name
            call = ToolCall(agent, run.name, dict(inputs), None if output is None else str(output))
            if run.error:  # the tool raised
                call.status = ERROR
            destination = metadata.get("__handoff_destination")
            tools.append((call, destination if isinstance(destination, str) else None))
    path: list[str] = []
    for model_call in model_calls:
        if not path or path[-1] != model_call.agent:
            path.append(model_call.agent)
    agents = {"_".join(a.split()).lower(): a for a in path}
    handoffs = []
    for call, destination in tools:
        prefixes = ("transfer_back_to_", "transfer_to_")
        prefix = next((p for p in prefixes if call.name.startswith(p)), None)
        target = destination or (agents.get(call.name[len(prefix) :]) if prefix else None)
        if target is not None:
            handoffs.append(Handoff(call.agent, target, call.name))
    return Trace(
        agent_path=path,
        handoffs=handoffs,
        tool_calls=[call for call, _ in tools],
        model_calls=model_calls,
        schema=1,
    )


def _model_name(run: Any, metadata: dict[str, Any], params: dict[str, Any]) -> str:
    for value in (metadata.get("ls_model_name"), *(params.get(k) for k in ("model", "model_name"))):
        if isinstance(value, str) and value:
            return value
    for message in _messages(run):
        reported = (message.get("response_metadata") or {}).get("model_name")
        if isinstance(reported, str) and reported:
            return reported
    return str(run.name or "unknown-model")


def _messages(run: Any) -> Iterator[dict[str, Any]]:
    """The output messages of a model run, plain or in LangChain's serialized form."""
    outputs = run.outputs if isinstance(run.outputs, dict) else {}
    for batch in outputs.get("generations") or []:
        for generation in batch if isinstance(batch, list) else [batch]:
            message = generation.get("message") if isinstance(generation, dict) else None
            if isinstance(message, dict):
                kwargs = message.get("kwargs")
                yield kwargs if isinstance(kwargs, dict) else message


def _usage(run: Any) -> tuple[Any, Any]:
    """(input, output) tokens of a model run as given: LangSmith's counts, else the run's
    outputs (checked by the caller, as every usage is)."""
    if run.prompt_tokens or run.completion_tokens:
        return run.prompt_tokens, run.completion_tokens
    for message in _messages(run):
        usage = message.get("usage_metadata")
        if isinstance(usage, dict):
            return usage.get("input_tokens"), usage.get("output_tokens")
    outputs = run.outputs if isinstance(run.outputs, dict) else {}
    llm_output = outputs.get("llm_output")
    if not isinstance(llm_output, dict):
        llm_output = {}
    usage = outputs.get("usage_metadata") or llm_output.get("token_usage") or {}
    if isinstance(usage, dict) and usage:
        tokens_in = usage.get("input_tokens", usage.get("prompt_tokens"))
        tokens_out = usage.get("output_tokens", usage.get("completion_tokens"))
        return tokens_in, tokens_out
    return None, None  # the model reported no usage: unknown, not zero


def _usage_details(run: Any, metadata: dict[str, Any], call: ModelCall) -> None:
    """Cache, reasoning and other parts from the usage on the run's message, and the
    provider; the input and output counts stay LangSmith's (:func:`_usage`)."""
    from agenteval_cli.trace.usage import read_usage

    provider = metadata.get("ls_provider")
    call.provider = provider if isinstance(provider, str) and provider else None
    for message in _messages(run):
        usage = message.get("usage_metadata")
        if isinstance(usage, dict) and usage:
            tokens = call.input_tokens, call.output_tokens
            read_usage(call, usage)
            call.input_tokens, call.output_tokens = tokens
            return


def _add_derived(result: Result, trace: Trace, pricing: dict[str, Any] | None) -> None:
    """Handoff, token and cost scores from the rebuilt trace, for keys the feedback lacks
    (the cost priced from ``pricing``, else the price database: null naming a model
    neither knows). Each call keeps the price it is given here, as a run's does."""
    from agenteval_cli.evaluators.cost import token_cost
    from agenteval_cli.evaluators.handoffs import handoff_chain_length
    from agenteval_cli.metrics.prices import price_calls

    price_calls(trace.model_calls, pricing)

    have = {s.key for s in result.scores}
    derived = [*handoff_chain_length()(trace), *token_cost(pricing=pricing or {})(trace)]
    for item in derived:
        key = item["key"]
        if key in have:
            continue
        if key in _DERIVED or key == "cost_usd":
            score = item["score"]
            value = float(score) if isinstance(score, bool) else score
            result.scores.append(Score(key, value, item.get("comment")))


# -- importing into the store -------------------------------------------------------------


def import_experiment(
    store: Store,
    remote: RemoteExperiment,
    *,
    spec: dict[str, Any] | None = None,
    say: Say = lambda _: None,
) -> ExperimentRecord:
    """Keep a LangSmith experiment in the store under its own name, so later commands
    work offline; importing it again refreshes its results in place."""
    from agenteval_cli.store.langsmith_state import LangSmithState

    existing = _stored(store, remote.name)
    if existing is not None and not existing.spec.get("langsmith_import"):
        say(f"{remote.name} is a local experiment (uploaded from this store): using it as stored")
        return existing
    link = {
        "endpoint": remote.endpoint,
        "project_id": remote.project_id,
        "dataset_id": remote.dataset_id,
        "url": remote.url,
    }
    if existing is None:
        record = store.create_experiment(
            prefix=IMPORT_PREFIX,
            target=remote.target,
            target_path=f"langsmith:{remote.name}",
            spec={**(spec or {}), "langsmith_import": link},
            dataset_name=remote.dataset_name,
            dataset_hash=remote.dataset_hash,
            repetitions=remote.repetitions,
            example_count=remote.example_count,
        )
        # The store names experiments <prefix>-<target>-<id>; an import keeps its own name.
        store.rename_experiment(
            record.id, remote.name, started_at=remote.started_at or record.started_at
        )
        experiment_id = record.id
    else:
        experiment_id = existing.id
    for example, result in remote.pairs:
        store.add_result(experiment_id, example, result, replace=True)
    store.finish_experiment(experiment_id, status="imported")
    LangSmithState.of(store).set_upload(
        experiment_id,
        remote.endpoint,
        "imported",
        project_id=remote.project_id,
        project_name=remote.name,
        dataset_id=remote.dataset_id,
        url=remote.url,
    )
    return store.experiment(experiment_id)


def _stored(store: Store, name: str) -> ExperimentRecord | None:
    try:
        found = store.experiment(name)
    except KeyError:
        return None
    return found if found.name == name else None
