"""Read evaluation examples from .jsonl, .json, .yaml/.yml and .csv files.

Every format holds the same rows::

    {"id": "billing-1", "inputs": {...}, "outputs": {...}, "metadata": {...}}

Only ``inputs`` is required. ``reference_outputs`` (LangSmith's newer name) is
accepted for ``outputs``. A ``.json`` or ``.yaml`` file holds a list of rows or a
mapping ``{"examples": [...]}``; a ``.jsonl`` file holds one row per line.

CSV files follow one rule:

* The header names the columns: ``id``, ``inputs.<field>``, ``outputs.<field>``
  (or ``reference_outputs.<field>``) and ``metadata.<field>``; a bare ``<field>``
  (no dot) means ``inputs.<field>``.
* A cell whose text starts with ``[`` or ``{`` (after leading spaces) is read as
  JSON, so a list is written ``["billing", "account"]``; any other cell is a
  string, and an empty cell is left out of its row.
* Every row has as many cells as the header (quote cells that contain commas);
  a line whose cells are all empty is skipped.

Example ids are stable across runs and formats: the row's ``id`` (as a string)
when given, else the first 16 hex digits of the SHA-256 of the canonical JSON of
``{"inputs": ..., "outputs": ...}``. Two rows with the same id are an error.
``Example.row`` is the row's line for .jsonl and .csv (blank lines count) and its
1-based position in the list for .json and .yaml.
"""

from __future__ import annotations

import csv
import hashlib
import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from agenteval_cli.errors import UserError, did_you_mean
from agenteval_cli.records import Example

SUPPORTED_SUFFIXES = (".jsonl", ".json", ".yaml", ".yml", ".csv")

_BOM = b"\xef\xbb\xbf"  # a UTF-8 byte order mark, as Excel and Notepad write

_ROW_KEYS = ("id", "inputs", "outputs", "reference_outputs", "metadata")
_CSV_PREFIXES = {
    "inputs": "inputs",
    "outputs": "outputs",
    "reference_outputs": "outputs",
    "metadata": "metadata",
}
_EMPTY_HINTS = {
    ".jsonl": 'add one JSON object per line, e.g. {"inputs": {"question": "..."}}',
    ".json": 'add a list of rows, e.g. [{"inputs": {"question": "..."}}]',
    ".yaml": "add a list of rows, e.g. '- inputs: {question: ...}'",
    ".yml": "add a list of rows, e.g. '- inputs: {question: ...}'",
    ".csv": "add a header line and one line per example",
}


@dataclass(frozen=True)
class _Position:
    """Where a row sits: ``row`` becomes ``Example.row``; ``line`` locates errors."""

    row: int
    line: int | None = None
    row_is_line: bool = False

    def error(self, file: Path, message: str, hint: str | None = None) -> UserError:
        row = None if self.row_is_line else self.row
        return UserError(message, file=file, line=self.line, row=row, hint=hint)

    def describe(self) -> str:
        return f"line {self.line}" if self.row_is_line else f"row {self.row}"


Rows = Iterator[tuple[_Position, Any]]


def load_examples(path: str | Path) -> list[Example]:
    """Every example in the file, validated, in file order."""
    return list(iter_examples(path))


def iter_examples(path: str | Path) -> Iterator[Example]:
    """Yield examples one by one; .jsonl and .csv files are streamed, not loaded whole."""
    path = Path(path)
    suffix = _check_readable(path)
    first_seen: dict[str, _Position] = {}
    for position, record in _guard_os_errors(_READERS[suffix](path), path):
        example = _to_example(record, position, path)
        if example.id in first_seen:
            given = isinstance(record, dict) and record.get("id") is not None
            what = f"duplicate id {example.id!r}" if given else "duplicate example"
            raise position.error(
                path,
                f"{what} (same as {first_seen[example.id].describe()})",
                "give each row a unique 'id'" if given else "remove one of the identical rows",
            )
        first_seen[example.id] = position
        yield example
    if not first_seen:
        raise UserError("contains no examples", file=path, hint=_EMPTY_HINTS[suffix])


def _guard_os_errors(rows: Rows, path: Path) -> Rows:
    try:
        yield from rows
    except OSError as exc:
        raise UserError(f"cannot read dataset: {exc.strerror}", file=path) from None


def dataset_hash(path: str | Path) -> str:
    """SHA-256 of the file's bytes: tells whether two experiments saw the same data."""
    path = Path(path)
    digest = hashlib.sha256()
    try:
        with path.open("rb") as handle:
            while chunk := handle.read(1 << 20):
                digest.update(chunk)
    except OSError as exc:
        raise UserError(f"cannot read dataset: {exc.strerror}", file=path) from None
    return digest.hexdigest()


def example_id(inputs: dict[str, Any], outputs: dict[str, Any]) -> str:
    """The content id of a row without an ``id``: same content, same id, in any format."""
    canonical = json.dumps(
        {"inputs": inputs, "outputs": outputs},
        sort_keys=True,
        separators=(",", ":"),
        ensure_ascii=False,
    )
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()[:16]


def _check_readable(path: Path) -> str:
    suffix = path.suffix.lower()
    if suffix not in SUPPORTED_SUFFIXES:
        close = did_you_mean(suffix, SUPPORTED_SUFFIXES)
        raise UserError(
            f"unknown dataset format {suffix or path.name!r}",
            file=path,
            hint=close or "use " + ", ".join(SUPPORTED_SUFFIXES),
        )
    if not path.exists():
        raise UserError("dataset file not found", file=path, hint="check the path")
    if not path.is_file():
        raise UserError("dataset path is not a file", file=path, hint="point at a file")
    return suffix


# --- rows ------------------------------------------------------------------------------


def _to_example(record: Any, position: _Position, file: Path) -> Example:
    if not isinstance(record, dict):
        raise position.error(
            file,
            f"row is not an object, got {_describe(record)}",
            'write {"inputs": {...}, "outputs": {...}}',
        )
    for key in record:
        if key not in _ROW_KEYS:
            raise position.error(
                file,
                f"unknown key {key!r}",
                did_you_mean(str(key), _ROW_KEYS) or "allowed keys: " + ", ".join(_ROW_KEYS),
            )
    if "outputs" in record and "reference_outputs" in record:
        raise position.error(
            file,
            "row has both 'outputs' and 'reference_outputs'",
            "they are the same thing; keep one",
        )
    if "inputs" not in record:
        raise position.error(file, "row has no 'inputs'", 'add "inputs": {"question": "..."}')
    inputs = _object_field(record, "inputs", position, file, optional=False)
    outputs = _object_field(
        record, "outputs" if "outputs" in record else "reference_outputs", position, file
    )
    metadata = _object_field(record, "metadata", position, file)
    return Example(
        id=_row_id(record.get("id"), position, file) or example_id(inputs, outputs),
        inputs=inputs,
        outputs=outputs,
        metadata=metadata,
        row=position.row,
    )


def _object_field(
    record: dict[str, Any], key: str, position: _Position, file: Path, *, optional: bool = True
) -> dict[str, Any]:
    value = record.get(key)
    if value is None and optional:
        return {}
    if not isinstance(value, dict):
        raise position.error(
            file,
            f"'{key}' must be an object, got {_describe(value)}",
            f'write "{key}": {{"field": value, ...}}',
        )
    return value


def _row_id(value: Any, position: _Position, file: Path) -> str | None:
    if value is None:
        return None
    if isinstance(value, str) and value:
        return value
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    raise position.error(
        file,
        f"'id' must be a non-empty string or an integer, got {_describe(value)}",
        "or leave 'id' out to use a content hash",
    )


def _describe(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, list):
        return "a list"
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


# --- readers: each yields (position, record) ---------------------------------------------


def _read_jsonl(path: Path) -> Rows:
    with path.open("rb") as handle:
        for number, text in _decoded_lines(handle, path):
            if not text.strip():
                continue
            position = _Position(row=number, line=number, row_is_line=True)
            try:
                record = json.loads(text)
            except json.JSONDecodeError as exc:
                raise position.error(
                    path,
                    f"invalid JSON: {exc.msg} (column {exc.colno})",
                    "each line must be one complete JSON object",
                ) from None
            yield position, record


def _read_json(path: Path) -> Rows:
    text = _read_text(path)
    if not text.strip():
        return
    try:
        document = json.loads(text)
    except json.JSONDecodeError as exc:
        raise UserError(
            f"invalid JSON: {exc.msg} (column {exc.colno})",
            file=path,
            line=exc.lineno,
            hint="the file must be one JSON list of rows",
        ) from None
    for index, record in enumerate(_row_list(document, path), start=1):
        yield _Position(row=index), record


def _read_yaml(path: Path) -> Rows:
    from agenteval_cli.yamlsource import load_yaml

    doc = load_yaml(_read_text(path), file=path)
    if doc.data is None:
        return
    rows = _row_list(doc.data, path)
    prefix = ("examples",) if isinstance(doc.data, dict) else ()
    for index, record in enumerate(rows, start=1):
        position = _Position(row=index, line=doc.line_of(*prefix, index - 1))
        try:
            json.dumps(record)
        except (TypeError, ValueError):
            raise position.error(
                path,
                "row holds a value JSON cannot represent",
                "use only strings, numbers, booleans, null, lists and mappings",
            ) from None
        yield position, record


def _row_list(document: Any, path: Path) -> list[Any]:
    """The rows of a .json or .yaml document: a list, or the list under 'examples'."""
    if isinstance(document, dict):
        if "inputs" in document:
            raise UserError(
                "expected a list of rows, got a single row", file=path, hint="wrap it in a list"
            )
        for key in document:
            if key != "examples":
                raise UserError(
                    f"unknown top-level key {key!r}",
                    file=path,
                    hint=did_you_mean(str(key), ["examples"]) or "only 'examples' is read",
                )
        document = document.get("examples")
        if not isinstance(document, list):
            raise UserError(
                f"'examples' must be a list of rows, got {_describe(document)}", file=path
            )
    if not isinstance(document, list):
        raise UserError(
            f"expected a list of rows, got {_describe(document)}",
            file=path,
            hint="write a list, or a mapping with 'examples'",
        )
    return document


def _read_csv(path: Path) -> Rows:
    with path.open("rb") as handle:
        reader = csv.reader((text for _, text in _decoded_lines(handle, path)), strict=True)
        start = 1  # the line the current record starts on; a quoted cell may span lines
        try:
            header = next(reader, None)
            if header is None:
                return
            columns = _csv_columns(header, path)
            start = reader.line_num + 1
            for cells in reader:
                line, start = start, reader.line_num + 1
                if not any(cells):
                    continue
                position = _Position(row=line, line=line, row_is_line=True)
                if len(cells) != len(columns):
                    raise position.error(
                        path,
                        f"row has {len(cells)} cells but the header has {len(columns)} columns",
                        "quote cells that contain commas",
                    )
                record = _csv_record(header, columns, cells, position, path)
                if "inputs" not in record:
                    raise position.error(path, "row has no inputs", "fill an inputs column")
                yield position, record
        except csv.Error as exc:
            raise UserError(
                f"invalid CSV: {exc}",
                file=path,
                line=start,
                hint='close quoted cells, and write a quote inside one as ""',
            ) from None


def _csv_columns(header: list[str], path: Path) -> list[tuple[str, str | None]]:
    """Map each header name to ``(part, field)``: ``("inputs", "question")``, ``("id", None)``."""
    columns: list[tuple[str, str | None]] = []
    for number, raw_name in enumerate(header, start=1):
        name = raw_name.strip()
        column: tuple[str, str | None]
        if not name:
            raise UserError(f"column {number} has no name", file=path, line=1)
        if name == "id":
            column = ("id", None)
        elif "." in name:
            prefix, field = name.split(".", 1)
            if prefix not in _CSV_PREFIXES:
                raise UserError(
                    f"column {name!r} has unknown prefix {prefix!r}",
                    file=path,
                    line=1,
                    hint=did_you_mean(prefix, _CSV_PREFIXES)
                    or "use inputs.<field>, outputs.<field> or metadata.<field>",
                )
            if not field:
                raise UserError(
                    f"column {name!r} has no field name", file=path, line=1, hint=f"{name}<field>"
                )
            column = (_CSV_PREFIXES[prefix], field)
        elif name in _CSV_PREFIXES:
            raise UserError(
                f"column {name!r} needs a field name", file=path, line=1, hint=f"{name}.<field>"
            )
        else:
            column = ("inputs", name)
        if column in columns:
            earlier = header[columns.index(column)].strip()
            raise UserError(
                f"columns {earlier!r} and {name!r} set the same field",
                file=path,
                line=1,
                hint="keep one of them",
            )
        columns.append(column)
    return columns


def _csv_record(
    header: list[str],
    columns: list[tuple[str, str | None]],
    cells: list[str],
    position: _Position,
    path: Path,
) -> dict[str, Any]:
    record: dict[str, Any] = {}
    for name, (part, field), cell in zip(header, columns, cells, strict=True):
        if cell == "":
            continue
        value: Any = cell
        if cell.lstrip()[:1] in ("[", "{"):
            try:
                value = json.loads(cell)
            except json.JSONDecodeError as exc:
                raise position.error(
                    path,
                    f"column {name.strip()!r}: invalid JSON: {exc.msg} (column {exc.colno})",
                    'a cell starting with [ or { is JSON, e.g. ["billing", "account"]',
                ) from None
        if field is None:
            record[part] = value
        else:
            record.setdefault(part, {})[field] = value
    return record


# --- bytes to text -----------------------------------------------------------------------


def _read_text(path: Path) -> str:
    data = path.read_bytes().removeprefix(_BOM)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line_start = data.rfind(b"\n", 0, exc.start) + 1
        line = data.count(b"\n", 0, exc.start) + 1
        raise _not_utf8(path, data[line_start:], exc.start - line_start, line) from None


def _decoded_lines(handle: IO[bytes], path: Path) -> Iterator[tuple[int, str]]:
    """Decode line by line so an undecodable byte is reported at its own line."""
    for number, raw in enumerate(handle, start=1):
        data = raw.removeprefix(_BOM) if number == 1 else raw
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise _not_utf8(path, data, exc.start, number) from None
        yield number, text


def _not_utf8(path: Path, line_bytes: bytes, offset: int, line: int) -> UserError:
    column = len(line_bytes[:offset].decode("utf-8", errors="replace")) + 1
    return UserError(
        f"not valid UTF-8 (byte 0x{line_bytes[offset]:02x} at column {column})",
        file=path,
        line=line,
        hint="save the file as UTF-8",
    )


_READERS = {
    ".jsonl": _read_jsonl,
    ".json": _read_json,
    ".yaml": _read_yaml,
    ".yml": _read_yaml,
    ".csv": _read_csv,
}
