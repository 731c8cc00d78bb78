"""Dataset, version, tag and example endpoints."""

from __future__ import annotations

import copy
import json
import uuid
from datetime import datetime
from typing import Any

from .state import ApiError, Recorded, State, at, page
from .wire import json_body, multipart


class DatasetRoutes:
    state: State
    examples_multipart: bool

    def now(self) -> datetime:
        raise NotImplementedError

    def dataset_routes(self, r: Recorded, q: dict[str, str]) -> list[tuple[str, str, Any]]:
        return [
            ("POST", r"/datasets", lambda: self._create_dataset(json_body(r))),
            ("GET", r"/datasets", lambda: self._list_datasets(r.query)),
            ("GET", r"/datasets/([\w-]+)", lambda i: self._dataset(i)),
            ("GET", r"/datasets/([\w-]+)/version", lambda i: self._version(i, q)),
            ("GET", r"/datasets/([\w-]+)/versions", lambda i: self._versions(i, q)),
            ("PUT", r"/datasets/([\w-]+)/tags", lambda i: self._tag(i, json_body(r))),
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
            ("POST", r"/examples/bulk", lambda: self._bulk_create(json_body(r))),
            ("PATCH", r"/examples/bulk", lambda: self._bulk_update(json_body(r))),
            ("GET", r"/examples", lambda: self._list_examples(r.query)),
            ("DELETE", r"/examples", lambda: self._delete_examples(r.query)),
        ]

    def _create_dataset(self, body: dict[str, Any]) -> tuple[int, Any]:
        if self.state.dataset_by_name(body["name"]) is not None:
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
        return {**dataset, "example_count": len(self.state.examples_at(dataset["id"]))}

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
        return 200, [self._dataset_view(d) for d in page(found, query)]

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
            exists = at(self.state.examples.get(row["id"], []), None) is not None
            if create and row["id"] in self.state.examples:
                raise ApiError(409, f"Example {row['id']} already exists")
            if not create and not exists:
                raise ApiError(404, f"Example {row['id']} not found")
        now = self.now()
        ids = []
        for row in rows:
            history = self.state.examples.setdefault(row["id"], [])
            before = at(history, None) or {
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
        for name, value in multipart(r):
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
            created += [at(self.state.examples[row["id"]], None) for row in rows]
        return 200, created

    def _bulk_update(self, body: list[dict[str, Any]]) -> tuple[int, Any]:
        for row in body:
            dataset_id = (
                row.get("dataset_id") or at(self.state.examples[row["id"]], None)["dataset_id"]
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
            record = at(history, as_of)
            if record is None or (dataset_id and record["dataset_id"] != dataset_id):
                continue
            if "id" in query and record["id"] not in query["id"]:
                continue
            splits = query.get("splits")
            if splits and not set(splits) & set(record["metadata"].get("dataset_split", [])):
                continue
            found.append(record)
        return 200, page(found, query)

    def _delete_examples(self, query: dict[str, list[str]]) -> tuple[int, Any]:
        ids = query.get("example_ids", [])
        dataset_ids = set()
        for example_id in ids:
            record = at(self.state.examples.get(example_id, []), None)
            if record is None:
                raise ApiError(404, f"Example {example_id} not found")
            dataset_ids.add(record["dataset_id"])
        now = self.now()
        for example_id in ids:
            self.state.examples[example_id].append((now, None))
        for dataset_id in dataset_ids:
            self.state.versions[dataset_id].append(now)
        return 200, {}
