"""An object's JSON is made once per version (``ObjectStore.json_of``): a create's answer is
the row the group commit writes and what a list shows; a dry run's object, which carries the
stored one's resourceVersion, is never kept in its place."""

from __future__ import annotations

import json
import warnings
from typing import Any

with warnings.catch_warnings():
    warnings.filterwarnings("ignore", "Using `httpx` with `starlette.testclient`")
    from starlette.testclient import TestClient

from phalanx.kube.persist import MemoryObjects
from phalanx.kube.server import create_app
from phalanx.kube.store import ObjectStore

JOBS = "/apis/batch/v1/namespaces/default/jobs"


def _job(name: str, app: str) -> dict[str, Any]:
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name, "labels": {"app": app}},
        "spec": {"template": {"spec": {"containers": [{"name": "c", "image": "x"}]}}},
    }


def _client(store: ObjectStore) -> TestClient:
    app = create_app(store, {"tok": ("ann", ("system:authenticated", "system:masters"))})
    client = TestClient(app, base_url="https://testserver")
    client.headers.update({"Authorization": "Bearer tok"})
    return client


def test_a_creates_answer_is_the_row_the_group_commit_writes() -> None:
    table = MemoryObjects()
    store = ObjectStore(table)
    store.flush()
    store.defer_commits()
    client = _client(store)
    r = client.post(JOBS, json=_job("a", "one"))
    assert r.status_code == 201
    _, writes = store.take_pending()
    rows = {(w[0], w[2]): w[4] for w in writes}
    row = rows[("batch/jobs", "a")]
    assert row == r.content  # the answer's bytes, not encoded again
    assert json.loads(r.content)["metadata"]["name"] == "a"
    # and a table that gets a body's JSON keeps the object it describes
    table.commit(store.resource_version, writes)
    store.committed(store.resource_version)
    stored = store.get(("batch", "jobs"), "default", "a")
    assert table.rows[("batch/jobs", "default", "a")] == stored


def test_a_dry_run_update_leaves_what_lists_and_gets_show() -> None:
    store = ObjectStore()
    client = _client(store)
    made = client.post(JOBS, json=_job("a", "one")).json()
    listed = client.get(JOBS).json()["items"][0]
    changed = {**made, "metadata": {**made["metadata"], "labels": {"app": "two"}}}
    r = client.put(f"{JOBS}/a?dryRun=All", json=changed)
    assert r.status_code == 200 and r.json()["metadata"]["labels"] == {"app": "two"}
    # same resourceVersion as the stored object: its JSON must not stand in for the stored one
    assert r.json()["metadata"]["resourceVersion"] == made["metadata"]["resourceVersion"]
    assert client.get(JOBS).json()["items"][0] == listed
    assert client.get(f"{JOBS}/a").json()["metadata"]["labels"] == {"app": "one"}
    r = client.put(f"{JOBS}/a", json=changed)
    assert r.status_code == 200
    assert client.get(JOBS).json()["items"][0]["metadata"]["labels"] == {"app": "two"}
