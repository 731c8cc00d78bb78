"""Results in the store: encoding, group commits, and reading them back.

A result is encoded to JSON as soon as it is handed over (so a value JSON cannot hold fails
at once, for the caller to record as the target's error) and written with the others that
finished in the same event-loop turn, in one transaction: :class:`ResultWriter`. Reading
streams the rows (:func:`iter_results`), or only the columns an experiment's figures read
(:func:`figure_rows`, which ``results.figures`` sums up).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import functools
import json
import json.encoder
import math
import sqlite3
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from json.encoder import encode_basestring
from pathlib import Path
from typing import Any, overload

from agenteval_cli.core.records import INTERRUPTED, OK, Example, Result, Score, Trace, Turn
from agenteval_cli.core.redact import Secrets, redact
from agenteval_cli.core.safe_text import exception_text, storable
from agenteval_cli.store.checkpoints import AUTOCHECKPOINT_PAGES, Checkpointer
from agenteval_cli.store.tx import is_storage_failure, write_transaction


def now() -> str:
    """UTC now, ISO 8601 to the millisecond."""
    return datetime.fromtimestamp(time.time(), UTC).isoformat(timespec="milliseconds")


def json_default(value: Any) -> Any:
    """A JSON-able stand-in for ``value``: its fields, its items, else its ``repr``; a
    placeholder naming its type when even ``repr`` raises."""
    try:
        if dataclasses.is_dataclass(value) and not isinstance(value, type):
            return dataclasses.asdict(value)
        if hasattr(value, "model_dump"):
            return value.model_dump(mode="json")
        if isinstance(value, set | frozenset | tuple):
            return list(value)
        if isinstance(value, Path):
            return str(value)
    except Exception:  # its repr is the next best thing
        pass
    try:
        text = repr(value)
    except Exception as exc:
        return f"<{type(value).__name__} object: repr() raised {type(exc).__name__}>"
    return text if isinstance(text, str) else f"<{type(value).__name__} object>"


_ENCODER = json.JSONEncoder(default=json_default, ensure_ascii=False, separators=(",", ":"))


def dumps(value: Any) -> str:
    """JSON for the store: anything not JSON-native is converted, never an exception."""
    return _ENCODER.encode(value)


Dumps = Callable[[Any], str]


class Texts:
    """What the results encoded together (a group commit's, :class:`ResultWriter`) share:
    one JSON encoder for all their texts, where :func:`dumps` builds one per value (most of
    the time of a small value's), and the time they are stamped as finished with."""

    def __init__(self) -> None:
        self.finished_at = now()
        self._encoder = _one_encoder()

    def json(self, value: Any) -> str:
        """``value``'s text as the store keeps it (:func:`store_json`)."""
        encoder = self._encoder
        if encoder is not None:
            try:
                return "".join(encoder(value, 0))
            except BaseException as exc:
                self._encoder = _one_encoder()  # its circular-reference marks may be left set
                if not isinstance(exc, ValueError):
                    raise
                # NaN or ±Infinity, which it refuses (a circular value raises again below)
        return store_json(value)


def store_json(value: Any) -> str:
    """``value``'s text as the store keeps it: :func:`dumps`'s, NaN and ±Infinity null."""
    return _strict(dumps(value))


def _one_encoder() -> Callable[[Any, int], Any] | None:
    """json's C encoder as :data:`_ENCODER` builds it for each value (same options, a
    fresh set of circular-reference marks), but refusing NaN and ±Infinity, kept to encode
    many; None without it."""
    make = getattr(json.encoder, "c_make_encoder", None)  # typeshed omits it
    if make is None:
        return None
    marks: dict[int, Any] = {}
    encoder: Callable[[Any, int], Any] = make(
        marks, json_default, encode_basestring, None, ":", ",", False, False, False
    )
    return encoder


RESULT_COLUMNS = (
    "experiment_id, example_id, repetition, inputs_json, reference_json, outputs_json,"
    " trace_json, error, latency_s, finished_at, attempts, cached, scores_json, status,"
    " interrupt, turns_json, blame_json"
)
# ``error`` is bound as '' for none (an error message is never empty): binding None costs
# sqlite3 an adapter lookup per row, '' does not.
INSERT_RESULT = (
    f"INSERT INTO results ({RESULT_COLUMNS}) VALUES (?,?,?,?,?,?,?,NULLIF(?, ''),?,?,?,?,?,?,?,?,?)"
)
# What a store from before results had a status, or turns, reads them as: none was
# interrupted, none was a conversation.
OLD_ROWS = {
    "status": "CASE WHEN error IS NULL THEN 'ok' ELSE 'error' END",
    "interrupt": "NULL",
    "turns_json": "NULL",
    "blame_json": "NULL",
}


def status_columns(db: sqlite3.Connection, *names: str) -> str:
    """``names`` (``status``, ``interrupt``, ``turns_json``) as a SELECT's expressions: the
    columns, or on a store read as it is from before they existed, what its rows mean (no
    interrupt, no conversation)."""
    present = {row[1] for row in db.execute("PRAGMA table_info(results)")}
    return ", ".join(n if n in present else f"{OLD_ROWS[n]} AS {n}" for n in names)


INSERT_CACHE = (
    "INSERT OR REPLACE INTO cache (key, target_path, outputs_json, trace_json, latency_s,"
    " created_at, fingerprint_json, turns_json) VALUES (?,?,?,?,?,?,?,?)"
)
DELETE_WHERE = "experiment_id = ? AND example_id = ? AND repetition = ?"


@dataclass
class StoredResult:
    """A result read back with the example it answered."""

    inputs: dict[str, Any]
    reference_outputs: dict[str, Any]
    result: Result


@dataclass(slots=True)
class EncodedResult:
    """One result as the rows it becomes."""

    row: tuple[Any, ...]  # the results columns of INSERT_RESULT
    cache: tuple[Any, ...] | None = None
    replace: bool = False


def _null(_constant: str) -> None:
    return None


@overload
def _strict(text: str) -> str: ...
@overload
def _strict(text: None) -> None: ...
@overload
def _strict(text: str | None) -> str | None: ...
def _strict(text: str | None) -> str | None:
    """``text``, JSON the store's encoder wrote, with NaN and ±Infinity as null.

    The encoder writes them bare; most texts hold neither word, and are returned as they
    are. One that does (perhaps only inside a string) is decoded and written again, which
    gives the same text but for those values."""
    if text is None or ("NaN" not in text and "Infinity" not in text):
        return text
    return dumps(json.loads(text, parse_constant=_null))


def encode(
    experiment_id: str,
    example: Example,
    result: Result,
    *,
    replace: bool = False,
    cache_key: str | None = None,
    target_path: str = "",
    fingerprint_json: str | None = None,
    texts: Texts | None = None,
) -> EncodedResult:
    """Every JSON column of the result; raises what the encoder raises for bad outputs.
    A lone surrogate in any text (which UTF-8, so SQLite, cannot take) becomes U+FFFD; NaN
    and ±Infinity, which strict JSON parsers (SQLite's ``json_extract`` among them) refuse,
    become null. Known secrets are redacted when the rows are written (:func:`write`).
    ``texts``: the encoder and time of the results written with it (else its own)."""
    texts = texts or Texts()
    js = texts.json
    trace_json = storable(_trace_json(result.trace, js))
    outputs_json = None if result.outputs is None else storable(js(result.outputs))
    inputs_json = storable(js(example.inputs))
    reference_json = storable(js(example.outputs))
    scores_json = _scores_json(result.scores, js)
    turns_json = _turns_json(result.turns, js)
    finished = texts.finished_at
    row = (
        experiment_id,
        result.example_id,
        result.repetition,
        inputs_json,
        reference_json,
        outputs_json,
        trace_json,
        storable(result.error) if result.error else "",
        result.latency_s,
        finished,
        result.attempts,
        1 if result.cached else 0,
        None if scores_json is None else storable(scores_json),
        result.status,
        None if result.interrupt is None else storable(result.interrupt),
        turns_json,
        None if result.blame is None else storable(_blame_json(result.blame, js)),
    )
    cache = None
    if cache_key is not None and outputs_json is not None and _answered(result):
        cache = (
            cache_key,
            target_path,
            outputs_json,
            trace_json,
            result.latency_s,
            finished,
            fingerprint_json,
            _turns_json(result.turns, js, scores=False),  # scored again when it is served
        )
    return EncodedResult(row, cache, replace)


# Where a target's text is in the rows (positions in INSERT_RESULT's and INSERT_CACHE's
# columns): the example, the answer, the trace, the error, the score comments, the interrupt,
# the turns and the blame; JSON texts, but for the error and the interrupt, which are plain.
_RESULT_JSON = (3, 4, 5, 6, 12, 15, 16)
_RESULT_TEXT = (7, 14)
_CACHE_JSON = {2: 5, 3: 6, 7: None}  # cache column -> the result column of the same text
_RESULT_COLUMNS = _RESULT_JSON + _RESULT_TEXT


def without_secrets(batch: Sequence[EncodedResult]) -> list[EncodedResult]:
    """``batch`` with every known secret redacted from each text a target's call or its
    example put in it (:mod:`agenteval_cli.core.redact`): a target that echoes its key in its
    answer, its error, a message or a tool's output leaves it in no column, its cache
    entry's included, for store files travel. The secrets are looked up once a batch."""
    return _cleaned(batch)[0]


def _cleaned(batch: Sequence[EncodedResult]) -> tuple[list[EncodedResult], int]:
    """:func:`without_secrets`, and the length of the texts searched (what is written)."""
    secrets = Secrets.now()
    texts = "\n".join(_texts(batch))
    if not secrets.may_hold(texts):  # the common case: one search a batch
        return list(batch), len(texts)
    return [_redacted(item, secrets) for item in batch], len(texts)


def _texts(batch: Sequence[EncodedResult]) -> list[str]:
    """Every text of ``batch`` a secret could be in (a result's turns without their scores
    are its cache entry's own text)."""
    columns = _RESULT_COLUMNS
    texts = [text for item in batch for i in columns if (text := item.row[i])]
    texts += [item.cache[7] for item in batch if item.cache is not None and item.cache[7]]
    return texts


def _redacted(item: EncodedResult, secrets: Secrets) -> EncodedResult:
    if not secrets.may_hold("\n".join(_texts([item]))):  # one search, no copy
        return item
    row = list(item.row)
    for i in _RESULT_JSON:
        if row[i]:
            row[i] = secrets.json(row[i])
    for i in _RESULT_TEXT:
        if row[i]:
            row[i] = secrets.text(row[i])
    cache = item.cache
    if cache is not None:
        entry = list(cache)
        for i, same in _CACHE_JSON.items():
            if same is not None and cache[i] is item.row[same]:
                entry[i] = row[same]  # the result's own text, redacted once
            elif cache[i]:
                entry[i] = secrets.json(cache[i])
        cache = tuple(entry)
    return EncodedResult(tuple(row), cache, item.replace)


def _answered(result: Result) -> bool:
    """Whether a result may be cached: it answered (no error, no interrupt waiting), and a
    conversation's every turn did (a turn stopped at an interrupt was resumed after it)."""
    if result.status != OK:
        return False
    turns = result.turns
    return not turns or (turns[-1].status == OK and all(t.error is None for t in turns))


def _turns_json(
    turns: list[Turn] | None, js: Dumps = store_json, *, scores: bool = True
) -> str | None:
    """``[turn.to_dict(), ...]`` as the store keeps it (None for a single-turn result);
    ``scores=False`` leaves the scores out."""
    if turns is None:
        return None
    return storable(js([_stored_turn(turn, scores) for turn in turns]))


def _stored_turn(turn: Turn, scores: bool) -> dict[str, Any]:
    data = turn.to_dict()
    data["trace"]["error"] = turn.error
    if not scores:
        data["scores"] = []
    return data


def turns_from_json(text: str | None) -> list[Turn] | None:
    """The turns :func:`_turns_json` wrote, or None (a single-turn result)."""
    return None if text is None else [Turn.from_dict(each) for each in json.loads(text)]


def unstorable(result: Result, exc: BaseException) -> Result:
    """``result`` made its example's error, for outputs (or a trace) that :func:`encode`
    could not write: nothing of them is kept."""

    result.outputs, result.scores, result.turns = None, [], None
    result.trace = Trace(latency_s=result.latency_s)
    result.error = result.trace.error = (
        f"target returned outputs that cannot be stored ({exception_text(exc)}); "
        "return plain JSON values"
    )
    return result


def as_stored(value: Any) -> Any:
    """``value`` as the store keeps it: its JSON, decoded (an object the encoder writes by
    its fields or ``repr`` becomes that); raises what :func:`encode` would."""
    return json.loads(dumps(value))


def _scores_json(scores: list[Score], js: Dumps = store_json) -> str | None:
    """``[[key, score, comment], ...]``, a repeated key's last score kept; None for none."""
    if not scores:
        return None
    if len(scores) == 1:
        only = scores[0]
        return _one_score_json(only) or js([[only.key, only.score, only.comment]])
    last = {s.key: [s.key, s.score, s.comment] for s in scores}
    return js(list(last.values()))


# The JSON of the numbers a run's scores take again and again (2/3, 0.5): a float's shortest
# text is long to work out, and the encoder works it out anew for each.
_NUMBERS: dict[float, str] = {}


def _one_score_json(score: Score) -> str | None:
    """``[[key, score, comment]]`` as the encoder writes it, for the plain score (a text
    key and comment, a finite float, a bool or null); None for any other."""
    key, number, comment = score.key, score.score, score.comment
    if type(key) is not str or (comment is not None and type(comment) is not str):
        return None
    if type(number) is float:
        text = _NUMBERS.get(number) if number else None  # 0.0 and -0.0 are one key
        if text is None:
            if not math.isfinite(number):
                return None
            text = float.__repr__(number)
            if len(_NUMBERS) >= 256:
                _NUMBERS.clear()
            _NUMBERS[number] = text
    elif number is None or type(number) is bool:
        text = "null" if number is None else "true" if number else "false"
    else:
        return None
    said = "null" if comment is None else encode_basestring(comment)
    return f"[[{encode_basestring(key)},{text},{said}]]"


# The texts of recent blames: many results are blamed alike (every failed request of an
# untraced target, say), and a blame's text, a long reason among them, is encoded once.
_BLAME_TEXTS: dict[tuple[Any, ...], str] = {}


def _blame_json(blame: dict[str, Any], js: Dumps) -> str:
    """``js(blame)``, kept for the next result blamed alike."""
    try:
        key = tuple(blame.items())
        text = _BLAME_TEXTS.get(key)
    except TypeError:  # a value that cannot be a key
        return js(blame)
    if text is None:
        text = js(blame)
        if len(_BLAME_TEXTS) >= 256:
            _BLAME_TEXTS.clear()
        _BLAME_TEXTS[key] = text
    return text


def _scores(text: str | None) -> list[Score]:
    """The scores ``_scores_json`` wrote, ordered by key."""
    if text is None:
        return []
    found = [Score(key, score, comment) for key, score, comment in json.loads(text)]
    if len(found) > 1:
        found.sort(key=lambda score: score.key)
    return found


# The trace of a call that made no LangChain run (a plain function's). Its latency and
# error are the result's own columns, restored from them on reading (trace_from_row).
_EMPTY_TRACE = (
    '{"agent_path":[],"handoffs":[],"tool_calls":[],"model_calls":[],"messages":[],"tokens":{}}'
)


def _trace_json(trace: Trace, js: Dumps = store_json) -> str:
    """``js(trace.to_dict())``; the common trace that recorded nothing needs no encoder (its
    text holds no number)."""
    if trace.agent_path or trace.handoffs or trace.tool_calls or trace.model_calls:
        return js(trace.to_dict())
    if trace.messages:
        return js(trace.to_dict())
    if trace.untraced is not None:  # nothing recorded, and why
        return _untraced_json(trace.untraced)
    return _EMPTY_TRACE


@functools.lru_cache(maxsize=64)
def _untraced_json(why: str) -> str:
    """The text of a trace that recorded nothing, for the few reasons there are."""
    return f'{_EMPTY_TRACE[:-1]},"untraced":{encode_basestring(why)}}}'


def trace_from_row(trace_json: str | None, latency_s: float | None, error: str | None) -> Trace:
    """The stored trace, with the latency and error of its result's columns."""
    trace = Trace.from_dict(json.loads(trace_json) if trace_json else None)
    trace.latency_s = latency_s or 0.0
    trace.error = error
    return trace


def write(db: sqlite3.Connection, batch: Sequence[EncodedResult]) -> int:
    """Write ``batch`` in one transaction. When it fails (say one pair is already stored),
    nothing of it is kept and each result is tried again in a transaction of its own, so the
    others land and the first failure is raised. A failure of the file or disk (read-only,
    full, locked, damaged) is raised at once: each retry would fail, or wait, alike.

    Only an ordinary exception is retried: Ctrl-C, ``SystemExit`` or a cancellation is
    raised as it comes, the results already committed kept. No known secret is written
    (:func:`without_secrets`). Returns the length of the texts written."""
    batch, size = _cleaned(batch)
    try:
        _write(db, batch)
    except Exception as exc:
        if len(batch) == 1 or is_storage_failure(exc):
            raise
        first: Exception | None = None
        for one in batch:
            try:
                _write(db, [one])
            except Exception as exc:
                first = first or exc
        if first is not None:
            raise first from None
    return size


def _write(db: sqlite3.Connection, batch: Sequence[EncodedResult]) -> None:
    with write_transaction(db):
        for item in batch:
            if item.replace:
                db.execute(f"DELETE FROM results WHERE {DELETE_WHERE}", item.row[:3])
        _insert(db, INSERT_RESULT, [item.row for item in batch])  # ids: in commit order
        cached = [item.cache for item in batch if item.cache is not None]
        if cached:
            _insert(db, INSERT_CACHE, cached)


# The most values one statement may bind: 32,766 since SQLite 3.32, 999 before; and at
# most 256 rows a statement (SQLite before 3.8.8 took no more than 500 rows of VALUES).
MAX_VALUES = 32766 if sqlite3.sqlite_version_info >= (3, 32) else 999


def _insert(db: sqlite3.Connection, insert: str, rows: Sequence[tuple[Any, ...]]) -> None:
    """``rows`` inserted by ``insert`` (one row's ``INSERT ... VALUES (...)``) in order, by
    statements of many rows each: one step of SQLite's for many rows, and Python's sqlite3
    binds them all in one call. The statements hold a power of two of rows, so a few texts
    serve every batch."""
    per = max(1, min(256, MAX_VALUES // len(rows[0]))) if rows else 1
    start, count = 0, len(rows)
    while start < count:
        size = min(per, 1 << ((count - start).bit_length() - 1))
        chunk = rows[start : start + size]
        db.execute(_many_rows(insert, size), [value for row in chunk for value in row])
        start += size


@functools.lru_cache(maxsize=64)
def _many_rows(insert: str, size: int) -> str:
    """``insert`` (``... VALUES (...)``) with its values repeated for ``size`` rows."""
    head, _, values = insert.partition(" VALUES ")
    return f"{head} VALUES {','.join([values] * size)}"


class ResultWriter:
    """Group commits for a run: results are written together with the others that finished
    in the same event-loop turn, and never later than ``max_delay_s`` after the first of
    them, nor more than ``max_rows`` at once. A result the writer accepted is committed by
    :meth:`flush` (which the run calls when it ends, is stopped, or fails)."""

    def __init__(
        self,
        db: sqlite3.Connection,
        *,
        max_rows: int = 500,
        max_delay_s: float = 0.05,
        checkpoints: Checkpointer | None = None,
    ) -> None:
        """``checkpoints``: what copies the log into the store's file off this thread until
        :meth:`close` (:mod:`agenteval_cli.store.checkpoints`); else SQLite copies it as a
        commit returns."""
        self.db = db
        self.max_rows = max_rows
        self.max_delay_s = max_delay_s
        self._checkpoints = checkpoints
        if checkpoints is not None:
            db.execute("PRAGMA wal_autocheckpoint=0")
        self._pending: list[EncodedResult] = []
        self._texts: Texts | None = None  # the pending results' encoder and time
        self._first = 0.0
        self._scheduled: asyncio.Handle | None = None
        self._failure: BaseException | None = None

    def texts(self) -> Texts:
        """What the next result is encoded with (:func:`encode`'s ``texts``): the encoder
        and time of those it will be committed with, so a batch's rows carry the time the
        first of them finished."""
        if self._texts is None or not self._pending:
            self._texts = Texts()
        return self._texts

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
            size = write(self.db, batch)
            if self._checkpoints is not None:
                self._checkpoints.wrote(size)
        if self._failure is not None:
            failure, self._failure = self._failure, None
            raise failure

    def close(self) -> None:
        """Commit every pending result; later commits copy the log as they return again
        (a copy under way goes on: the store waits for it as it closes)."""
        try:
            self.flush()
        finally:
            if self._checkpoints is not None:
                self._checkpoints = None
                with contextlib.suppress(sqlite3.Error):  # the file failed: flush() said so
                    self.db.execute(f"PRAGMA wal_autocheckpoint={AUTOCHECKPOINT_PAGES}")


# --- reading -----------------------------------------------------------------------------


def iter_results(
    db: sqlite3.Connection, experiment_id: str, *, reference_holding: str | None = None
) -> Iterator[StoredResult]:
    """Results of an experiment in insertion order, with their inputs and references; the
    rows are read as they are consumed. ``reference_holding``: only the rows whose
    reference JSON text holds it, filtered before any row is decoded."""
    where, params = "experiment_id = ?", [experiment_id]
    if reference_holding is not None:
        where += " AND instr(reference_json, ?) > 0"
        params.append(reference_holding)
    rows = db.execute(
        "SELECT example_id, repetition, inputs_json, reference_json, outputs_json, trace_json,"
        " error, latency_s, attempts, cached, scores_json,"
        f" {status_columns(db, 'interrupt', 'turns_json', 'blame_json')}"
        f" FROM results WHERE {where} ORDER BY id",
        params,
    )
    for example_id, rep, inputs, reference, outputs, trace, error, latency, *rest in rows:
        attempts, cached, scores, interrupt, turns, blamed = rest
        result = Result(
            example_id=example_id,
            repetition=rep,
            outputs=None if outputs is None else json.loads(outputs),
            trace=trace_from_row(trace, latency, error),
            error=error,
            latency_s=latency or 0.0,
            attempts=attempts,
            cached=bool(cached),
            scores=_scores(scores),
            interrupt=interrupt,
            turns=turns_from_json(turns),
            blame=None if blamed is None else json.loads(blamed),
        )
        yield StoredResult(json.loads(inputs), json.loads(reference), result)


def stored_blames(db: sqlite3.Connection, experiment_id: str) -> Iterator[dict[str, Any]]:
    """The blame of each result of an experiment that failed a check, in insertion order
    (none from a store that predates it)."""
    if status_columns(db, "blame_json") != "blame_json":
        return
    rows = db.execute(
        "SELECT blame_json FROM results WHERE experiment_id = ? AND blame_json IS NOT NULL"
        " ORDER BY id",
        (experiment_id,),
    )
    for (text,) in rows:
        yield json.loads(text)


@dataclass(frozen=True)
class FigureRow:
    """What an experiment's figures read of one result (``results.figures``): its row's
    columns, no Result built."""

    example_id: str
    repetition: int
    error: str | None
    latency_s: float
    cached: bool
    scores: Sequence[tuple[str, Any]]
    model_calls: Sequence[dict[str, Any]]  # each call as the trace keeps it
    interrupted: bool
    conversation: bool


def figure_rows(db: sqlite3.Connection, experiment_id: str) -> Iterator[FigureRow]:
    """Each result of an experiment as the figures read it, from only the columns they
    need; a scores text repeated across rows is decoded once."""
    decoded: dict[str, list[tuple[str, Any]]] = {}
    # a conversation's row has turns (an old store's none): pass^k counts conversations
    turns = status_columns(db, "turns_json")
    conversation = "turns_json IS NOT NULL" if turns == "turns_json" else "0"
    rows = db.execute(
        "SELECT example_id, repetition, error, latency_s, cached, scores_json,"
        " CASE WHEN instr(trace_json, '\"model_calls\":[]') THEN NULL"
        f" ELSE json_extract(trace_json, '$.model_calls') END, {status_columns(db, 'status')},"
        f" {conversation} FROM results WHERE experiment_id = ? ORDER BY id",
        (experiment_id,),
    )
    for example_id, rep, error, latency, cached, scores_json, model_calls, status, talk in rows:
        scores = decoded.get(scores_json) if scores_json is not None else ()
        if scores is None:
            if len(decoded) >= 4096:  # bounded: distinct comments make distinct texts
                decoded.clear()
            scores = decoded[scores_json] = [(k, score) for k, score, _ in json.loads(scores_json)]
        yield FigureRow(
            example_id,
            rep,
            error,
            latency or 0.0,
            bool(cached),
            scores,
            json.loads(model_calls) if model_calls else (),
            status == INTERRUPTED,
            bool(talk),
        )


def strict_json(value: Any, **options: Any) -> str:
    """JSON every parser accepts: NaN and ±Infinity, which ``json`` writes by default and
    strict parsers (JavaScript's ``JSON.parse``, ``jq``, Go, Rust) refuse, become null;
    known secrets are redacted. Values JSON cannot hold are converted as the store does."""
    plain = json.loads(redact(dumps(value)), parse_constant=_null)
    return json.dumps(plain, ensure_ascii=False, allow_nan=False, **options)
