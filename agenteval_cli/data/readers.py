"""Format readers: a dataset file becomes ``(Position, raw row)`` pairs, in file order.

Each format has its own syntax errors and its own idea of where a row is (a line in
.jsonl and .csv, a list position in .json and .yaml). The readers deal with both, so
validating rows (:mod:`agenteval_cli.data.examples`) is the same for every format. The
formats themselves, CSV's rule included, are described in that module's docstring.
"""

from __future__ import annotations

import csv
import json
import re
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import IO, Any, Protocol

from agenteval_cli.core.errors import UserError, did_you_mean
from agenteval_cli.core.yamlsource import NestedTooDeep, describe, format_key_path, load_yaml

__all__ = [
    "MAX_DEPTH",
    "MAX_ROW_BYTES",
    "READERS",
    "BadRow",
    "Opener",
    "Position",
    "Rows",
    "describe_json",
]

# The limits every format shares. A row is its line in .jsonl, its lines in .csv, and its
# JSON text in .json and .yaml. Larger rows would be sent to every target and stored with
# every result; deeper ones would exhaust Python's stack in the parser, the encoder or an
# evaluator.
MAX_ROW_BYTES = 16 * 1024 * 1024
MAX_DEPTH = 100  # containers: the row itself is level 1, its inputs level 2
MAX_WHOLE_FILE_BYTES = 256 * 1024 * 1024  # a .json or .yaml file, parsed in one piece

_SURROGATE = re.compile("[\ud800-\udfff]")  # what a JSON or YAML "\ud800" escape gives

_BOM = b"\xef\xbb\xbf"  # a UTF-8 byte order mark, as Excel and Notepad write

_CSV_PREFIXES = {
    "inputs": "inputs",
    "outputs": "outputs",
    "reference_outputs": "outputs",
    "metadata": "metadata",
}


@dataclass(frozen=True)
class Position:
    """Where a row sits: ``row`` becomes ``Example.row``; ``line`` locates errors."""

    row: int
    line: int | None = None
    row_is_line: bool = False

    def error(self, file: Path, message: str, hint: str | None = None) -> UserError:
        """A UserError at this row: ``file:line`` for line-based formats, else ``row N``."""
        row = None if self.row_is_line else self.row
        return UserError(message, file=file, line=self.line, row=row, hint=hint)

    def describe(self) -> str:
        """``line N`` or ``row N``, to point back at an earlier row in a message."""
        return f"line {self.line}" if self.row_is_line else f"row {self.row}"


@dataclass(frozen=True)
class BadRow:
    """In place of a row's record when a reader collects problems (``collect=True``): the
    row's problem, so checking goes on with the next row. A problem that leaves the rest
    of the file unreadable (broken CSV quoting, a .json syntax error) is raised as before."""

    error: UserError


Rows = Iterator[tuple[Position, Any]]
Opener = Callable[[Path], IO[bytes]]  # how a streamed format opens its file


def _open(path: Path) -> IO[bytes]:
    return path.open("rb")


def _line_position(number: int) -> Position:
    """``Position(row=number, line=number, row_is_line=True)``, filled in directly: the
    frozen dataclass's ``__init__`` costs more than reading the line it describes."""
    position = object.__new__(Position)
    position.__dict__.update(row=number, line=number, row_is_line=True)
    return position


def describe_json(value: Any) -> str:
    """:func:`~agenteval_cli.core.yamlsource.describe` in JSON's words: null, an object."""
    if value is None:
        return "null"
    if isinstance(value, dict):
        return "an object"
    return describe(value)


_NUMBER_HINT = "write a number that long as a string"


def _number_problem() -> str:
    """Python refuses integers of more than ``sys.get_int_max_str_digits()`` digits."""
    return f"invalid JSON: a number with more than {sys.get_int_max_str_digits()} digits"


def _json_problem(exc: json.JSONDecodeError) -> str:
    """What is wrong and in which column; the caller knows the line."""
    return f"invalid JSON: {exc.msg} (column {exc.colno})"


def _read_jsonl(path: Path, opener: Opener = _open, *, collect: bool = False) -> Rows:
    """One JSON value per line, streamed; blank lines are skipped but counted."""
    with opener(path) as handle:
        lines = iter(partial(handle.readline, MAX_ROW_BYTES + 1), b"")  # never a huge line
        for number, raw in enumerate(lines, start=1):
            if len(raw) > MAX_ROW_BYTES and raw[-1:] != b"\n":
                raise _too_large(_line_position(number), path)
            try:
                parsed = _jsonl_row(raw, number, path)
            except UserError as exc:
                if not collect:
                    raise
                yield _line_position(number), BadRow(exc)
                continue
            if parsed is not None:
                yield parsed


def _jsonl_row(raw: bytes, number: int, path: Path) -> tuple[Position, Any] | None:
    """One line's row, None for a blank line; a UserError names what is wrong with it."""
    try:
        text = (raw.removeprefix(_BOM) if number == 1 else raw).decode("utf-8")
    except UnicodeDecodeError as exc:
        data = raw.removeprefix(_BOM) if number == 1 else raw
        raise _not_utf8(path, data, exc.start, number) from None
    if not text or text.isspace():  # what strip() would leave empty
        return None
    position = _line_position(number)
    try:
        record = _loads_line(text)
    except json.JSONDecodeError as exc:
        raise position.error(
            path,
            _json_problem(exc),
            "each line must be one complete JSON object",
        ) from None
    except RecursionError:
        raise _too_deep(position, path) from None
    except ValueError:  # an integer of more digits than Python converts
        raise position.error(path, _number_problem(), _NUMBER_HINT) from None
    if "\\u" in text or text.count("[") + text.count("{") > MAX_DEPTH:
        check_row(record, position, path)
    return position, record


# the scanner json.loads ends up calling; JSONDecoder.__init__ sets it, typeshed omits it
_scan_value: Callable[[str, int], tuple[Any, int]] = json.JSONDecoder().scan_once  # type: ignore[attr-defined]


def _loads_line(text: str) -> Any:
    """``json.loads(text)`` for one line: a value that starts the line and ends it (a
    newline aside) is scanned directly; anything else, errors included, goes to json.loads."""
    try:
        value, end = _scan_value(text, 0)
    except (StopIteration, ValueError):
        return json.loads(text)
    if end == len(text) or (end == len(text) - 1 and text[end] == "\n"):
        return value
    return json.loads(text)


def _read_json(path: Path, opener: Opener = _open, *, collect: bool = False) -> Rows:
    """One JSON document, read whole: a list of rows, or ``{"examples": [...]}``."""
    text = _read_text(path)
    if not text.strip():
        return
    try:
        document = json.loads(text)
    except json.JSONDecodeError as exc:
        raise UserError(
            _json_problem(exc),
            file=path,
            line=exc.lineno,
            hint="the file must be one JSON list of rows",
        ) from None
    except RecursionError:
        raise UserError(
            f"data nested deeper than {MAX_DEPTH} levels", file=path, hint="flatten the data"
        ) from None
    except ValueError:
        raise UserError(_number_problem(), file=path, hint=_NUMBER_HINT) from None
    rows = _row_list(document, path)
    # a row can break a limit only if the whole text could
    doubtful = len(text) > MAX_ROW_BYTES // 4 or "\\u" in text
    doubtful = doubtful or text.count("[") + text.count("{") > MAX_DEPTH
    for index, record in enumerate(rows, start=1):
        position = Position(row=index)
        try:
            if doubtful:
                check_row(record, position, path)
                _check_size(json.dumps(record, ensure_ascii=False), position, path)
        except UserError as exc:
            if not collect:
                raise
            record = BadRow(exc)
        yield position, record


def _read_yaml(path: Path, opener: Opener = _open, *, collect: bool = False) -> Rows:
    """Like .json, and rows hold only JSON values: ids hash them and the store saves JSON."""
    try:  # the rows may sit in a list under 'examples': two levels above the rows' own
        doc = load_yaml(_read_text(path), file=path, max_depth=MAX_DEPTH + 2)
    except NestedTooDeep as exc:
        raise UserError(
            f"row is nested deeper than {MAX_DEPTH} levels",
            file=path,
            line=exc.line,
            hint="flatten the data",
        ) from None
    if doc.data is None:
        return
    rows = _row_list(doc.data, path)
    prefix = ("examples",) if isinstance(doc.data, dict) else ()
    for index, record in enumerate(rows, start=1):
        position = Position(row=index, line=doc.line_of(*prefix, index - 1))
        try:
            _check_yaml_row(record, position, path)
        except UserError as exc:
            if not collect:
                raise
            record = BadRow(exc)
        yield position, record


def _check_yaml_row(record: Any, position: Position, path: Path) -> None:
    check_row(record, position, path)
    try:
        text = json.dumps(record, ensure_ascii=False)
    except (TypeError, ValueError):
        raise position.error(
            path,
            "row holds a value JSON cannot represent",
            "use only strings, numbers, booleans, null, lists and mappings",
        ) from None
    _check_size(text, position, path)


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
                f"'examples' must be a list of rows, got {describe_json(document)}", file=path
            )
    if not isinstance(document, list):
        raise UserError(
            f"expected a list of rows, got {describe_json(document)}",
            file=path,
            hint="write a list, or a mapping with 'examples'",
        )
    return document


def _read_csv(path: Path, opener: Opener = _open, *, collect: bool = False) -> Rows:
    """A header line and one row per line, streamed, by the CSV rule in ``datasets``."""
    if csv.field_size_limit() < MAX_ROW_BYTES:  # csv's own limit is 128 KiB a cell
        csv.field_size_limit(MAX_ROW_BYTES)
    with opener(path) as handle:
        lines = _CsvLines(handle, path)
        reader = csv.reader(lines, strict=True)
        start = 1  # the line the current record starts on; a quoted cell may span lines
        try:
            header = next(reader, None)
            if header is None:
                return
            columns = _csv_columns(header, path)
            start = reader.line_num + 1
            lines.size = 0
            for cells in reader:
                line, start = start, reader.line_num + 1
                lines.size = 0
                if not any(cells):
                    continue
                position = Position(row=line, line=line, row_is_line=True)
                try:
                    record: Any = _csv_record(header, columns, cells, position, path)
                except UserError as exc:
                    if not collect:
                        raise
                    record = BadRow(exc)
                yield position, record
        except _TooLarge:
            raise _too_large(Position(row=start, line=start, row_is_line=True), path) from None
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
    position: Position,
    path: Path,
) -> dict[str, Any]:
    """One CSV row as a nested row: JSON-looking cells parsed, empty cells left out; a
    UserError when it has another number of cells than the header, or no inputs."""
    if len(cells) != len(columns):
        raise position.error(
            path,
            f"row has {len(cells)} cells but the header has {len(columns)} columns",
            "quote cells that contain commas",
        )
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
                    f"column {name.strip()!r}: {_json_problem(exc)}",
                    'a cell starting with [ or { is JSON, e.g. ["billing", "account"]',
                ) from None
            except RecursionError:
                raise _too_deep(position, path) from None
            except ValueError:
                message = f"column {name.strip()!r}: {_number_problem()}"
                raise position.error(path, message, _NUMBER_HINT) from None
            if "\\u" in cell or cell.count("[") + cell.count("{") > MAX_DEPTH - 2:
                check_row({part: {field: value}}, position, path)
        if field is None:
            record[part] = value
        else:
            record.setdefault(part, {})[field] = value
    if "inputs" not in record:
        raise position.error(path, "row has no inputs", "fill an inputs column")
    return record


# --- limits ------------------------------------------------------------------------------


def check_row(record: Any, position: Position, path: Path) -> None:
    """Refuse a row nested deeper than ``MAX_DEPTH`` or holding a lone surrogate (a string
    UTF-8 cannot encode, so the store could not save it)."""
    if type(record) is not dict and type(record) is not list:
        return  # not a row at all, which the row check reports
    stack: list[tuple[Any, int, tuple[Any, ...]]] = [(record, 1, ())]
    while stack:
        value, depth, at = stack.pop()
        if depth > MAX_DEPTH:
            raise _too_deep(position, path)
        items = value.items() if type(value) is dict else enumerate(value)
        for key, item in items:
            if type(key) is str and not key.isascii() and _SURROGATE.search(key):
                raise _surrogate(key, (*at, key), position, path)
            kind = type(item)
            if kind is dict or kind is list:
                stack.append((item, depth + 1, (*at, key)))
            elif kind is str and not item.isascii() and _SURROGATE.search(item):
                raise _surrogate(item, (*at, key), position, path)


def _surrogate(text: str, at: tuple[Any, ...], position: Position, path: Path) -> UserError:
    found = _SURROGATE.search(text)
    code = _escape(found) if found else "?"
    where = _SURROGATE.sub(_escape, format_key_path(at)) or "the row"  # a key may hold it
    return position.error(
        path,
        f"{where} holds a lone surrogate ({code}), which UTF-8 cannot store",
        "write the character itself, or a complete surrogate pair",
    )


def _escape(found: re.Match[str]) -> str:
    return f"\\u{ord(found.group()):04x}"


def _too_deep(position: Position, path: Path) -> UserError:
    return position.error(path, f"row is nested deeper than {MAX_DEPTH} levels", "flatten the data")


def _too_large(position: Position, path: Path) -> UserError:
    return position.error(
        path,
        f"row is larger than {MAX_ROW_BYTES // (1024 * 1024)} MiB",
        "keep each row under the limit; give a large document to the target by its path",
    )


def _check_size(text: str, position: Position, path: Path) -> None:
    """Refuse a row whose JSON ``text`` exceeds ``MAX_ROW_BYTES`` in UTF-8."""
    if len(text) * 4 > MAX_ROW_BYTES and len(text.encode("utf-8")) > MAX_ROW_BYTES:
        raise _too_large(position, path)


class _TooLarge(Exception):
    """A CSV record grew past ``MAX_ROW_BYTES``; the reader knows where it started."""


class _CsvLines:
    """The file's lines as text for ``csv.reader``, never one longer than a row may be;
    ``size`` counts the bytes handed out since the reader last reset it (one record)."""

    def __init__(self, handle: IO[bytes], path: Path) -> None:
        self.lines = enumerate(iter(partial(handle.readline, MAX_ROW_BYTES + 1), b""), 1)
        self.path = path
        self.size = 0

    def __iter__(self) -> _CsvLines:
        return self

    def __next__(self) -> str:
        number, raw = next(self.lines)
        self.size += len(raw)
        if self.size > MAX_ROW_BYTES + 1 or (len(raw) > MAX_ROW_BYTES and raw[-1:] != b"\n"):
            raise _TooLarge
        data = raw.removeprefix(_BOM) if number == 1 else raw
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise _not_utf8(self.path, data, exc.start, number) from None


# --- bytes to text -----------------------------------------------------------------------


def _read_text(path: Path) -> str:
    """The whole file as text, without a leading BOM; bad bytes reported at their line."""
    if path.stat().st_size > MAX_WHOLE_FILE_BYTES:
        raise UserError(
            f"a {path.suffix} dataset is read whole, and this one is larger than "
            f"{MAX_WHOLE_FILE_BYTES // 1024**2} MiB",
            file=path,
            hint="write it as .jsonl, which is read row by row",
        )
    data = path.read_bytes().removeprefix(_BOM)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line_start = data.rfind(b"\n", 0, exc.start) + 1
        line = data.count(b"\n", 0, exc.start) + 1
        raise _not_utf8(path, data[line_start:], exc.start - line_start, line) from None


def _not_utf8(path: Path, line_bytes: bytes, offset: int, line: int) -> UserError:
    """Name the bad byte and its column, so it can be found in an editor."""
    column = len(line_bytes[:offset].decode("utf-8", errors="replace")) + 1
    return UserError(
        f"not valid UTF-8 (byte 0x{line_bytes[offset]:02x} at column {column})",
        file=path,
        line=line,
        hint="save the file as UTF-8",
    )


# Suffix -> reader, in the order messages list the formats.
# .json and .yaml are read whole (``opener`` is for the streamed formats, .jsonl and .csv).
class Reader(Protocol):
    """A format's reader: its rows, the file opened by ``opener`` when one is given."""

    def __call__(self, path: Path, opener: Opener = ..., /, *, collect: bool = False) -> Rows: ...


READERS: dict[str, Reader] = {
    ".jsonl": _read_jsonl,
    ".json": _read_json,
    ".yaml": _read_yaml,
    ".yml": _read_yaml,
    ".csv": _read_csv,
}
