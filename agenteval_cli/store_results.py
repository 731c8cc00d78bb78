"""Results in the store: encoding, group commits, and reading them back.

A result is encoded to JSON as soon as it is handed over (so a value JSON cannot hold fails
at once, for the caller to record as the target's error) and written with the others that
finished in the same event-loop turn, in one transaction: :class:`ResultWriter`. Reading
streams the rows (:func:`iter_results`), or only what the metrics need (:func:`light_results`).
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import math
import sqlite3
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from json.encoder import encode_basestring

try:
    from _json import make_encoder as c_make_encoder
except ImportError:  # an interpreter without the C accelerator
    c_make_encoder = None
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from agenteval_cli.records import Example, ModelCall, Result, Score, Trace

if TYPE_CHECKING:
    from agenteval_cli.store import StoredResult

T = TypeVar("T")


_stamp: list[Any] = [-1, ""]  # the last millisecond formatted, and its text


def now() -> str:
    """UTC now, ISO 8601 to the millisecond (formatted once per millisecond)."""
    seconds = time.time()
    millisecond = int(seconds * 1000)
    if millisecond != _stamp[0]:
        moment = datetime.fromtimestamp(millisecond // 1000, UTC)
        moment = moment.replace(microsecond=millisecond % 1000 * 1000)
        _stamp[0], _stamp[1] = millisecond, moment.isoformat(timespec="milliseconds")
    return _stamp[1]


def _default(value: Any) -> Any:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.asdict(value)
    if hasattr(value, "model_dump"):
        return value.model_dump(mode="json")
    if isinstance(value, set | frozenset | tuple):
        return list(value)
    if isinstance(value, Path):
        return str(value)
    return repr(value)


_ENCODER = json.JSONEncoder(default=_default, ensure_ascii=False, separators=(",", ":"))
_local = threading.local()  # each thread's one-shot C encoder (it keeps state while encoding)


def _c_encoder() -> Any:
    if c_make_encoder is None:
        return None
    markers: dict[int, Any] = {}  # containers being encoded, to refuse circular references
    return c_make_encoder(markers, _default, encode_basestring, None, ":", ",", False, False, True)


def dumps(value: Any) -> str:
    """JSON for the store: anything not JSON-native is converted, never an exception.

    The same text as ``json.dumps(value, default=..., ensure_ascii=False,
    separators=(",", ":"))``, without building an encoder per call."""
    try:
        encoder = _local.encoder
    except AttributeError:
        encoder = _local.encoder = _c_encoder()
    if encoder is None:
        return _ENCODER.encode(value)
    try:
        return "".join(encoder(value, 0))
    except BaseException:
        _local.encoder = _c_encoder()  # its circular-reference markers may be left set
        raise


RESULT_COLUMNS = (
    "id, experiment_id, example_id, repetition, inputs_json, reference_json, outputs_json,"
    " trace_json, error, latency_s, finished_at, attempts, cached"
)
INSERT_RESULT = f"INSERT INTO results ({RESULT_COLUMNS}) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)"
INSERT_SCORE = (
    "INSERT OR REPLACE INTO scores (result_id, key, score, is_bool, comment) VALUES (?,?,?,?,?)"
)
INSERT_CACHE = (
    "INSERT OR REPLACE INTO cache (key, target_path, outputs_json, trace_json, latency_s,"
    " created_at) VALUES (?,?,?,?,?,?)"
)
DELETE_WHERE = "experiment_id = ? AND example_id = ? AND repetition = ?"


@dataclass(slots=True)
class EncodedResult:
    """One result as the rows it becomes; ``row`` lacks only the result id."""

    row: tuple[Any, ...]  # the results columns after ``id``
    scores: list[tuple[str, Any, bool, str | None]]
    cache: tuple[Any, ...] | None = None
    replace: bool = False


def encode(
    experiment_id: str,
    example: Example,
    result: Result,
    *,
    replace: bool = False,
    cache_key: str | None = None,
    target_path: str = "",
    memo: dict[int, tuple[Example, str, str]] | None = None,
) -> EncodedResult:
    """Every JSON column of the result; raises what the encoder raises for bad outputs.

    ``memo`` keeps the example's JSON for the other targets and repetitions of a run."""
    trace_json = _trace_json(result.trace)
    outputs_json = None if result.outputs is None else dumps(result.outputs)
    inputs_json, reference_json = _example_json(example, memo)
    finished = now()
    row = (
        experiment_id,
        result.example_id,
        result.repetition,
        inputs_json,
        reference_json,
        outputs_json,
        trace_json,
        result.error,
        result.latency_s,
        finished,
        result.attempts,
        result.cached,
    )
    scores = [(s.key, s.score, isinstance(s.score, bool), s.comment) for s in result.scores]
    cache = None
    if cache_key is not None and result.error is None and outputs_json is not None:
        cache = (cache_key, target_path, outputs_json, trace_json, result.latency_s, finished)
    return EncodedResult(row, scores, cache, replace)


_EMPTY_TRACE = '{"agent_path":[],"handoffs":[],"tool_calls":[],"model_calls":[],"messages":[],'


def _trace_json(trace: Trace) -> str:
    """``dumps(trace.to_dict())``, spelled out for the trace of a call that made no
    LangChain run (a plain function's): the common case needs no encoder."""
    if trace.agent_path or trace.handoffs or trace.tool_calls or trace.model_calls:
        return dumps(trace.to_dict())
    if trace.messages:
        return dumps(trace.to_dict())
    latency = trace.latency_s
    latency_json = repr(latency) if type(latency) is float and math.isfinite(latency) else None
    return (
        f'{_EMPTY_TRACE}"latency_s":{latency_json or dumps(latency)},'
        f'"error":{"null" if trace.error is None else dumps(trace.error)},"tokens":{{}}}}'
    )


MEMO_SIZE = 256  # examples whose JSON a writer keeps (the results in flight share few)


def _example_json(
    example: Example, memo: dict[int, tuple[Example, str, str]] | None
) -> tuple[str, str]:
    if memo is None:
        return dumps(example.inputs), dumps(example.outputs)
    found = memo.get(id(example))  # the memo holds the example, so its id is not reused
    if found is None or found[0] is not example:
        if len(memo) >= MEMO_SIZE:
            memo.clear()
        found = memo[id(example)] = (example, dumps(example.inputs), dumps(example.outputs))
    return found[1], found[2]


def write(db: sqlite3.Connection, batch: Sequence[EncodedResult]) -> None:
    """Write ``batch`` in one transaction. When it fails (say one pair is already stored),
    nothing of it is kept and each result is tried again in a transaction of its own, so the
    others land and the first failure is raised."""
    try:
        _write(db, batch)
    except BaseException:
        if len(batch) == 1:
            raise
        first: BaseException | None = None
        for one in batch:
            try:
                _write(db, [one])
            except Exception as exc:
                first = first or exc
        if first is not None:
            raise first from None


def _write(db: sqlite3.Connection, batch: Sequence[EncodedResult]) -> None:
    db.execute("BEGIN IMMEDIATE")
    try:
        for item in batch:
            if item.replace:
                params = item.row[:3]
                db.execute(
                    "DELETE FROM scores WHERE result_id IN"
                    f" (SELECT id FROM results WHERE {DELETE_WHERE})",
                    params,
                )
                db.execute(f"DELETE FROM results WHERE {DELETE_WHERE}", params)
        # The write lock is held from BEGIN IMMEDIATE: nobody else can take these ids.
        (last,) = db.execute("SELECT COALESCE(MAX(id), 0) FROM results").fetchone()
        db.executemany(
            INSERT_RESULT, [(last + i, *item.row) for i, item in enumerate(batch, start=1)]
        )
        scores = [
            (last + i, *score) for i, item in enumerate(batch, start=1) for score in item.scores
        ]
        if scores:
            db.executemany(INSERT_SCORE, scores)
        cached = [item.cache for item in batch if item.cache is not None]
        if cached:
            db.executemany(INSERT_CACHE, cached)
        db.execute("COMMIT")
    except BaseException:
        db.execute("ROLLBACK")
        raise


class ResultWriter:
    """Group commits for a run: results are written together with the others that finished
    in the same event-loop turn, and never later than ``max_delay_s`` after the first of
    them, nor more than ``max_rows`` at once. A result the writer accepted is committed by
    :meth:`flush` (which the run calls when it ends, is stopped, or fails)."""

    def __init__(
        self, db: sqlite3.Connection, *, max_rows: int = 500, max_delay_s: float = 0.05
    ) -> None:
        self.db = db
        self.max_rows = max_rows
        self.max_delay_s = max_delay_s
        self._pending: list[EncodedResult] = []
        self._first = 0.0
        self._scheduled: asyncio.Handle | None = None
        self._failure: BaseException | None = None
        self.memo: dict[int, tuple[Example, str, str]] = {}  # for encode(memo=...)

    def add(self, encoded: EncodedResult) -> None:
        if self._failure is not None:  # a deferred commit failed: surface it to the run
            failure, self._failure = self._failure, None
            raise failure
        pending = self._pending
        pending.append(encoded)
        if len(pending) == 1:
            self._first = time.monotonic()
            self._schedule()
        elif len(pending) >= self.max_rows or time.monotonic() - self._first >= self.max_delay_s:
            self.flush()

    def _schedule(self) -> None:
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # no event loop: nothing would flush later, so write now
            self.flush()
            return
        if self._scheduled is None:
            self._scheduled = loop.call_soon(self._flush_later)

    def _flush_later(self) -> None:
        self._scheduled = None
        try:
            self.flush()
        except BaseException as exc:  # raised by the next add(), or by the final flush()
            self._failure = exc

    def flush(self) -> None:
        """Commit every pending result now."""
        if self._scheduled is not None:
            self._scheduled.cancel()
            self._scheduled = None
        batch, self._pending = self._pending, []
        if batch:
            write(self.db, batch)
        if self._failure is not None:
            failure, self._failure = self._failure, None
            raise failure


# --- reading -----------------------------------------------------------------------------


def iter_results(db: sqlite3.Connection, experiment_id: str) -> Iterator[StoredResult]:
    """Results of an experiment in insertion order, with their inputs and references; the
    rows are read as they are consumed, scores along with their result."""
    from agenteval_cli.store import StoredResult

    rows = db.execute(
        "SELECT r.id, r.example_id, r.repetition, r.inputs_json, r.reference_json,"
        " r.outputs_json, r.trace_json, r.error, r.latency_s, r.attempts, r.cached,"
        " s.key, s.score, s.is_bool, s.comment"
        " FROM results r LEFT JOIN scores s ON s.result_id = r.id"
        " WHERE r.experiment_id = ? ORDER BY r.id, s.key",
        (experiment_id,),
    )

    def build(row: tuple[Any, ...]) -> tuple[StoredResult, list[Score]]:
        _, example_id, rep, inputs, reference, outputs, trace, error, latency = row[:9]
        result = Result(
            example_id=example_id,
            repetition=rep,
            outputs=None if outputs is None else json.loads(outputs),
            trace=Trace.from_dict(json.loads(trace) if trace else None),
            error=error,
            latency_s=latency or 0.0,
            attempts=row[9],
            cached=bool(row[10]),
        )
        stored = StoredResult(json.loads(inputs), json.loads(reference), result)
        return stored, result.scores

    return _with_scores(rows, build, first_score_column=11)


def light_results(db: sqlite3.Connection, experiment_id: str) -> Iterator[Result]:
    """The experiment's results as :func:`iter_results` orders them, with what metrics
    read (scores, error, latency, the models of each call) and no outputs or messages."""
    rows = db.execute(
        "SELECT r.id, r.example_id, r.repetition, r.error, r.latency_s, r.attempts, r.cached,"
        " CASE WHEN instr(r.trace_json, '\"model_calls\":[]') THEN NULL"
        " ELSE json_extract(r.trace_json, '$.model_calls') END,"
        " s.key, s.score, s.is_bool, s.comment"
        " FROM results r LEFT JOIN scores s ON s.result_id = r.id"
        " WHERE r.experiment_id = ? ORDER BY r.id, s.key",
        (experiment_id,),
    )

    def build(row: tuple[Any, ...]) -> tuple[Result, list[Score]]:
        trace = Trace(latency_s=row[4] or 0.0, error=row[3])
        if row[7]:
            trace.model_calls = [ModelCall(**m) for m in json.loads(row[7])]
        result = Result(
            example_id=row[1],
            repetition=row[2],
            outputs=None,
            trace=trace,
            error=row[3],
            latency_s=row[4] or 0.0,
            attempts=row[5],
            cached=bool(row[6]),
        )
        return result, result.scores

    return _with_scores(rows, build, first_score_column=8)


def _with_scores(
    rows: Iterable[tuple[Any, ...]],
    build: Callable[[tuple[Any, ...]], tuple[T, list[Score]]],
    *,
    first_score_column: int,
) -> Iterator[T]:
    """Results LEFT JOINed with their scores and ordered by result id (column 0): one item
    per result, built from its first row, with every row's score appended to it."""
    current: T | None = None
    scores: list[Score] = []
    current_id = None
    for row in rows:
        if row[0] != current_id:
            if current is not None:
                yield current
            current_id = row[0]
            current, scores = build(row)
        if row[first_score_column] is not None:
            scores.append(_score(*row[first_score_column:]))
    if current is not None:
        yield current


def _score(key: str, score: Any, is_bool: int, comment: str | None) -> Score:
    return Score(key, bool(score) if is_bool and score is not None else score, comment)
