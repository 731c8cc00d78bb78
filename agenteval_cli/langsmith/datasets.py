"""Dataset push and pull: make a LangSmith dataset's examples equal to a file's, and back.

Examples are matched by their stable id (:func:`agenteval_cli.data.examples.example_id`), kept in
the example's metadata as ``agenteval_id``. A new example's LangSmith id is derived from the
dataset id and the stable id (UUID5), so a push that is interrupted and run again can never
create a duplicate: the same row always gets the same LangSmith id.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from agenteval_cli.core.records import Example
from agenteval_cli.langsmith.client import Connection, LangSmithFailure, failures

if TYPE_CHECKING:
    from agenteval_cli.store.langsmith_state import LangSmithState

ID_KEY = "agenteval_id"  # metadata key holding the stable example id
SERVER_KEYS = ("dataset_split",)  # metadata LangSmith manages itself
BATCH = 100


@dataclass
class Remote:
    """A LangSmith example as agenteval compares it."""

    langsmith_id: str
    key: str  # the stable id it stands for
    inputs: dict[str, Any]
    outputs: dict[str, Any]
    metadata: dict[str, Any]
    splits: list[str]


@dataclass
class PushPlan:
    name: str
    dataset_id: str | None  # None: the dataset will be created
    add: list[tuple[Example, str]] = field(default_factory=list)  # (example, langsmith id)
    update: list[tuple[Example, str]] = field(default_factory=list)
    unchanged: list[tuple[Example, str]] = field(default_factory=list)
    stale: list[Remote] = field(default_factory=list)  # in LangSmith, not in the file

    @property
    def ids(self) -> dict[str, str]:
        return {e.id: i for e, i in self.add + self.update + self.unchanged}

    def summary(self, *, prune: bool, dry_run: bool = False) -> str:
        verb = "would be " if dry_run else ""
        text = (
            f"{len(self.add)} {verb}added, {len(self.update)} {verb}updated, "
            f"{len(self.unchanged)} unchanged"
        )
        if prune:
            text += f", {len(self.stale)} {verb}deleted"
        elif self.stale:
            text += f", {len(self.stale)} not in the file (kept; --prune deletes them)"
        return text


@dataclass
class PushReport:
    plan: PushPlan
    dataset_id: str
    tag: str | None
    created: bool


def new_example_id(dataset_id: str, key: str) -> str:
    return str(uuid.uuid5(uuid.UUID(str(dataset_id)), key))


def _desired(example: Example, langsmith_id: str) -> dict[str, Any]:
    metadata = dict(example.metadata)
    if example.id != langsmith_id:
        metadata[ID_KEY] = example.id
    return {"inputs": example.inputs, "outputs": example.outputs, "metadata": metadata}


def _splits(example: Example) -> list[str] | None:
    split = example.metadata.get("split")
    if isinstance(split, str):
        return [split]
    if isinstance(split, list) and all(isinstance(s, str) for s in split):
        return list(split)
    return None


def find_dataset(conn: Connection, name: str) -> Any | None:
    """The LangSmith dataset called ``name``, or None."""
    from langsmith.utils import LangSmithNotFoundError

    with failures(conn, f"reading dataset {name!r}"):
        try:
            return conn.client.read_dataset(dataset_name=name)
        except LangSmithNotFoundError:
            return None


def remote_examples(
    conn: Connection,
    dataset_id: str,
    *,
    version: str | None = None,
    splits: list[str] | None = None,
) -> list[Remote]:
    with failures(conn, "listing examples"):
        found = conn.client.list_examples(
            dataset_id=dataset_id, as_of=version or None, splits=splits or None
        )
        return [_remote(e) for e in found]


def _remote(example: Any) -> Remote:
    metadata = dict(example.metadata or {})
    splits = metadata.get("dataset_split") or []
    for key in SERVER_KEYS:
        metadata.pop(key, None)
    key = metadata.get(ID_KEY) or str(example.id)
    return Remote(
        langsmith_id=str(example.id),
        key=str(key),
        inputs=dict(example.inputs or {}),
        outputs=dict(example.outputs or {}),
        metadata=metadata,
        splits=list(splits) if isinstance(splits, list) else [str(splits)],
    )


def plan_push(conn: Connection, name: str, examples: list[Example]) -> PushPlan:
    """Compare the file's examples with the dataset's current ones."""
    dataset = find_dataset(conn, name)
    if dataset is None:
        plan = PushPlan(name, None)
        plan.add = [(e, "") for e in examples]
        return plan
    dataset_id = str(dataset.id)
    remote = {r.key: r for r in remote_examples(conn, dataset_id)}
    plan = PushPlan(name, dataset_id)
    for example in examples:
        found = remote.pop(example.id, None)
        if found is None:
            plan.add.append((example, new_example_id(dataset_id, example.id)))
            continue
        want = _desired(example, found.langsmith_id)
        have = {"inputs": found.inputs, "outputs": found.outputs, "metadata": found.metadata}
        splits = _splits(example)
        same = want == have and (splits is None or sorted(splits) == sorted(found.splits))
        (plan.unchanged if same else plan.update).append((example, found.langsmith_id))
    plan.stale = list(remote.values())
    return plan


def push(
    conn: Connection,
    state: LangSmithState,
    name: str,
    examples: list[Example],
    *,
    file_hash: str,
    description: str | None = None,
    prune: bool = False,
    attempts: int = 3,
) -> PushReport:
    """Make the dataset equal to ``examples`` and tag the version with the file's hash.

    A write the server applied but whose answer was lost comes back as a conflict on retry;
    the plan is then made again from what LangSmith holds, up to ``attempts`` times.
    """
    from langsmith.utils import LangSmithConflictError

    created = False
    first: PushPlan | None = None
    for attempt in range(attempts):
        plan = plan_push(conn, name, examples)
        first = first or plan
        try:
            if plan.dataset_id is None:
                with failures(conn, f"creating dataset {name!r}"):
                    conn.client.create_dataset(name, description=description)
                created = True
                plan = plan_push(conn, name, examples)
                first = plan
            _apply(conn, plan, prune=prune)
            break
        except LangSmithConflictError:
            if attempt + 1 == attempts:
                raise LangSmithFailure(
                    f"pushing {name!r} kept conflicting with concurrent changes",
                    hint="run the push again",
                ) from None
    assert plan.dataset_id is not None and first is not None
    dataset_id = plan.dataset_id
    tag = _tag(conn, dataset_id, file_hash[:12])
    counts = (
        len(first.add),
        len(first.update),
        len(first.unchanged),
        len(first.stale) if prune else 0,
    )
    state.set_example_ids(conn.endpoint, name, dataset_id, plan.ids, replace=prune)
    state.record_push(conn.endpoint, name, dataset_id, file_hash, tag, counts)
    return PushReport(first, dataset_id, tag, created)


def _apply(conn: Connection, plan: PushPlan, *, prune: bool) -> None:
    """Send the plan's creates, updates and (with prune) deletes, in batches."""
    client, dataset_id = conn.client, plan.dataset_id
    creates = [
        {
            "id": i,
            "inputs": d["inputs"],
            "reference_outputs": d["outputs"],
            "metadata": d["metadata"],
            **({"split": s} if (s := _splits(e)) else {}),
        }
        for e, i in plan.add
        for d in [_desired(e, i)]
    ]
    updates = [
        {"id": i, **_desired(e, i), **({"split": s} if (s := _splits(e)) else {})}
        for e, i in plan.update
    ]
    for start in range(0, len(creates), BATCH):
        batch = creates[start : start + BATCH]
        with failures(conn, "adding examples"):
            done = client.create_examples(dataset_id=dataset_id, examples=batch)
        count = done.get("count") if isinstance(done, dict) else getattr(done, "count", None)
        _check_count(conn, "adding examples", count, len(batch))
    for start in range(0, len(updates), BATCH):
        batch = updates[start : start + BATCH]
        with failures(conn, "updating examples"):
            done = client.update_examples(dataset_id=dataset_id, updates=batch)
        if isinstance(done, dict) and ("count" in done or "message" in done):
            _check_count(conn, "updating examples", done.get("count"), len(batch))
    if prune and plan.stale:
        ids = [r.langsmith_id for r in plan.stale]
        for start in range(0, len(ids), BATCH):
            with failures(conn, "deleting examples"):
                client.delete_examples(ids[start : start + BATCH])


def _check_count(conn: Connection, what: str, count: Any, sent: int) -> None:
    """A write LangSmith answered without counting every example sent (``{}`` from a proxy
    counts none) is a failure: the push would report rows the dataset does not have."""
    from agenteval_cli.langsmith.client import UnexpectedAnswer, unexpected_answer

    if count != sent:
        raise unexpected_answer(
            conn.endpoint,
            what,
            UnexpectedAnswer(f"it counted {count or 0} of the {sent} examples sent"),
        )


def _tag(conn: Connection, dataset_id: str, tag: str) -> str | None:
    """Point ``tag`` at the newest version unless it already does; None for an empty dataset."""
    from langsmith.utils import LangSmithNotFoundError

    with failures(conn, "tagging the dataset version"):
        try:
            latest = conn.client.read_dataset_version(dataset_id=dataset_id, tag="latest")
        except LangSmithNotFoundError:
            return None
        if tag in (latest.tags or []):
            return tag
        conn.client.update_dataset_tag(dataset_id=dataset_id, as_of=latest.as_of, tag=tag)
    return tag


def to_example(remote: Remote) -> Example:
    """A pulled example, with its stable id and without LangSmith's own metadata."""
    metadata = {k: v for k, v in remote.metadata.items() if k != ID_KEY}
    return Example(id=remote.key, inputs=remote.inputs, outputs=remote.outputs, metadata=metadata)


def pull(
    conn: Connection, name: str, *, version: str | None = None, splits: list[str] | None = None
) -> tuple[str, list[Remote]]:
    """(dataset id, examples) of a LangSmith dataset, optionally at a version or in splits."""
    from agenteval_cli.core.errors import UserError

    dataset = find_dataset(conn, name)
    if dataset is None:
        raise UserError(
            f"no LangSmith dataset named {name!r} at {conn.endpoint}",
            hint="see 'agenteval dataset list', or push one with 'agenteval dataset push'",
        )
    return str(dataset.id), remote_examples(conn, str(dataset.id), version=version, splits=splits)


def list_datasets(conn: Connection) -> list[Any]:
    with failures(conn, "listing datasets"):
        return list(conn.client.list_datasets())
