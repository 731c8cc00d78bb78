"""An in-memory LangSmith-compatible HTTP server for the tests.

It implements the REST endpoints the installed ``langsmith`` client (0.15.x) calls for
dataset push/pull, experiment upload and experiment reads, with the request and response
shapes that client sends and parses (read from its ``client.py``):

    GET  /info                                   POST /sessions   GET /sessions[/{id}]
    POST /datasets   GET /datasets[/{id}]        PATCH /sessions/{id}
    GET  /datasets/{id}/version                  POST /runs/multipart   POST /runs/batch
    GET  /datasets/{id}/versions                 POST /runs/query
    PUT  /datasets/{id}/tags                     POST /feedback   GET /feedback
    POST|PATCH /v1/platform/datasets/{id}/examples   (multipart)
    POST|PATCH /examples/bulk                    GET /examples    DELETE /examples

State is kept in memory; every request is recorded (``server.requests``); faults (a status
for the next N matching requests, optionally after the request was applied) and latency
are injectable. Anything else answers 404, so an unexpected call shows up in a test.
"""

from __future__ import annotations

import copy
import itertools
import json
import re
import threading
import time
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from email.parser import BytesParser
from email.policy import HTTP
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

TENANT_ID = "00000000-0000-4000-8000-00000000cafe"
_EPOCH = datetime(2025, 1, 1, tzinfo=UTC)


@dataclass
class Recorded:
    method: str
    path: str
    query: dict[str, list[str]]
    headers: dict[str, str]
    body: bytes
    status: int = 0


@dataclass
class Fault:
    """Answer ``status`` to the next ``times`` requests whose "METHOD path" matches ``pattern``.

    ``after_apply`` processes the request first and then fails, like a server that
    committed the write but lost the response."""

    pattern: str
    status: int
    times: int = 1
    after_apply: bool = False
    retry_after: str | None = "0"


class ApiError(Exception):
    def __init__(self, status: int, detail: str) -> None:
        super().__init__(detail)
        self.status = status
        self.detail = detail


@dataclass
class State:
    datasets: dict[str, dict[str, Any]] = field(default_factory=dict)
    # example id -> versions, oldest first: (as_of, example record or None once deleted)
    examples: dict[str, list[tuple[datetime, dict[str, Any] | None]]] = field(default_factory=dict)
    versions: dict[str, list[datetime]] = field(default_factory=dict)  # dataset id -> as_of list
    tags: dict[str, dict[str, datetime]] = field(default_factory=dict)  # dataset id -> tag -> as_of
    sessions: dict[str, dict[str, Any]] = field(default_factory=dict)
    runs: dict[str, dict[str, Any]] = field(default_factory=dict)
    feedback: dict[str, dict[str, Any]] = field(default_factory=dict)


class LangSmithStandIn:
    """Start with ``server = LangSmithStandIn().start()``; ``server.url`` is the endpoint."""

    def __init__(self, *, api_key: str = "lsv2_test_key", examples_multipart: bool = True):
        self.api_key = api_key
        self.examples_multipart = examples_multipart
        self.state = State()
        self.requests: list[Recorded] = []
        self.faults: list[Fault] = []
        self.latency_s = 0.0
        self._lock = threading.RLock()
        self._clock = itertools.count(1)
        self._httpd: ThreadingHTTPServer | None = None

    # -- lifecycle ------------------------------------------------------------------------

    def start(self) -> LangSmithStandIn:
        server = self

        class Handler(_Handler):
            stand_in = server

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        threading.Thread(target=self._httpd.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()

    @property
    def url(self) -> str:
        assert self._httpd is not None
        return f"http://127.0.0.1:{self._httpd.server_address[1]}"

    # -- test helpers ---------------------------------------------------------------------

    def inject(self, pattern: str, status: int, times: int = 1, **kw: Any) -> None:
        self.faults.append(Fault(pattern, status, times, **kw))

    def calls(self, pattern: str = "") -> list[Recorded]:
        """Recorded requests whose "METHOD path" matches ``pattern`` (a regex)."""
        return [r for r in self.requests if re.search(pattern, f"{r.method} {r.path}")]

    def dataset_by_name(self, name: str) -> dict[str, Any] | None:
        return next((d for d in self.state.datasets.values() if d["name"] == name), None)

    def current_examples(self, dataset_id: str, as_of: datetime | None = None) -> list[dict]:
        """The examples of a dataset at ``as_of`` (default: now), in creation order."""
        with self._lock:
            found = []
            for history in self.state.examples.values():
                record = _at(history, as_of)
                if record is not None and record["dataset_id"] == dataset_id:
                    found.append(copy.deepcopy(record))
            return found

    def runs_of(self, session_name: str) -> list[dict[str, Any]]:
        session = next(s for s in self.state.sessions.values() if s["name"] == session_name)
        return [r for r in self.state.runs.values() if r.get("session_id") == session["id"]]

    # -- request processing ---------------------------------------------------------------

    def now(self) -> datetime:
        """Strictly increasing timestamps, so every write is its own dataset version."""
        return _EPOCH + timedelta(milliseconds=next(self._clock))

    def handle(self, record: Recorded) -> tuple[int, Any, dict[str, str]]:
        if self.latency_s:
            time.sleep(self.latency_s)
        with self._lock:
            self.requests.append(record)
            if record.headers.get("x-api-key") != self.api_key:
                return 401, {"detail": "Invalid token"}, {}
            fault = self._take_fault(f"{record.method} {record.path}")
            if fault is not None and not fault.after_apply:
                return fault.status, {"detail": "injected fault"}, _retry_headers(fault)
            try:
                status, body = self._route(record)
            except ApiError as exc:
                status, body = exc.status, {"detail": exc.detail}
            if fault is not None:
                return fault.status, {"detail": "injected fault"}, _retry_headers(fault)
            return status, body, {}

    def _take_fault(self, line: str) -> Fault | None:
        for fault in self.faults:
            if fault.times > 0 and re.search(fault.pattern, line):
                fault.times -= 1
                return fault
        return None

    def _route(self, r: Recorded) -> tuple[int, Any]:
        m, p = r.method, r.path.rstrip("/")
        q = {k: v[-1] for k, v in r.query.items()}
        routes: list[tuple[str, str, Any]] = [
            ("GET", r"/info", lambda: self._info()),
            ("POST", r"/datasets", lambda: self._create_dataset(_json(r))),
            ("GET", r"/datasets", lambda: self._list_datasets(r.query)),
            ("GET", r"/datasets/([\w-]+)", lambda i: self._dataset(i)),
            ("GET", r"/datasets/([\w-]+)/version", lambda i: self._version(i, q)),
            ("GET", r"/datasets/([\w-]+)/versions", lambda i: self._versions(i, q)),
            ("PUT", r"/datasets/([\w-]+)/tags", lambda i: self._tag(i, _json(r))),
            (
                "POST",
                r"/v1/platform/datasets/([\w-]+)/examples",
                lambda i: self._mp_upsert(i, r, True),
            ),
            (
                "PATCH",
                r"/v1/platform/datasets/([\w-]+)/examples",
                lambda i: self._mp_upsert(i, r, False),
            ),
            ("POST", r"/examples/bulk", lambda: self._bulk_create(_json(r))),
            ("PATCH", r"/examples/bulk", lambda: self._bulk_update(_json(r))),
            ("GET", r"/examples", lambda: self._list_examples(r.query)),
            ("DELETE", r"/examples", lambda: self._delete_examples(r.query)),
            ("POST", r"/sessions", lambda: self._create_session(_json(r), q)),
            ("GET", r"/sessions", lambda: self._list_sessions(q)),
            ("GET", r"/sessions/([\w-]+)", lambda i: self._session(i)),
            ("PATCH", r"/sessions/([\w-]+)", lambda i: self._update_session(i, _json(r))),
            ("POST", r"/runs/multipart", lambda: self._runs_multipart(r)),
            ("POST", r"/runs/batch", lambda: self._runs_batch(_json(r))),
            ("POST", r"/runs/query", lambda: self._query_runs(_json(r))),
            ("POST", r"/feedback", lambda: self._create_feedback(_json(r))),
            ("GET", r"/feedback", lambda: self._list_feedback(r.query)),
        ]
        for method, pattern, fn in routes:
            match = re.fullmatch(pattern, p)
            if method == m and match:
                return fn(*match.groups())
        raise ApiError(404, f"no route for {m} {p}")

    # -- endpoints ------------------------------------------------------------------------

    def _info(self) -> tuple[int, Any]:
        return 200, {
            "version": "0.10.99",
            "instance_flags": {"dataset_examples_multipart_enabled": self.examples_multipart},
            "batch_ingest_config": {
                "use_multipart_endpoint": True,
                "scale_up_qsize_trigger": 1000,
                "scale_up_nthreads_limit": 16,
                "scale_down_nempty_trigger": 4,
                "size_limit": 100,
                "size_limit_bytes": 20971520,
            },
        }

    def _create_dataset(self, body: dict[str, Any]) -> tuple[int, Any]:
        if self.dataset_by_name(body["name"]) is not None:
            raise ApiError(409, f"Dataset {body['name']} already exists")
        now = self.now()
        dataset = {
            "id": str(uuid.uuid4()),
            "name": body["name"],
            "description": body.get("description"),
            "data_type": body.get("data_type", "kv"),
            "created_at": now.isoformat(),
            "modified_at": now.isoformat(),
            "metadata": (body.get("extra") or {}).get("metadata"),
        }
        self.state.datasets[dataset["id"]] = dataset
        self.state.versions[dataset["id"]] = []
        self.state.tags[dataset["id"]] = {}
        return 200, self._dataset_view(dataset)

    def _dataset_view(self, dataset: dict[str, Any]) -> dict[str, Any]:
        return {**dataset, "example_count": len(self.current_examples(dataset["id"]))}

    def _dataset(self, dataset_id: str) -> tuple[int, Any]:
        dataset = self.state.datasets.get(dataset_id)
        if dataset is None:
            raise ApiError(404, "Dataset not found")
        return 200, self._dataset_view(dataset)

    def _list_datasets(self, query: dict[str, list[str]]) -> tuple[int, Any]:
        found = list(self.state.datasets.values())
        if "name" in query:
            found = [d for d in found if d["name"] == query["name"][-1]]
        if "name_contains" in query:
            found = [d for d in found if query["name_contains"][-1] in d["name"]]
        if "id" in query:
            found = [d for d in found if d["id"] in query["id"]]
        return 200, [self._dataset_view(d) for d in _page(found, query)]

    def _resolve_as_of(self, dataset_id: str, as_of: str | None) -> datetime | None:
        if not as_of or as_of == "latest":
            return None
        if as_of in self.state.tags.get(dataset_id, {}):
            return self.state.tags[dataset_id][as_of]
        try:
            return datetime.fromisoformat(as_of)
        except ValueError:
            raise ApiError(404, f"no version tagged {as_of!r}") from None

    def _version(self, dataset_id: str, q: dict[str, str]) -> tuple[int, Any]:
        self._dataset(dataset_id)
        versions = self.state.versions[dataset_id]
        if q.get("tag") and q["tag"] != "latest":
            if q["tag"] not in self.state.tags[dataset_id]:
                raise ApiError(404, f"no version tagged {q['tag']!r}")
            as_of = self.state.tags[dataset_id][q["tag"]]
        elif q.get("as_of"):
            wanted = datetime.fromisoformat(q["as_of"])
            earlier = [v for v in versions if v <= wanted]
            if not earlier:
                raise ApiError(404, "no version at that time")
            as_of = earlier[-1]
        else:
            if not versions:
                raise ApiError(404, "dataset has no versions")
            as_of = versions[-1]
        return 200, {"as_of": as_of.isoformat(), "tags": self._tags_at(dataset_id, as_of)}

    def _tags_at(self, dataset_id: str, as_of: datetime) -> list[str]:
        tags = [t for t, v in self.state.tags[dataset_id].items() if v == as_of]
        if self.state.versions[dataset_id] and self.state.versions[dataset_id][-1] == as_of:
            tags.append("latest")
        return tags

    def _versions(self, dataset_id: str, q: dict[str, str]) -> tuple[int, Any]:
        self._dataset(dataset_id)
        versions = [
            {"as_of": v.isoformat(), "tags": self._tags_at(dataset_id, v)}
            for v in reversed(self.state.versions[dataset_id])
        ]
        return 200, versions[int(q.get("offset", 0)) :][: int(q.get("limit", 100))]

    def _tag(self, dataset_id: str, body: dict[str, Any]) -> tuple[int, Any]:
        self._dataset(dataset_id)
        as_of = datetime.fromisoformat(body["as_of"])
        if as_of not in self.state.versions[dataset_id]:
            raise ApiError(404, "as_of is not an exact version of this dataset")
        self.state.tags[dataset_id][body["tag"]] = as_of
        return 200, {"as_of": as_of.isoformat(), "tag": body["tag"]}

    def _write_examples(self, dataset_id: str, rows: list[dict[str, Any]], create: bool) -> Any:
        """Apply creates or updates as one new dataset version; all or nothing."""
        self._dataset(dataset_id)
        for row in rows:
            exists = _at(self.state.examples.get(row["id"], []), None) is not None
            if create and row["id"] in self.state.examples:
                raise ApiError(409, f"Example {row['id']} already exists")
            if not create and not exists:
                raise ApiError(404, f"Example {row['id']} not found")
        now = self.now()
        ids = []
        for row in rows:
            history = self.state.examples.setdefault(row["id"], [])
            before = _at(history, None) or {
                "id": row["id"],
                "dataset_id": dataset_id,
                "created_at": now.isoformat(),
                "inputs": {},
                "outputs": {},
                "metadata": {},
            }
            record = copy.deepcopy(before)
            for key in ("inputs", "outputs"):
                if row.get(key) is not None:
                    record[key] = row[key]
            metadata = row.get("metadata")
            if metadata is not None or create:
                record["metadata"] = dict(metadata or {})
            split = row.get("split")
            if split is not None or create:
                splits = [split] if isinstance(split, str) else list(split or ["base"])
                record["metadata"]["dataset_split"] = splits
            elif "dataset_split" in before.get("metadata", {}):
                record["metadata"]["dataset_split"] = before["metadata"]["dataset_split"]
            record["modified_at"] = now.isoformat()
            history.append((now, record))
            ids.append(row["id"])
        self.state.versions[dataset_id].append(now)
        self.state.datasets[dataset_id]["modified_at"] = now.isoformat()
        return {"count": len(ids), "example_ids": ids, "as_of": now.isoformat()}

    def _mp_upsert(self, dataset_id: str, r: Recorded, create: bool) -> tuple[int, Any]:
        rows: dict[str, dict[str, Any]] = {}
        for name, value in _multipart(r):
            example_id, _, part = name.partition(".")
            row = rows.setdefault(example_id, {"id": example_id})
            if part in ("inputs", "outputs"):
                row[part] = json.loads(value)
            elif not part:
                row.update(json.loads(value))
            else:
                raise ApiError(422, f"unsupported part {name!r}")
        return 201, self._write_examples(dataset_id, list(rows.values()), create)

    def _bulk_create(self, body: list[dict[str, Any]]) -> tuple[int, Any]:
        by_dataset: dict[str, list[dict[str, Any]]] = {}
        for row in body:
            row = {**row, "outputs": row.get("outputs", row.get("reference_outputs"))}
            by_dataset.setdefault(row["dataset_id"], []).append(row)
        created = []
        for dataset_id, rows in by_dataset.items():
            self._write_examples(dataset_id, rows, True)
            created += [_at(self.state.examples[row["id"]], None) for row in rows]
        return 200, created

    def _bulk_update(self, body: list[dict[str, Any]]) -> tuple[int, Any]:
        for row in body:
            dataset_id = (
                row.get("dataset_id") or _at(self.state.examples[row["id"]], None)["dataset_id"]
            )
            self._write_examples(dataset_id, [row], False)
        return 200, {"count": len(body)}

    def _list_examples(self, query: dict[str, list[str]]) -> tuple[int, Any]:
        dataset_id = query.get("dataset", [None])[-1]
        as_of = (
            self._resolve_as_of(dataset_id, query.get("as_of", [None])[-1]) if dataset_id else None
        )
        found = []
        for history in self.state.examples.values():
            record = _at(history, as_of)
            if record is None or (dataset_id and record["dataset_id"] != dataset_id):
                continue
            if "id" in query and record["id"] not in query["id"]:
                continue
            splits = query.get("splits")
            if splits and not set(splits) & set(record["metadata"].get("dataset_split", [])):
                continue
            found.append(record)
        return 200, _page(found, query)

    def _delete_examples(self, query: dict[str, list[str]]) -> tuple[int, Any]:
        ids = query.get("example_ids", [])
        dataset_ids = set()
        for example_id in ids:
            record = _at(self.state.examples.get(example_id, []), None)
            if record is None:
                raise ApiError(404, f"Example {example_id} not found")
            dataset_ids.add(record["dataset_id"])
        now = self.now()
        for example_id in ids:
            self.state.examples[example_id].append((now, None))
        for dataset_id in dataset_ids:
            self.state.versions[dataset_id].append(now)
        return 200, {}

    def _create_session(self, body: dict[str, Any], q: dict[str, str]) -> tuple[int, Any]:
        existing = next(
            (s for s in self.state.sessions.values() if s["name"] == body["name"]), None
        )
        if existing is not None:
            if q.get("upsert") in ("true", "True"):
                return 200, existing
            raise ApiError(409, f"Session {body['name']} already exists")
        session = {
            "id": body.get("id") or str(uuid.uuid4()),
            "name": body["name"],
            "description": body.get("description"),
            "extra": body.get("extra"),
            "reference_dataset_id": body.get("reference_dataset_id"),
            "start_time": self.now().isoformat(),
            "end_time": None,
            "tenant_id": TENANT_ID,
        }
        self.state.sessions[session["id"]] = session
        return 200, session

    def _list_sessions(self, q: dict[str, str]) -> tuple[int, Any]:
        found = list(self.state.sessions.values())
        if "name" in q:
            found = [s for s in found if s["name"] == q["name"]]
        if not found and not q.get("name"):
            # The client reads the tenant id from the first session; a fresh workspace has one.
            found = [
                {
                    "id": str(uuid.UUID(int=0)),
                    "name": "default",
                    "tenant_id": TENANT_ID,
                    "reference_dataset_id": None,
                    "start_time": _EPOCH.isoformat(),
                }
            ]
        return 200, [{**s, "run_count": self._run_count(s["id"])} for s in _page(found, {})]

    def _run_count(self, session_id: str) -> int:
        return sum(1 for run in self.state.runs.values() if run.get("session_id") == session_id)

    def _session(self, session_id: str) -> tuple[int, Any]:
        if session_id not in self.state.sessions:
            raise ApiError(404, "Session not found")
        return 200, self.state.sessions[session_id]

    def _update_session(self, session_id: str, body: dict[str, Any]) -> tuple[int, Any]:
        session = self._session(session_id)[1]
        for key, value in body.items():
            if value is not None:
                session[key] = value
        return 200, session

    def _session_id(self, run: dict[str, Any]) -> str:
        if run.get("session_id"):
            return str(run["session_id"])
        name = run.get("session_name")
        session = next((s for s in self.state.sessions.values() if s["name"] == name), None)
        if session is None:
            raise ApiError(404, f"Session {name!r} not found")
        return session["id"]

    def _ingest(self, posts: list[dict[str, Any]], patches: list[dict[str, Any]]) -> None:
        for run in posts:
            for key in ("id", "trace_id", "dotted_order"):
                if not run.get(key):
                    raise ApiError(422, f"run is missing {key!r}")
            run["session_id"] = self._session_id(run)
            self.state.runs[str(run["id"])] = run
        for run in patches:
            stored = self.state.runs.get(str(run["id"]))
            if stored is None:
                raise ApiError(404, f"run {run['id']} not found")
            stored.update({k: v for k, v in run.items() if v is not None})

    def _runs_multipart(self, r: Recorded) -> tuple[int, Any]:
        ops: dict[tuple[str, str], dict[str, Any]] = {}
        for name, value in _multipart(r):
            pieces = name.split(".")
            operation, run_id = pieces[0], pieces[1]
            if operation not in ("post", "patch"):
                raise ApiError(422, f"unsupported part {name!r}")
            run = ops.setdefault((operation, run_id), {"id": run_id})
            if len(pieces) == 2:
                run.update(json.loads(value))
            else:
                run[pieces[2]] = json.loads(value)
        posts = [run for (op, _), run in ops.items() if op == "post"]
        patches = [run for (op, _), run in ops.items() if op == "patch"]
        self._ingest(posts, patches)
        return 202, {}

    def _runs_batch(self, body: dict[str, Any]) -> tuple[int, Any]:
        self._ingest(list(body.get("post") or []), list(body.get("patch") or []))
        return 202, {}

    def _query_runs(self, body: dict[str, Any]) -> tuple[int, Any]:
        runs = list(self.state.runs.values())
        if body.get("session"):
            runs = [run for run in runs if run["session_id"] in body["session"]]
        if body.get("is_root"):
            runs = [run for run in runs if not run.get("parent_run_id")]
        if body.get("id"):
            runs = [run for run in runs if run["id"] in body["id"]]
        runs.sort(key=lambda run: run["dotted_order"])
        return 200, {"runs": runs, "cursors": {"next": None}}

    def _create_feedback(self, body: dict[str, Any]) -> tuple[int, Any]:
        if body["id"] in self.state.feedback:
            raise ApiError(409, f"Feedback {body['id']} already exists")
        if body.get("run_id") and body["run_id"] not in self.state.runs:
            raise ApiError(404, f"run {body['run_id']} not found")
        self.state.feedback[body["id"]] = body
        return 200, body

    def _list_feedback(self, query: dict[str, list[str]]) -> tuple[int, Any]:
        found = list(self.state.feedback.values())
        if "run" in query:
            found = [f for f in found if f.get("run_id") in query["run"]]
        if "key" in query:
            found = [f for f in found if f["key"] in query["key"]]
        return 200, _page(found, query)


def _at(history: list[tuple[datetime, dict | None]], as_of: datetime | None) -> dict | None:
    """An example as it was at ``as_of`` (the newest state when None)."""
    record = None
    for when, state in history:
        if as_of is not None and when > as_of:
            break
        record = state
    return record


def _page(items: list[Any], query: dict[str, list[str]]) -> list[Any]:
    offset = int(query.get("offset", ["0"])[-1])
    limit = int(query.get("limit", ["100"])[-1])
    return items[offset : offset + limit]


def _json(r: Recorded) -> Any:
    try:
        return json.loads(r.body or b"null")
    except json.JSONDecodeError:
        raise ApiError(422, "body is not JSON") from None


def _multipart(r: Recorded) -> list[tuple[str, bytes]]:
    """(field name, payload) of every part of a multipart/form-data body."""
    content_type = r.headers.get("content-type", "")
    if not content_type.startswith("multipart/form-data"):
        raise ApiError(422, "expected multipart/form-data")
    message = BytesParser(policy=HTTP).parsebytes(
        b"Content-Type: " + content_type.encode() + b"\r\n\r\n" + r.body
    )
    parts = []
    for part in message.iter_parts():
        name = part.get_param("name", header="content-disposition")
        parts.append((str(name), part.get_payload(decode=True) or b""))
    return parts


def _retry_headers(fault: Fault) -> dict[str, str]:
    return {"Retry-After": fault.retry_after} if fault.retry_after is not None else {}


class _Handler(BaseHTTPRequestHandler):
    stand_in: LangSmithStandIn
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def _serve(self) -> None:
        parts = urlsplit(self.path)
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        record = Recorded(
            method=self.command,
            path=parts.path,
            query=parse_qs(parts.query, keep_blank_values=True),
            headers={k.lower(): v for k, v in self.headers.items()},
            body=body,
        )
        status, payload, headers = self.stand_in.handle(record)
        record.status = status
        data = json.dumps(payload, default=str).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for key, value in headers.items():
            self.send_header(key, value)
        self.end_headers()
        self.wfile.write(data)

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _serve
