"""One way to lay out a project for a CLI test: a target module, a dataset and a spec.

:func:`project` writes the three into a folder (and any other file named), so a test says
only what its project has that others do not; :func:`rows` is its dataset of ``count``
rows, and :func:`answer_after` a target module whose ``answer`` runs some lines first.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

ANSWER = "def answer(inputs):\n    return {'final_response': 'answer to ' + inputs['question']}\n"


def rows(
    count: int,
    *,
    ids: str = "e{i}",
    question: str = "q{i}",
    outputs: Mapping[str, Any] | None = None,
) -> list[dict[str, Any]]:
    """``count`` rows, row ``i`` with the id ``ids`` and the question ``question`` (both
    formatted with ``i``), and ``outputs`` as its reference outputs when given."""
    more = {} if outputs is None else {"outputs": dict(outputs)}
    return [
        {"id": ids.format(i=i), "inputs": {"question": question.format(i=i)}, **more}
        for i in range(count)
    ]


def answer_after(
    body: str, *, imports: str = "", asynchronous: bool = False, returns: str | None = None
) -> str:
    """A target module whose ``answer`` runs the lines of ``body`` first, then returns
    ``returns`` (by default the question prefixed with 'answer to ')."""
    returns = returns or "{'final_response': 'answer to ' + inputs['question']}"
    return (
        (f"import {imports}\n" if imports else "")
        + "from pathlib import Path\n"
        + "HERE = Path(__file__).parent\n"
        + ("async " if asynchronous else "")
        + "def answer(inputs):\n"
        + "".join(f"    {line}\n" for line in body.splitlines())
        + f"    return {returns}\n"
    )


def project(
    folder: Path,
    code: str = ANSWER,
    *,
    module: str = "target.py",
    targets: Mapping[str, str] | None = None,
    options: str = "",
    dataset: str = "data.jsonl",
    data: int | str | Sequence[Mapping[str, Any]] = 3,
    prefix: str | None = None,
    evaluators: str | None = None,
    concurrency: int | None = None,
    extra: str = "",
    files: Mapping[str, str] | None = None,
) -> Path:
    """Write a project into ``folder`` and return its spec, ``folder/spec.yaml``:

    - ``module`` holding ``code``, and each of ``files`` (a relative path to its text);
    - the dataset ``dataset``: ``data`` rows of :func:`rows`, the rows given, or its text;
    - the spec, a line each: ``experiment_prefix: prefix`` (when given), the dataset,
      ``targets:`` mapping each name of ``targets`` to ``module:attr`` (by default
      ``{t: target.py:answer}``; each in its long form with ``options``, when given, such as
      ``cache_env: [X]``), ``evaluators:`` (their YAML, when given),
      ``concurrency:`` (when given), then ``extra`` as it is.
    """
    folder.mkdir(parents=True, exist_ok=True)
    (folder / module).write_text(code, encoding="utf-8")
    for name, text in (files or {}).items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text, encoding="utf-8")
    if isinstance(data, int):
        data = rows(data)
    if not isinstance(data, str):
        data = "".join(json.dumps(row) + "\n" for row in data)
    (folder / dataset).write_text(data, encoding="utf-8")
    listed = ", ".join(
        f"{name}: {{target: {module}:{attr}, {options}}}" if options else f"{name}: {module}:{attr}"
        for name, attr in (targets or {"t": "answer"}).items()
    )
    text = (
        (f"experiment_prefix: {prefix}\n" if prefix else "")
        + f"dataset: {dataset}\ntargets: {{{listed}}}\n"
        + (f"evaluators:{_value(evaluators)}\n" if evaluators else "")
        + (f"concurrency: {concurrency}\n" if concurrency else "")
        + extra
    )
    spec = folder / "spec.yaml"
    spec.write_text(text, encoding="utf-8")
    return spec


def _value(yaml: str) -> str:
    """A key's value as written after its colon: a block on the lines below, or inline."""
    return yaml.rstrip("\n") if yaml.startswith("\n") else " " + yaml.rstrip("\n")
