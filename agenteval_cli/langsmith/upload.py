"""Upload a stored experiment to LangSmith: its runs, linked to reference examples, and scores.

The upload reads only the store, so it can happen right after a run or any time later
(``agenteval upload EXPERIMENT``). Ids are derived from the experiment, the example and the
repetition, and each result is marked as sent once its runs and feedback are in, so a
retried upload sends only what is missing and never duplicates anything.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from contextlib import suppress
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from agenteval_cli.core import stops
from agenteval_cli.core.errors import UserError
from agenteval_cli.core.records import ModelCall, Score, Turn
from agenteval_cli.langsmith.client import (
    BLAME_KEY,
    Connection,
    LangSmithFailure,
    failures,
    unexpected_answer,
)
from agenteval_cli.store.db import ExperimentRecord, Store
from agenteval_cli.store.langsmith_state import LangSmithState
from agenteval_cli.store.results import StoredResult
from agenteval_cli.store.summaries import summary_scores

NAMESPACE = uuid.UUID("5b0e4a51-8d0c-4e0c-9a55-6167656e7465")
CHUNK = 20  # results per multipart request
FEEDBACK_ATTEMPTS = 5
Say = Callable[[str], None]


@dataclass
class UploadReport:
    project_name: str
    url: str | None
    runs: int  # results uploaded now (root runs)
    child_runs: int
    feedback: int
    already_sent: int


def root_run_id(experiment: ExperimentRecord, example_id: str, repetition: int) -> str:
    return str(uuid.uuid5(NAMESPACE, f"{experiment.id}/{example_id}/{repetition}"))


def compare_url(dataset_url: str | None, project_ids: list[str]) -> str | None:
    """The LangSmith comparison view of experiments on one dataset."""
    if not dataset_url:
        return None
    return f"{dataset_url}/compare?selectedSessions={'%2C'.join(project_ids)}"


def upload_experiment(
    conn: Connection, store: Store, experiment: ExperimentRecord, *, say: Say = lambda _: None
) -> UploadReport:
    """Create (or reuse) the LangSmith experiment and send every result not yet sent."""
    imported = experiment.spec.get("langsmith_import")
    if imported:  # read from LangSmith (run --from-langsmith): everything is there already
        count = store.result_count(experiment.id)
        return UploadReport(experiment.name, imported.get("url"), 0, 0, 0, count)
    state = LangSmithState.of(store)
    step = "reading or pushing the dataset"
    try:
        dataset, example_ids = _linked_dataset(conn, store, state, experiment, say)
        step = f"creating experiment {experiment.name!r}"
        project = _project(conn, state, experiment, dataset)
        url = compare_url(dataset.url, [str(project.id)])
        state.set_upload(
            experiment.id,
            conn.endpoint,
            "uploading",
            project_id=str(project.id),
            project_name=project.name,
            dataset_id=str(dataset.id),
            url=url,
        )
        step = "uploading runs and feedback"
        report = _send(conn, store, state, experiment, project, example_ids)
        step = "sending the dataset-level scores"
        summary = _summary_feedback(project, summary_scores(store, experiment.id))
        _post_feedback(conn, summary)
        report.feedback += len(summary)
        step = "closing the experiment"
        with failures(conn, "closing the experiment"):
            end = datetime.fromisoformat(experiment.ended_at) if experiment.ended_at else None
            conn.client.update_project(project.id, end_time=end)
    except UserError as exc:
        state.set_upload(experiment.id, conn.endpoint, "failed", error=str(exc))
        raise
    except Exception as exc:  # an answer the client could not read: one line, not a traceback
        failure = unexpected_answer(conn.endpoint, step, exc)
        state.set_upload(experiment.id, conn.endpoint, "failed", error=str(failure))
        raise failure from None
    state.set_upload(experiment.id, conn.endpoint, "uploaded", error=None)
    report.url = url
    return report


def _linked_dataset(
    conn: Connection, store: Store, state: LangSmithState, exp: ExperimentRecord, say: Say
) -> tuple[Any, dict[str, str]]:
    """The LangSmith dataset of the experiment, pushed first if its examples are not there."""
    from pathlib import Path

    from agenteval_cli.langsmith import datasets as lsd

    name = exp.dataset_name or exp.prefix
    wanted = {s.result.example_id for s in store.results(exp.id)}
    ids = state.example_ids(conn.endpoint, name)
    if not wanted <= set(ids):
        path = Path(exp.dataset_path) if exp.dataset_path else None
        if path is None or not path.is_file():
            raise UserError(
                f"dataset {name!r} is not in LangSmith and its file is gone ({exp.dataset_path})",
                hint=f"push it with 'agenteval dataset push FILE --name {name}'",
            )
        from agenteval_cli.data.examples import dataset_hash, load_examples

        say(f"dataset {name!r} is not pushed yet: pushing {path} first")
        report = lsd.push(conn, state, name, load_examples(path), file_hash=dataset_hash(path))
        stops.raise_if_asked()  # a stop the client's log filters swallowed mid-push
        say(f"pushed {name!r}: {report.plan.summary(prune=False)}")
        ids = state.example_ids(conn.endpoint, name)
    dataset = lsd.find_dataset(conn, name)
    if dataset is None:
        raise LangSmithFailure(f"dataset {name!r} vanished from LangSmith during the upload")
    missing = wanted - set(ids)
    if missing:
        say(f"{len(missing)} example(s) are no longer in the dataset file: uploaded unlinked")
    return dataset, ids


def _project(conn: Connection, state: LangSmithState, exp: ExperimentRecord, dataset: Any) -> Any:
    """The LangSmith experiment (a tracer session on the dataset) named like the local one."""
    from langsmith.utils import LangSmithConflictError

    metadata = {
        "agenteval_experiment_id": exp.id,
        "target": exp.target,
        "target_path": exp.target_path,
        "git_commit": exp.git_commit,
        "dataset_hash": exp.dataset_hash,
        "repetitions": exp.repetitions,
    }
    with failures(conn, f"creating experiment {exp.name!r}"):
        try:
            return conn.client.create_project(
                exp.name,
                description=f"agenteval experiment {exp.name} (target {exp.target})",
                metadata=metadata,
                reference_dataset_id=dataset.id,
            )
        except LangSmithConflictError:  # created by an earlier, interrupted upload
            return conn.client.read_project(project_name=exp.name)


def _send(
    conn: Connection,
    store: Store,
    state: LangSmithState,
    exp: ExperimentRecord,
    project: Any,
    example_ids: dict[str, str],
) -> UploadReport:
    trees = state.trees(exp.id)
    sent = state.sent(exp.id)
    pending = [
        s for s in store.results(exp.id) if (s.result.example_id, s.result.repetition) not in sent
    ]
    report = UploadReport(project.name, None, 0, 0, 0, len(sent))
    start = datetime.fromisoformat(exp.started_at)
    for offset in range(0, len(pending), CHUNK):
        stops.raise_if_asked()  # a stop the client swallowed while it sent the last chunk
        chunk = pending[offset : offset + CHUNK]
        runs: list[dict[str, Any]] = []
        feedback: list[dict[str, Any]] = []
        for stored in chunk:
            key = (stored.result.example_id, stored.result.repetition)
            root, children = _runs(exp, project, stored, trees.get(key, []), example_ids, start)
            runs += [root, *children]
            report.child_runs += len(children)
            feedback += _feedback(project, root["id"], stored)
        with failures(conn, "uploading runs"):
            conn.client.multipart_ingest(create=runs)
            conn.check_ingestion()
        _post_feedback(conn, feedback)
        state.mark_sent(exp.id, [(s.result.example_id, s.result.repetition) for s in chunk])
        report.runs += len(chunk)
        report.feedback += len(feedback)
    stops.raise_if_asked()  # and while it sent the last: a stop is said, never lost
    return report


def _dotted(when: datetime, run_id: str) -> str:
    return when.astimezone(UTC).strftime("%Y%m%dT%H%M%S%fZ") + run_id


def _runs(
    exp: ExperimentRecord,
    project: Any,
    stored: StoredResult,
    tree: list[dict[str, Any]],
    example_ids: dict[str, str],
    fallback_start: datetime,
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The root run of one result and, when recorded, its LangChain child runs."""
    result = stored.result
    root_id = root_run_id(exp, result.example_id, result.repetition)
    starts = [datetime.fromisoformat(r["start_time"]) for r in tree if r.get("start_time")]
    start = (min(starts) - timedelta(microseconds=1)) if starts else fallback_start
    root: dict[str, Any] = {
        "id": root_id,
        "trace_id": root_id,
        "dotted_order": _dotted(start, root_id),
        "name": exp.target,
        "run_type": "chain",
        "session_id": str(project.id),
        "start_time": start,
        "end_time": start + timedelta(seconds=result.latency_s or 0.0),
        "inputs": stored.inputs,
        "outputs": result.outputs if result.outputs is not None else None,
        "error": result.error,
        "reference_example_id": example_ids.get(result.example_id),
        "extra": {
            "metadata": {
                "agenteval_experiment": exp.name,
                "example_id": result.example_id,
                "repetition": result.repetition,
                # ok, error, or interrupted (stopped at interrupt(): no error, no answer)
                "agenteval_status": result.status,
                "agenteval_usage": usage_metadata(result.trace.model_calls),
            }
        },
    }
    if result.turns is None:
        return root, _tree_runs(root, project, tree, start)
    # LangSmith's thread views group traces by their thread_id: each turn is a trace of its
    # own in the conversation's thread, holding that turn's runs; the root run is the
    # conversation's row of the experiment, named by the thread it leads to
    root["extra"]["metadata"]["agenteval_thread_id"] = root_id
    unmarked = [run for run in tree if "turn" not in run]  # a tree stored before turns were
    children = _tree_runs(root, project, unmarked, start)
    begin = start
    for number, turn in enumerate(result.turns, 1):
        runs = [run for run in tree if run.get("turn") == number]
        trace = _turn_trace(root, project, number, turn, runs, begin)
        children += [trace, *_tree_runs(trace, project, runs, trace["start_time"], root_id)]
        begin = trace["end_time"]
    return root, children


def _tree_runs(
    top: dict[str, Any],
    project: Any,
    tree: list[dict[str, Any]],
    start: datetime,
    thread: str | None = None,
) -> list[dict[str, Any]]:
    """The recorded LangChain runs of a call, in the trace of ``top`` (their parent when
    theirs is not among them); every run in ``thread``, when given."""
    trace_id = top["trace_id"]
    dotted = {top["id"]: top["dotted_order"]}
    children = []
    for run in tree:  # parents come before their children
        parent = run.get("parent_run_id") or top["id"]
        if parent not in dotted:
            parent = top["id"]
        begin = datetime.fromisoformat(run["start_time"]) if run.get("start_time") else start
        dotted[run["id"]] = dotted[parent] + "." + _dotted(begin, run["id"])
        metadata = dict(run.get("metadata") or {})
        if thread is not None:  # so filtering and token counts by thread include it
            metadata["thread_id"] = thread
        children.append(
            {
                "id": run["id"],
                "trace_id": trace_id,
                "parent_run_id": parent,
                "dotted_order": dotted[run["id"]],
                "name": run["name"],
                "run_type": run["run_type"],
                "session_id": str(project.id),
                "start_time": begin,
                "end_time": datetime.fromisoformat(run["end_time"])
                if run.get("end_time")
                else None,
                "inputs": run.get("inputs") or {},
                "outputs": run.get("outputs"),
                "error": run.get("error"),
                "tags": run.get("tags") or [],
                "extra": {"metadata": metadata},
            }
        )
    return children


def turn_run_id(root_id: str, number: int) -> str:
    return str(uuid.uuid5(uuid.UUID(root_id), f"turn/{number}"))


def _turn_trace(
    root: dict[str, Any],
    project: Any,
    number: int,
    turn: Turn,
    runs: list[dict[str, Any]],
    after: datetime,
) -> dict[str, Any]:
    """Turn ``number`` of the conversation ``root`` as a trace in its thread (``thread_id``:
    the root run's id): it starts just before its first recorded run, or where the turn
    before it ended when none was recorded."""
    run_id = turn_run_id(root["id"], number)
    starts = [datetime.fromisoformat(r["start_time"]) for r in runs if r.get("start_time")]
    begin = (min(starts) - timedelta(microseconds=1)) if starts else after
    metadata = root["extra"]["metadata"]
    return {
        "id": run_id,
        "trace_id": run_id,
        "dotted_order": _dotted(begin, run_id),
        "name": f"{root['name']} turn {number}",
        "run_type": "chain",
        "session_id": str(project.id),
        "start_time": begin,
        "end_time": begin + timedelta(seconds=turn.latency_s or 0.0),
        "inputs": turn.inputs,
        "outputs": turn.outputs,
        "error": turn.error,
        "extra": {
            "metadata": {
                "thread_id": root["id"],
                "turn": number,
                "agenteval_experiment": metadata["agenteval_experiment"],
                "example_id": metadata["example_id"],
                "repetition": metadata["repetition"],
                "agenteval_conversation_run": root["id"],
                "agenteval_status": turn.status,
                "agenteval_usage": usage_metadata(turn.trace.model_calls),
            }
        },
    }


def usage_metadata(calls: list[ModelCall]) -> dict[str, Any]:
    """The tokens of every call the result made (a failed one answered nothing), and their
    parts by LangChain's convention (cache reads and writes are part of the input, reasoning
    of the output); a figure is None once one call did not report it."""
    made = [c for c in calls if not c.failed]
    fields = (
        "input_tokens",
        "output_tokens",
        "cache_read_tokens",
        "cache_write_tokens",
        "reasoning_tokens",
    )
    usage: dict[str, Any] = {}
    for name in fields:
        values = [getattr(c, name) for c in made]
        usage[name] = None if any(v is None for v in values) else sum(values)
    details: dict[str, int] = {}
    for call in made:
        for key, value in call.token_details.items():
            details[key] = details.get(key, 0) + value
    usage["token_details"] = details
    usage["providers"] = sorted({c.provider for c in made if c.provider})
    return usage


def _feedback(project: Any, run_id: str, stored: StoredResult) -> list[dict[str, Any]]:
    """One feedback per score: key, score and comment, with an id derived from the run;
    a failed request's blame as one more, its kind the value."""
    items = _score_feedback(project, run_id, stored.result.scores)
    if stored.result.blame is not None:
        items.append(_blame_feedback(project, run_id, stored.result.blame))
    for number, turn in enumerate(stored.result.turns or [], 1):  # each turn's own scores
        items += _score_feedback(project, turn_run_id(run_id, number), turn.scores, run_id)
    return items


def _score_feedback(
    project: Any, run_id: str, scores: list[Score], trace_id: str | None = None
) -> list[dict[str, Any]]:
    items = []
    for score in scores:
        value = score.score
        items.append(
            {
                "run_id": run_id,
                "trace_id": trace_id or run_id,
                "key": score.key,
                "score": value,
                "comment": score.comment,
                "session_id": project.id,
                "feedback_id": uuid.uuid5(uuid.UUID(run_id), score.key),
                "extra": _exact(value),
            }
        )
    return items


def _exact(value: Any) -> dict[str, Any] | None:
    """A score the client would round (it keeps 4 decimals), kept whole in the extra."""
    if isinstance(value, float) and round(value, 4) != value:
        return {"exact_score": value}
    return None


def _blame_feedback(project: Any, run_id: str, blame: dict[str, Any]) -> dict[str, Any]:
    """Where the request's failure started: the kind as the feedback's value, the agent and
    step in its extra, and both with the why in its comment."""
    where = f"{blame.get('agent')} at step {blame.get('step')}: " if blame.get("agent") else ""
    return {
        "run_id": run_id,
        "trace_id": run_id,
        "key": BLAME_KEY,
        "value": blame.get("kind"),
        "comment": f"{where}{blame.get('why')}",
        "session_id": project.id,
        "feedback_id": uuid.uuid5(uuid.UUID(run_id), BLAME_KEY),
        "extra": {"agent": blame.get("agent"), "step": blame.get("step")},
    }


def _summary_feedback(project: Any, scores: list[Score]) -> list[dict[str, Any]]:
    """Each dataset-level score as the experiment's own feedback (no run), as LangSmith
    keeps a summary evaluator's."""
    items = []
    for score in scores:
        value = score.score
        items.append(
            {
                "run_id": None,
                "key": score.key,
                "score": value,
                "comment": score.comment,
                "project_id": project.id,
                "feedback_id": uuid.uuid5(uuid.UUID(str(project.id)), score.key),
                "extra": _exact(value),
            }
        )
    return items


def _post_feedback(conn: Connection, items: list[dict[str, Any]]) -> None:
    from langsmith.utils import LangSmithConflictError

    def post(item: dict[str, Any]) -> None:
        with suppress(LangSmithConflictError):  # sent by an earlier, interrupted upload
            # A run not found is retried while ingestion catches up, 1 + 2 + 4 + 8 s at most
            # (the client's default, ten attempts, waits up to 17 minutes).
            conn.client.create_feedback(**item, stop_after_attempt=FEEDBACK_ATTEMPTS)

    with failures(conn, "sending feedback"), ThreadPoolExecutor(max_workers=4) as pool:
        for future in [pool.submit(post, item) for item in items]:
            future.result()
