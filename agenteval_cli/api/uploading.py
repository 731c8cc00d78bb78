"""Sending stored experiments to LangSmith from Python: :func:`upload`.

A failed upload is kept in its :class:`Upload` (the local results stay, and a retry sends
only what is missing), so one experiment's failure does not stop the others."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agenteval_cli.api.running import ExperimentReport, RunReport, opened_store

if TYPE_CHECKING:
    from agenteval_cli.langsmith.upload import UploadReport
    from agenteval_cli.store.db import ExperimentRecord, Store


@dataclass(frozen=True)
class Upload:
    """One experiment's upload: what was sent, or why it failed."""

    name: str
    target: str
    sent: UploadReport | None = None
    error: Exception | None = None


@dataclass
class Uploads:
    uploads: list[Upload] = field(default_factory=list)
    compare_url: str | None = None  # LangSmith's view of the experiments side by side

    @property
    def ok(self) -> bool:
        return all(u.error is None for u in self.uploads)


def upload(
    experiments: RunReport | Iterable[str | ExperimentReport],
    *,
    store: str | Path | Store | None = None,
    on_note: Callable[[str], None] | None = None,
    on_upload: Callable[[Upload], None] | None = None,
    raise_errors: bool = False,
) -> Uploads:
    """Upload each experiment (names as ``agenteval upload`` takes them); needs
    ``LANGSMITH_API_KEY``. ``on_note`` gets the progress lines, ``on_upload`` each upload
    as it ends; ``raise_errors`` raises a failure instead of keeping it."""
    from agenteval_cli.langsmith.client import connect, credentials

    where = experiments.store if isinstance(experiments, RunReport) and store is None else store
    with opened_store(where, must_exist=True) as opened:
        creds = credentials()  # no key: one line naming the variable, before anything else
        records = upload_records(opened, experiments)
        conn = connect(creds)
        done = Uploads()
        for record in records:
            done.uploads.append(_one(conn, opened, record, on_note, raise_errors))
            if on_upload is not None:
                on_upload(done.uploads[-1])
        done.compare_url = _compare_url(opened, records, done.uploads)
        return done


def upload_records(store: Store, experiments: Any) -> list[ExperimentRecord]:
    """The stored experiments that :func:`upload` is given (names, reports, a run's)."""
    from agenteval_cli.store.lookup import resolve_experiment

    items = experiments.experiments if isinstance(experiments, RunReport) else experiments
    return [
        store.experiment(i.id) if isinstance(i, ExperimentReport) else resolve_experiment(store, i)
        for i in items
    ]


def _one(
    conn: Any,
    store: Store,
    record: ExperimentRecord,
    on_note: Callable[[str], None] | None,
    raise_errors: bool,
) -> Upload:
    from agenteval_cli.core.errors import UserError
    from agenteval_cli.langsmith.upload import unexpected_answer, upload_experiment

    try:
        sent = upload_experiment(conn, store, record, say=on_note or (lambda _: None))
    except Exception as exc:  # a UserError, or what a broken server made the client raise
        if raise_errors:
            raise
        error = (
            exc
            if isinstance(exc, UserError)
            else unexpected_answer(conn.endpoint, "uploading", exc)
        )
        return Upload(record.name, record.target, error=error)
    return Upload(record.name, record.target, sent=sent)


def _compare_url(
    store: Store, records: list[ExperimentRecord], uploads: list[Upload]
) -> str | None:
    """LangSmith's comparison of the experiments uploaded, when there are several."""
    from agenteval_cli.langsmith.upload import compare_url
    from agenteval_cli.store.langsmith_state import LangSmithState

    projects, dataset_url = [], None
    for record, done in zip(records, uploads, strict=True):
        if done.sent is None:
            continue
        row = LangSmithState.of(store).upload(record.id) or {}
        if row.get("project_id"):
            projects.append(row["project_id"])
            dataset_url = (done.sent.url or "").split("/compare?")[0] or dataset_url
    return compare_url(dataset_url, projects) if len(projects) > 1 else None


@dataclass(frozen=True)
class Sent:
    """How far an upload stopped midway got: each result is marked as it is sent."""

    sent: int  # results sent, over the experiments
    total: int  # results stored, over the experiments
    rest: list[str]  # the experiments not wholly sent (all of them when every result was)


def sent_so_far(experiments: Any, *, store: str | Path | Store | None = None) -> Sent:
    """What :func:`upload` of ``experiments`` has sent so far, read from the store."""
    from agenteval_cli.store.langsmith_state import LangSmithState

    where = experiments.store if isinstance(experiments, RunReport) and store is None else store
    with opened_store(where, must_exist=True) as opened:
        state = LangSmithState.of(opened)
        sent = total = 0
        records = upload_records(opened, experiments)
        rest: list[str] = []
        for record in records:
            count = opened.result_count(record.id)
            done = min(len(state.sent(record.id)), count)
            sent, total = sent + done, total + count
            if done < count:
                rest.append(record.name)
        return Sent(sent, total, rest or [r.name for r in records])
