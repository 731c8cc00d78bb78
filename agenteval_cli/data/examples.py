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
``{"inputs": ..., "outputs": ...}`` (a conversation's turns are in its inputs, so in its
id). Two rows with the same id are an error. A conversation row (``inputs.turns``, see
:mod:`agenteval_cli.data.conversations`) whose shape is wrong is an error of its row.
``Example.row`` is the row's line for .jsonl and .csv (blank lines count) and its
1-based position in the list for .json and .yaml.

Parsing each format into raw rows is :mod:`agenteval_cli.data.readers`' job; this
module checks the rows, gives them ids and refuses duplicates, the same for every format.
"""

from __future__ import annotations

import hashlib
import io
import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from itertools import islice
from pathlib import Path
from typing import IO, Any

from agenteval_cli.core.errors import UserError, did_you_mean
from agenteval_cli.core.records import Example
from agenteval_cli.data.conversations import TURNS, shape_fault
from agenteval_cli.data.readers import READERS, BadRow, Opener, Position, Rows, describe_json

SUPPORTED_SUFFIXES: tuple[str, ...] = tuple(READERS)  # .jsonl .json .yaml .yml .csv

_ROW_KEYS = ("id", "inputs", "outputs", "reference_outputs", "metadata")
_ROW_KEY_SET = frozenset(_ROW_KEYS)
_EMPTY_HINTS = {
    ".jsonl": 'add one JSON object per line, e.g. {"inputs": {"question": "..."}}',
    ".json": 'add a list of rows, e.g. [{"inputs": {"question": "..."}}]',
    ".yaml": "add a list of rows, e.g. '- inputs: {question: ...}'",
    ".yml": "add a list of rows, e.g. '- inputs: {question: ...}'",
    ".csv": "add a header line and one line per example",
}


STREAMED_SUFFIXES = (".jsonl", ".csv")  # read row by row: never held whole in memory
HELD_EXAMPLES = 8192  # a streamed file with no more examples than this is kept in memory


def load_examples(path: str | Path) -> list[Example]:
    """Every example in the file, validated, in file order."""
    return list(iter_examples(path))


def open_examples(path: str | Path, limit: int | None = None) -> Sequence[Example]:
    """The file's examples (the first ``limit``), validated now. A .jsonl or .csv file is
    not held in memory (:class:`StreamedExamples`); the other formats are read whole."""
    path = Path(path)
    if path.suffix.lower() in STREAMED_SUFFIXES:
        return StreamedExamples(path, limit)
    examples = load_examples(path)
    return examples if limit is None else examples[:limit]


class StreamedExamples(Sequence[Example]):
    """The examples of a .jsonl or .csv file, checked and counted once, then read from the
    file again each time they are iterated (once per repetition of a run), so memory does
    not grow with the file. A small file's examples (at most ``HELD_EXAMPLES``) are kept
    from the check instead: reading them again would cost more than the memory they take.

    Reading again reads the bytes that were checked, no more: lines appended since are not
    part of the run (:meth:`changed` tells), and a block of the checked bytes that is no
    longer the same is an error raised before any row of it is used, never a mix of two
    datasets (:class:`_Snapshot`)."""

    def __init__(self, path: Path, limit: int | None = None) -> None:
        self.path = path
        self._stamp = _stamp(path)
        self._blocks: list[tuple[int, bytes]] = []
        held: list[Example] | None = []
        count = 0
        for example in iter_examples(path, opener=self._record):
            count += 1
            if held is not None:
                held.append(example)
                if count > HELD_EXAMPLES:
                    held = None
        self._count = count if limit is None else min(count, limit)
        self._held = None if held is None else held[: self._count]

    def __len__(self) -> int:
        return self._count

    def __iter__(self) -> Iterator[Example]:
        """The rows held, or read again from the file: the iterator itself, with no
        generator of its own between it and the run."""
        if self._held is not None:
            return iter(self._held)
        examples = iter_examples(self.path, check_ids=False, opener=self._replay)
        return islice(examples, self._count)

    def changed(self) -> bool:
        """Whether the file is no longer as it was checked (say, rows were appended)."""
        try:
            return _stamp(self.path) != self._stamp
        except UserError:  # removed: changed too
            return True

    def _record(self, path: Path) -> IO[bytes]:
        return io.BufferedReader(_Snapshot(path, self._blocks, record=True), _BUFFER)

    def _replay(self, path: Path) -> IO[bytes]:
        return io.BufferedReader(_Snapshot(path, self._blocks, record=False), _BUFFER)

    def __getitem__(self, index: Any) -> Any:
        if self._held is not None:
            return self._held[index]
        if isinstance(index, slice):
            return list(self)[index]
        if index < 0:
            index += self._count
        if not 0 <= index < self._count:
            raise IndexError(index)
        return next(islice(iter(self), index, None))


_BLOCK = 1 << 20  # bytes per checked block
_BUFFER = 1 << 16


class _Snapshot(io.RawIOBase):
    """A dataset file's bytes as they were checked. Recording (the check's read), it keeps
    the length and SHA-256 of each block it reads; replaying, it reads the same blocks and
    no further, and refuses a block that differs before handing out any of it."""

    def __init__(self, path: Path, blocks: list[tuple[int, bytes]], *, record: bool) -> None:
        super().__init__()
        self.path = path
        self.blocks = blocks
        self.recording = record
        if record:
            blocks.clear()
        self.file: IO[bytes] | None = None
        self.file = path.open("rb", buffering=0)  # a buffer would serve stale bytes
        self.index = 0  # the next block
        self.block = memoryview(b"")
        self.offset = 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        if self.offset >= len(self.block) and not self._next_block():
            return 0
        size = min(len(buffer), len(self.block) - self.offset)
        buffer[:size] = self.block[self.offset : self.offset + size]
        self.offset += size
        return size

    def _next_block(self) -> bool:
        assert self.file is not None
        if self.recording:
            data = self.file.read(_BLOCK)
            if data:
                self.blocks.append((len(data), hashlib.sha256(data).digest()))
        else:
            if self.index >= len(self.blocks):
                return False  # what was appended since the check is not read
            length, digest = self.blocks[self.index]
            data = self.file.read(length)
            while 0 < len(data) < length:  # a read may stop short of the end
                more = self.file.read(length - len(data))
                if not more:
                    break
                data += more
            if len(data) != length or hashlib.sha256(data).digest() != digest:
                raise DatasetChanged(self.path)
        self.index += 1
        self.block, self.offset = memoryview(data), 0
        return bool(data)

    def close(self) -> None:
        if self.file is not None:
            self.file.close()
        super().close()


class DatasetChanged(UserError):
    """Rows of a streamed dataset changed after they were checked, during the run."""

    def __init__(self, path: Path) -> None:
        super().__init__(
            "the dataset file changed during the run; the results so far are kept",
            file=path,
            hint="restore the file and run again with --resume to finish, or run without "
            "--resume to start over",
        )


def _stamp(path: Path) -> tuple[int, int]:
    try:
        stat = path.stat()
    except OSError as exc:
        raise UserError(f"cannot read dataset: {exc.strerror}", file=path) from None
    return stat.st_size, stat.st_mtime_ns


def iter_examples(
    path: str | Path, *, check_ids: bool = True, opener: Opener | None = None
) -> Iterator[Example]:
    """Yield examples one by one; .jsonl and .csv files are streamed, not loaded whole.

    ``check_ids=False`` skips the duplicate check, for a file already checked; ``opener``
    opens a streamed file (a :class:`StreamedExamples` reads through its snapshot)."""
    path = Path(path)
    suffix = _check_readable(path)
    seen: set[str] = set()  # ids only: a duplicate's first position is looked up again
    found = False
    rows = READERS[suffix](path) if opener is None else READERS[suffix](path, opener)
    for position, record in _guard_os_errors(rows, path):
        example = _to_example(record, position, path)
        found = True
        if check_ids:
            if example.id in seen:
                _duplicate(example, record, position, path, suffix)
            seen.add(example.id)
        yield example
    if not found:
        raise UserError("contains no examples", file=path, hint=_EMPTY_HINTS[suffix])


@dataclass
class DatasetCheck:
    """Every row of a file checked: how many are valid, and the problems of the others."""

    valid: int = 0
    bad: int = 0  # rows with a problem, every one counted
    problems: list[UserError] = field(default_factory=list)  # the first ``shown`` of them
    fatal: UserError | None = None  # a problem that left the rest of the file unread


def check_file(path: str | Path, *, shown: int = 20) -> DatasetCheck:
    """Check every row, as a run would, without stopping at the first bad one.

    A syntax error that leaves the rest unreadable (a .json or .yaml document, broken CSV
    quoting) ends the check there; the rows before it are still counted."""
    path = Path(path)
    check = DatasetCheck()

    def problem(error: UserError) -> None:
        check.bad += 1
        if len(check.problems) < shown:
            check.problems.append(error)

    try:
        suffix = _check_readable(path)
        first: dict[str, str] = {}  # id -> where it first appeared
        for position, record in _guard_os_errors(READERS[suffix](path, collect=True), path):
            if isinstance(record, BadRow):
                problem(record.error)
                continue
            try:
                example = _to_example(record, position, path)
            except UserError as exc:
                problem(exc)
                continue
            if example.id in first:
                problem(duplicate_error(example, record, position, path, first[example.id]))
                continue
            first[example.id] = position.describe()
            check.valid += 1
        if not check.valid and not check.bad:
            raise UserError("contains no examples", file=path, hint=_EMPTY_HINTS[suffix])
    except UserError as exc:
        check.fatal = exc
    return check


def _duplicate(example: Example, record: Any, position: Position, path: Path, suffix: str) -> None:
    """Raise the duplicate-id error, naming where the id first appeared (read again: only
    ids are kept while streaming)."""
    first = next(
        where
        for where, row in READERS[suffix](path)
        if _to_example(row, where, path).id == example.id
    )
    raise duplicate_error(example, record, position, path, first.describe())


def duplicate_error(
    example: Example, record: Any, position: Position, path: Path, first: str
) -> UserError:
    """A row whose id an earlier row (``first``: "line 1", "row 3") already has."""
    given = isinstance(record, dict) and record.get("id") is not None
    what = f"duplicate id {example.id!r}" if given else "duplicate example"
    return position.error(
        path,
        f"{what} (same as {first})",
        "give each row a unique 'id'" if given else "remove one of the identical rows",
    )


def _guard_os_errors(rows: Rows, path: Path) -> Rows:
    """A file that fails mid-read (removed, unreadable) is a UserError, not a traceback."""
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
    """The file's format suffix, once it is known and the file exists."""
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


def _to_example(record: Any, position: Position, file: Path) -> Example:
    """Check one raw row and build its Example; any problem names the row and a fix."""
    if type(record) is dict and record.keys() <= _ROW_KEY_SET:
        # a well-formed row, checked at once; anything doubtful takes the path below
        inputs = record.get("inputs")
        given = record.get("id")
        if "reference_outputs" in record:
            outputs = None if "outputs" in record else record["reference_outputs"]
        else:
            outputs = record.get("outputs", {})
        metadata = record.get("metadata")
        if (
            type(inputs) is dict
            and type(outputs) is dict
            and (metadata is None or type(metadata) is dict)
            and ((type(given) is str and given) or given is None)
        ):
            if TURNS in inputs or TURNS in outputs:
                _check_conversation(inputs, outputs, position, file)
            return Example(
                id=given or example_id(inputs, outputs),
                inputs=inputs,
                outputs=outputs,
                metadata={} if metadata is None else metadata,
                row=position.row,
            )
    if not isinstance(record, dict):
        raise position.error(
            file,
            f"row is not an object, got {describe_json(record)}",
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
    _check_conversation(inputs, outputs, position, file)
    return Example(
        id=_row_id(record.get("id"), position, file) or example_id(inputs, outputs),
        inputs=inputs,
        outputs=outputs,
        metadata=metadata,
        row=position.row,
    )


def _check_conversation(
    inputs: dict[str, Any], outputs: dict[str, Any], position: Position, file: Path
) -> None:
    """A conversation row (``inputs.turns``) whose shape a run could not drive."""
    fault = shape_fault(inputs, outputs)
    if fault is not None:
        raise position.error(file, fault.problem, fault.fix)


def _object_field(
    record: dict[str, Any], key: str, position: Position, file: Path, *, optional: bool = True
) -> dict[str, Any]:
    """``record[key]`` as a dict; a missing or null optional part is empty."""
    value = record.get(key)
    if value is None and optional:
        return {}
    if not isinstance(value, dict):
        raise position.error(
            file,
            f"'{key}' must be an object, got {describe_json(value)}",
            f'write "{key}": {{"field": value, ...}}',
        )
    return value


def _row_id(value: Any, position: Position, file: Path) -> str | None:
    """A given id as a string (``7`` and ``"7"`` are the same id), or ``None`` if absent."""
    if value is None:
        return None
    if isinstance(value, str) and value:
        return value
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    raise position.error(
        file,
        f"'id' must be a non-empty string or an integer, got {describe_json(value)}",
        "or leave 'id' out to use a content hash",
    )


# --- shards: a deterministic split of a dataset by example id ------------------------------


def shard_of(example_id: str, count: int) -> int:
    """The shard (1 to ``count``) an example belongs to: from the SHA-256 of its id, so
    the split is the same on every machine, run and Python version."""
    digest = hashlib.sha256(example_id.encode("utf-8", "surrogatepass")).hexdigest()
    return int(digest[:16], 16) % count + 1


def check_shard(shard: tuple[int, int]) -> tuple[int, int]:
    """``(i, N)`` when 1 <= i <= N, else a ValueError saying what is wrong."""
    try:
        index, count = shard
    except (TypeError, ValueError):
        raise ValueError(f"a shard is (i, N), got {shard!r}") from None
    if type(index) is not int or type(count) is not int:
        raise ValueError(f"a shard is two whole numbers (i, N), got {shard!r}")
    if count < 1 or not 1 <= index <= count:
        raise ValueError(f"shard {index}/{count} does not exist: i must be 1 to N, N at least 1")
    return index, count


def parse_shard(text: str) -> tuple[int, int]:
    """``"i/N"`` as ``(i, N)``; a ValueError saying what is wrong."""
    index, sep, count = (part.strip() for part in text.strip().partition("/"))
    if not sep or not all(p.isascii() and p.isdigit() for p in (index, count)):
        raise ValueError(f"--shard takes i/N (such as 2/4), got {text!r}")
    return check_shard((int(index), int(count)))


def shard_examples(examples: Sequence[Example], shard: tuple[int, int]) -> list[Example]:
    """The examples of shard ``(i, N)``, in the dataset's order."""
    index, count = shard
    return [e for e in examples if shard_of(e.id, count) == index]
