"""Experiment endpoints: sessions (projects), run ingestion and queries, feedback."""

from __future__ import annotations

import json
import uuid
from datetime import datetime
from typing import Any

from .state import EPOCH, TENANT_ID, ApiError, Recorded, State, page
from .wire import json_body, multipart

_TRUE = ("true", "True", "1")


class ExperimentRoutes:
    state: State
    runs_page_size: int

    def now(self) -> datetime:
        raise NotImplementedError

    def experiment_routes(self, r: Recorded, q: dict[str, str]) -> list[tuple[str, str, Any]]:
        return [
            ("POST", r"/sessions", lambda: self._create_session(json_body(r), q)),
            ("GET", r"/sessions", lambda: self._list_sessions(r.query)),
            ("GET", r"/sessions/([\w-]+)", lambda i: self._session(i)),
            ("PATCH", r"/sessions/([\w-]+)", lambda i: self._update_session(i, json_body(r))),
            ("POST", r"/runs/multipart", lambda: self._runs_multipart(r)),
            ("POST", r"/runs/batch", lambda: self._runs_batch(json_body(r))),
            ("POST", r"/runs/query", lambda: self._query_runs(json_body(r))),
            ("POST", r"/feedback", lambda: self._create_feedback(json_body(r))),
            ("GET", r"/feedback", lambda: self._list_feedback(r.query)),
        ]

    # -- sessions -------------------------------------------------------------------------

    def _new_session(self, name: str, body: dict[str, Any]) -> dict[str, Any]:
        session = {
            "id": body.get("id") or str(uuid.uuid4()),
            "name": name,
            "description": body.get("description"),
            "extra": body.get("extra"),
            "reference_dataset_id": body.get("reference_dataset_id"),
            "start_time": self.now().isoformat(),
            "end_time": None,
            "tenant_id": TENANT_ID,
        }
        self.state.sessions[session["id"]] = session
        return session

    def _create_session(self, body: dict[str, Any], q: dict[str, str]) -> tuple[int, Any]:
        existing = self.state.session_by_name(body["name"])
        if existing is not None:
            if q.get("upsert") in _TRUE:
                return 200, existing
            raise ApiError(409, f"Session {body['name']} already exists")
        return 200, self._new_session(body["name"], body)

    def _list_sessions(self, query: dict[str, list[str]]) -> tuple[int, Any]:
        q = {k: v[-1] for k, v in query.items()}
        found = list(self.state.sessions.values())
        if "name" in q:
            found = [s for s in found if s["name"] == q["name"]]
        if "name_contains" in q:
            found = [s for s in found if q["name_contains"] in s["name"]]
        if "id" in query:
            found = [s for s in found if s["id"] in query["id"]]
        if "reference_dataset" in query:
            found = [
                s for s in found if s.get("reference_dataset_id") in query["reference_dataset"]
            ]
        if "reference_free" in q:
            wanted = q["reference_free"] in _TRUE
            found = [s for s in found if (s.get("reference_dataset_id") is None) == wanted]
        found.sort(key=lambda s: s["start_time"], reverse=True)  # newest first
        if not found and not set(query) - {"limit", "offset", "include_stats"}:
            # The client reads the tenant id from the first session; a fresh workspace has one.
            found = [
                {
                    "id": str(uuid.UUID(int=0)),
                    "name": "default",
                    "tenant_id": TENANT_ID,
                    "reference_dataset_id": None,
                    "start_time": EPOCH.isoformat(),
                }
            ]
        return 200, [{**s, "run_count": self._run_count(s["id"])} for s in page(found, query)]

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

    # -- runs -----------------------------------------------------------------------------

    def _session_id(self, run: dict[str, Any]) -> str:
        """The run's session; like LangSmith, a run naming an unknown project creates it."""
        if run.get("session_id"):
            return str(run["session_id"])
        name = run.get("session_name") or "default"
        session = self.state.session_by_name(name) or self._new_session(name, {})
        return session["id"]

    def _ingest(self, posts: list[dict[str, Any]], patches: list[dict[str, Any]]) -> None:
        for run in posts:
            for key in ("id", "trace_id", "dotted_order"):
                if not run.get(key):
                    raise ApiError(422, f"run is missing {key!r}")
            run["session_id"] = self._session_id(run)
            early = self.state.early_patches.pop(str(run["id"]), {})
            self.state.runs[str(run["id"])] = {**run, **early}
        for run in patches:
            changes = {k: v for k, v in run.items() if v is not None}
            stored = self.state.runs.get(str(run["id"]))
            if stored is None:
                # The client sends from several threads: a run's end may come before its
                # start. LangSmith merges them whatever the order.
                self.state.early_patches.setdefault(str(run["id"]), {}).update(changes)
            else:
                stored.update(changes)

    def _runs_multipart(self, r: Recorded) -> tuple[int, Any]:
        ops: dict[tuple[str, str], dict[str, Any]] = {}
        feedback: list[dict[str, Any]] = []
        for name, value in multipart(r):
            pieces = name.split(".")
            operation, item_id = pieces[0], pieces[1]
            if operation == "feedback" and len(pieces) == 2:
                feedback.append(json.loads(value))
                continue
            if operation not in ("post", "patch"):
                raise ApiError(422, f"unsupported part {name!r}")
            run = ops.setdefault((operation, item_id), {"id": item_id})
            if len(pieces) == 2:
                run.update(json.loads(value))
            else:
                run[pieces[2]] = json.loads(value)
        posts = [run for (op, _), run in ops.items() if op == "post"]
        patches = [run for (op, _), run in ops.items() if op == "patch"]
        self._ingest(posts, patches)
        for item in feedback:  # queued feedback: stored as sent, the run may come later
            self._store_feedback(item)
        return 202, {}

    def _runs_batch(self, body: dict[str, Any]) -> tuple[int, Any]:
        self._ingest(list(body.get("post") or []), list(body.get("patch") or []))
        return 202, {}

    def _query_runs(self, body: dict[str, Any]) -> tuple[int, Any]:
        """The filters the client's ``list_runs`` sends that agenteval uses; cursor pages."""
        runs = list(self.state.runs.values())
        if body.get("session"):
            runs = [run for run in runs if run["session_id"] in body["session"]]
        if body.get("is_root") is not None:
            is_root = bool(body["is_root"])
            runs = [run for run in runs if (not run.get("parent_run_id")) == is_root]
        if body.get("run_type"):
            runs = [run for run in runs if run.get("run_type") == body["run_type"]]
        if body.get("trace"):
            runs = [run for run in runs if str(run.get("trace_id")) == str(body["trace"])]
        if body.get("reference_example"):
            wanted = {str(e) for e in body["reference_example"]}
            runs = [run for run in runs if str(run.get("reference_example_id")) in wanted]
        if body.get("id"):
            runs = [run for run in runs if run["id"] in body["id"]]
        runs.sort(key=lambda run: run["dotted_order"])
        size = min(int(body.get("limit") or 100), self.runs_page_size)
        offset = int(body.get("cursor") or 0)
        chunk = runs[offset : offset + size]
        following = str(offset + size) if offset + size < len(runs) else None
        return 200, {"runs": chunk, "cursors": {"next": following}}

    # -- feedback -------------------------------------------------------------------------

    def _store_feedback(self, body: dict[str, Any]) -> dict[str, Any]:
        now = self.now().isoformat()
        record = {"created_at": now, "modified_at": now, **body}
        self.state.feedback[str(body["id"])] = record
        return record

    def _create_feedback(self, body: dict[str, Any]) -> tuple[int, Any]:
        if body["id"] in self.state.feedback:
            raise ApiError(409, f"Feedback {body['id']} already exists")
        if body.get("run_id") and body["run_id"] not in self.state.runs:
            raise ApiError(404, f"run {body['run_id']} not found")
        return 200, self._store_feedback(body)

    def _list_feedback(self, query: dict[str, list[str]]) -> tuple[int, Any]:
        found = list(self.state.feedback.values())
        if "run" in query:
            found = [f for f in found if f.get("run_id") in query["run"]]
        if "key" in query:
            found = [f for f in found if f["key"] in query["key"]]
        return 200, page(found, query)
