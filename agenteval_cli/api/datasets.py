"""A dataset file and its LangSmith dataset, from Python: :func:`push_dataset`."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from agenteval_cli.api.running import opened_store

if TYPE_CHECKING:
    from agenteval_cli.execution.names import NameCheck
    from agenteval_cli.langsmith.datasets import PushPlan, PushReport
    from agenteval_cli.spec.model import Spec
    from agenteval_cli.store.db import Store


def plan_push(path: str | Path, name: str) -> PushPlan:
    """What :func:`push_dataset` would change in the LangSmith dataset ``name`` (a dry
    run: nothing is changed); needs ``LANGSMITH_API_KEY``."""
    from agenteval_cli.data.examples import load_examples
    from agenteval_cli.langsmith import datasets as lsd
    from agenteval_cli.langsmith.client import connect, credentials

    examples = load_examples(Path(path))
    return lsd.plan_push(connect(credentials()), name, examples)


def push_dataset(
    path: str | Path,
    name: str,
    *,
    description: str | None = None,
    prune: bool = False,
    store: str | Path | Store | None = None,
) -> PushReport:
    """Make the LangSmith dataset ``name``'s examples equal to the file's (matched by
    example id; ``prune`` deletes those not in the file); needs ``LANGSMITH_API_KEY``.
    The store keeps what was pushed, so the next push sends only what changed."""
    from agenteval_cli.data.examples import dataset_hash, load_examples
    from agenteval_cli.langsmith import datasets as lsd
    from agenteval_cli.langsmith.client import connect, credentials
    from agenteval_cli.store.langsmith_state import LangSmithState

    examples = load_examples(Path(path))
    file_hash = dataset_hash(Path(path))
    conn = connect(credentials())
    with opened_store(store) as opened:
        return lsd.push(
            conn,
            LangSmithState.of(opened),
            name,
            examples,
            file_hash=file_hash,
            description=description,
            prune=prune,
        )


def reference_warnings(spec: Spec, path: str | Path) -> list[str]:
    """A run's warnings about the reference fields ``spec``'s evaluators read, over the
    dataset file at ``path`` (a judge left out: not checked)."""
    import agenteval_cli.evaluators  # noqa: F401 (registers every family)
    from agenteval_cli.data.examples import open_examples
    from agenteval_cli.evaluators.loading import bind_evaluators
    from agenteval_cli.execution.experiment import reference_field_warnings

    examples = open_examples(Path(path))
    evaluators = bind_evaluators(spec, warn=lambda _: None)
    return reference_field_warnings(spec, evaluators, examples, source=str(path))


def name_check(spec: Spec, path: str | Path) -> NameCheck:
    """The names the rows of ``path`` give that a target's graph lacks, as a run says them
    before any call (the targets are imported, none is called)."""
    from agenteval_cli.data.examples import open_examples
    from agenteval_cli.execution.loading import load_targets
    from agenteval_cli.execution.names import check_before_run

    return check_before_run(load_targets(spec), open_examples(Path(path)), str(path))


def pull_dataset(
    name: str,
    path: str | Path,
    *,
    version: str | None = None,
    splits: list[str] | None = None,
) -> int:
    """Write the LangSmith dataset ``name``'s examples (at ``version``, in ``splits``) to
    ``path``, in the format its suffix names (.jsonl .json .yaml .csv); needs
    ``LANGSMITH_API_KEY``. An unknown format fails before any request. The examples
    written."""
    from agenteval_cli.langsmith import datasets as lsd
    from agenteval_cli.langsmith import files
    from agenteval_cli.langsmith.client import connect, credentials

    output = Path(path)
    files.render([], output.suffix.lower())  # an unknown format fails before any request
    conn = connect(credentials())
    _, remote = lsd.pull(conn, name, version=version, splits=splits)
    examples = [lsd.to_example(r) for r in remote]
    files.write(examples, output)
    return len(examples)


def list_datasets() -> list[Any]:
    """The LangSmith datasets the key (``LANGSMITH_API_KEY``) can see, as LangSmith's
    client lists them."""
    from agenteval_cli.langsmith import datasets as lsd
    from agenteval_cli.langsmith.client import connect, credentials

    return lsd.list_datasets(connect(credentials()))
