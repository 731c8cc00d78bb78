"""The stand-in server: lifecycle, request dispatch, fault injection and test helpers."""

from __future__ import annotations

import contextlib
import itertools
import re
import threading
import time
from collections.abc import Iterator
from datetime import datetime, timedelta
from http.server import ThreadingHTTPServer
from typing import Any

from serving import serve

from .routes_datasets import DatasetRoutes
from .routes_experiments import ExperimentRoutes
from .state import EPOCH, ApiError, Fault, Recorded, State
from .wire import Handler, retry_headers


class LangSmithStandIn(DatasetRoutes, ExperimentRoutes):
    """Start with ``server = LangSmithStandIn().start()``; ``server.url`` is the endpoint."""

    def __init__(
        self,
        *,
        api_key: str = "lsv2_test_key",
        examples_multipart: bool = True,
        runs_page_size: int = 100,
    ):
        self.api_key = api_key
        self.examples_multipart = examples_multipart
        self.runs_page_size = runs_page_size  # runs per /runs/query page (LangSmith: 100)
        self.state = State()
        self.requests: list[Recorded] = []
        self.faults: list[Fault] = []
        self.hollow: list[Fault] = []  # requests answered 200 with an empty object, "{}"
        self.latency_s = 0.0
        self._lock = threading.RLock()
        self._clock = itertools.count(1)
        self._httpd: ThreadingHTTPServer | None = None

    # -- lifecycle ------------------------------------------------------------------------

    def start(self) -> LangSmithStandIn:
        server = self

        class BoundHandler(Handler):
            stand_in = server

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), BoundHandler)
        self._httpd.daemon_threads = True
        serve(self._httpd)
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

    def answer_empty(self, pattern: str, times: int = 10**9) -> None:
        """Answer ``200 {}`` to the next ``times`` requests whose "METHOD path" matches
        ``pattern``, without processing them: a proxy or a broken server in the way."""
        self.hollow.append(Fault(pattern, 200, times))

    def calls(self, pattern: str = "") -> list[Recorded]:
        """Recorded requests whose "METHOD path" matches ``pattern`` (a regex)."""
        return [r for r in self.requests if re.search(pattern, f"{r.method} {r.path}")]

    def dataset_by_name(self, name: str) -> dict[str, Any] | None:
        return self.state.dataset_by_name(name)

    def current_examples(self, dataset_id: str, as_of: datetime | None = None) -> list[dict]:
        """The examples of a dataset at ``as_of`` (default: now), in creation order."""
        with self._lock:
            return self.state.examples_at(dataset_id, as_of)

    def runs_of(self, session_name: str) -> list[dict[str, Any]]:
        session = self.state.session_by_name(session_name)
        assert session is not None, session_name
        return [r for r in self.state.runs.values() if r.get("session_id") == session["id"]]

    # -- request processing ---------------------------------------------------------------

    def now(self) -> datetime:
        """Strictly increasing timestamps, so every write is its own dataset version."""
        return EPOCH + timedelta(milliseconds=next(self._clock))

    def handle(self, record: Recorded) -> tuple[int, Any, dict[str, str]]:
        if self.latency_s:
            time.sleep(self.latency_s)
        with self._lock:
            self.requests.append(record)
            if record.headers.get("x-api-key") != self.api_key:
                return 401, {"detail": "Invalid token"}, {}
            if self._take_fault(f"{record.method} {record.path}", self.hollow) is not None:
                return 200, {}, {}
            fault = self._take_fault(f"{record.method} {record.path}")
            if fault is not None and not fault.after_apply:
                return fault.status, {"detail": "injected fault"}, retry_headers(fault)
            try:
                status, body = self._route(record)
            except ApiError as exc:
                status, body = exc.status, {"detail": exc.detail}
            if fault is not None:
                return fault.status, {"detail": "injected fault"}, retry_headers(fault)
            return status, body, {}

    def _take_fault(self, line: str, faults: list[Fault] | None = None) -> Fault | None:
        for fault in self.faults if faults is None else faults:
            if fault.times > 0 and re.search(fault.pattern, line):
                fault.times -= 1
                return fault
        return None

    def _route(self, r: Recorded) -> tuple[int, Any]:
        m, p = r.method, r.path.rstrip("/")
        q = {k: v[-1] for k, v in r.query.items()}
        routes = [
            ("GET", r"/info", lambda: self._info()),
            *self.dataset_routes(r, q),
            *self.experiment_routes(r, q),
        ]
        for method, pattern, fn in routes:
            match = re.fullmatch(pattern, p)
            if method == m and match:
                return fn(*match.groups())
        raise ApiError(404, f"no route for {m} {p}")

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


@contextlib.contextmanager
def serving(monkeypatch: Any, **options: Any) -> Iterator[LangSmithStandIn]:
    """A started stand-in that the environment points the client at, with fast backoff."""
    stand_in = LangSmithStandIn(**options).start()
    for var in ("LANGCHAIN_API_KEY", "LANGCHAIN_ENDPOINT"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("LANGSMITH_ENDPOINT", stand_in.url)
    monkeypatch.setenv("LANGSMITH_API_KEY", stand_in.api_key)
    monkeypatch.setenv("AGENTEVAL_LANGSMITH_BACKOFF", "0.01")
    try:
        yield stand_in
    finally:
        stand_in.stop()
