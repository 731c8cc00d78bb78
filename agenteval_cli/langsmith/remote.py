"""A spec's dataset read from LangSmith, cached in the store so re-runs work offline.

``dataset: {langsmith: NAME, version: TAG, splits: [test]}``. A pinned version is read from
the cache when present (a tagged version never changes); otherwise LangSmith is asked and
the cache is the fallback when there is no key or no connection. Either way the run sees
exactly the examples of the copy it names, with their LangSmith ids kept for uploads.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from agenteval_cli.core.errors import UserError
from agenteval_cli.core.records import Example

if TYPE_CHECKING:
    from agenteval_cli.store.db import Store

Say = Callable[[str], None]


def load_langsmith_examples(
    name: str,
    store: Store,
    *,
    version: str | None = None,
    splits: list[str] | None = None,
    say: Say = lambda _: None,
) -> list[Example]:
    from agenteval_cli.langsmith.client import LangSmithFailure, connect, credentials
    from agenteval_cli.store.langsmith_state import LangSmithState

    state = LangSmithState.of(store)
    version_key = version or "latest"
    splits_key = ",".join(sorted(splits or []))
    cached = state.snapshot(name, version_key, splits_key)
    what = f"LangSmith dataset {name!r}" + (f" version {version}" if version else "")
    if cached is not None and version:
        return _from_rows(state, name, cached)
    try:
        conn = connect(credentials())
        from agenteval_cli.langsmith import datasets as lsd

        dataset_id, remote = lsd.pull(conn, name, version=version, splits=splits)
    except (LangSmithFailure, UserError) as exc:
        if cached is None:
            raise
        say(f"{exc}; using the copy of {what} cached at {cached[3][:19]}")
        return _from_rows(state, name, cached)
    if not remote:
        raise UserError(
            f"{what} has no examples" + (f" in split(s) {', '.join(splits)}" if splits else ""),
            hint="check the name, version and splits, or push examples first",
        )
    rows = [
        {
            "langsmith_id": r.langsmith_id,
            "id": e.id,
            "inputs": e.inputs,
            "outputs": e.outputs,
            "metadata": e.metadata,
        }
        for r in remote
        for e in [lsd.to_example(r)]
    ]
    state.save_snapshot(conn.endpoint, name, version_key, splits_key, dataset_id, rows)
    return _from_rows(state, name, (conn.endpoint, dataset_id, rows, ""))


def _from_rows(
    state: Any, name: str, cached: tuple[str, str, list[dict[str, Any]], str]
) -> list[Example]:
    endpoint, dataset_id, rows, _ = cached
    state.set_example_ids(
        endpoint, name, dataset_id, {r["id"]: r["langsmith_id"] for r in rows}, replace=False
    )
    return [
        Example(
            id=r["id"], inputs=r["inputs"], outputs=r["outputs"], metadata=r["metadata"], row=index
        )
        for index, r in enumerate(rows, start=1)
    ]
