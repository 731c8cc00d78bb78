"""Write pulled examples as .jsonl, .json, .yaml or .csv, readable back by agenteval.

CSV follows the reader's rule (:mod:`agenteval_cli.data.examples`): values that the rule would
read back differently (numbers, booleans, empty strings, text starting with ``[`` or ``{``)
are refused with a hint to use .jsonl rather than written inexactly. JSON, in a .jsonl or
.json file or a CSV cell, is strict (:func:`strict`): NaN and ±Infinity, which other JSON
parsers refuse, are written as null.
"""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from typing import Any

from agenteval_cli.core.errors import UserError
from agenteval_cli.core.records import Example

FORMATS = (".jsonl", ".json", ".yaml", ".yml", ".csv")


def row(example: Example) -> dict[str, Any]:
    data: dict[str, Any] = {"id": example.id, "inputs": example.inputs}
    if example.outputs:
        data["outputs"] = example.outputs
    if example.metadata:
        data["metadata"] = example.metadata
    return data


def render(examples: list[Example], suffix: str) -> str:
    """The examples in the format of ``suffix``."""
    rows = [row(e) for e in examples]
    if suffix == ".jsonl":
        return "".join(strict(r) + "\n" for r in rows)
    if suffix == ".json":
        return strict(rows, indent=2) + "\n"
    if suffix in (".yaml", ".yml"):
        import yaml

        return yaml.safe_dump(rows, allow_unicode=True, sort_keys=False)
    if suffix == ".csv":
        return _csv(examples)
    raise UserError(f"unknown output format {suffix!r}", hint="use " + ", ".join(FORMATS))


def _null(_constant: str) -> None:
    return None


def strict(value: Any, **options: Any) -> str:
    """``value`` as JSON every parser accepts: NaN and ±Infinity become null.

    Unlike :func:`agenteval_cli.report.json_report.strict_json` nothing is redacted: the
    file is the dataset, and an example that quotes a URL with a password must pull and
    push back unchanged."""
    text = json.dumps(value, ensure_ascii=False, **options)
    if "NaN" in text or "Infinity" in text:  # perhaps only inside a string
        plain = json.loads(text, parse_constant=_null)
        text = json.dumps(plain, ensure_ascii=False, allow_nan=False, **options)
    return text


def write(examples: list[Example], path: Path) -> None:
    text = render(examples, path.suffix.lower())
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise UserError(f"cannot write: {exc.strerror}", file=path) from None


def _csv(examples: list[Example]) -> str:
    columns: dict[str, None] = {"id": None}
    for example in examples:
        for part in ("inputs", "outputs", "metadata"):
            for key in getattr(example, part):
                columns[f"{part}.{key}"] = None
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(list(columns))
    for example in examples:
        cells = []
        for column in columns:
            if column == "id":
                cells.append(example.id)
                continue
            part, _, key = column.partition(".")
            value = getattr(example, part).get(key)
            cells.append(_cell(value, example.id, column))
        writer.writerow(cells)
    return buffer.getvalue()


def _cell(value: Any, example_id: str, column: str) -> str:
    if value is None:
        return ""
    if isinstance(value, list | dict):
        return strict(value)
    if isinstance(value, str) and value and not value.lstrip().startswith(("[", "{")):
        return value
    raise UserError(
        f"example {example_id!r}: {column} = {value!r} would not read back the same from CSV",
        hint="pull to .jsonl, .json or .yaml instead",
    )
