"""``GET .../pods/NAME/log`` in process: the file a pod's log annotation names, cut by the
query (tailLines, limitBytes, sinceTime, timestamps), followed until the pod ends, and the
errors as kube-apiserver words them."""

from __future__ import annotations

import threading
import time
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

with warnings.catch_warnings():
    warnings.filterwarnings("ignore", "Using `httpx` with `starlette.testclient`")
    from starlette.testclient import TestClient

from phalanx.kube.server import create_app
from phalanx.kube.store import ObjectStore
from phalanx.workloads.plan import ANNOTATION_LOG

POD = "/api/v1/namespaces/default/pods/p-0"


def pod(log: Path | None, *containers: str, phase: str = "Running") -> dict[str, Any]:
    notes = {ANNOTATION_LOG: str(log)} if log is not None else {}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p-0", "namespace": "default", "annotations": notes},
        "spec": {"containers": [{"name": c, "image": "busybox"} for c in containers]},
        "status": {"phase": phase},
    }


@pytest.fixture
def store() -> ObjectStore:
    return ObjectStore()


@pytest.fixture
def api(store: ObjectStore) -> Iterator[TestClient]:
    users = {
        "tok": ("ann", ("system:authenticated", "system:masters")),
        "bob": ("bob", ("system:authenticated",)),
    }
    with TestClient(create_app(store, users), base_url="https://testserver") as client:
        client.headers.update({"Authorization": "Bearer tok"})
        yield client


def test_the_log_cut_by_tail_and_limit(api: TestClient, store: ObjectStore, tmp_path: Path) -> None:
    log = tmp_path / "p-0.out"
    log.write_text("one\ntwo\nthree\n")
    store.create(pod(log, "c"))
    whole = api.get(f"{POD}/log")
    assert whole.status_code == 200 and whole.text == "one\ntwo\nthree\n"
    assert whole.headers["content-type"].startswith("text/plain")
    assert api.get(f"{POD}/log", params={"tailLines": "2"}).text == "two\nthree\n"
    assert api.get(f"{POD}/log", params={"tailLines": "0"}).text == ""
    assert api.get(f"{POD}/log", params={"limitBytes": "5", "container": "c"}).text == "one\nt"
    stamped = api.get(f"{POD}/log", params={"timestamps": "true", "tailLines": "1"}).text
    stamp, _, line = stamped.partition(" ")
    assert (
        line == "three\n"
        and stamp.endswith("Z")
        and len(stamp) == len("2026-12-01T20:00:00.123456789Z")
    )
    later = api.get(f"{POD}/log", params={"sinceTime": "2999-01-01T00:00:00Z"})
    assert later.status_code == 200 and later.text == ""
    assert api.get(f"{POD}/log", params={"sinceSeconds": "3600"}).text == "one\ntwo\nthree\n"


def test_errors_as_kube_apiserver_words_them(
    api: TestClient, store: ObjectStore, tmp_path: Path
) -> None:
    missing = api.get("/api/v1/namespaces/default/pods/nope/log")
    assert missing.status_code == 404 and missing.json()["message"] == 'pods "nope" not found'
    store.create(pod(tmp_path / "not-yet.out", "a", "b", phase="Pending"))
    wrong = api.get(f"{POD}/log", params={"container": "x"})
    assert wrong.status_code == 400
    assert wrong.json()["message"] == 'container "x" is not valid for pod "p-0"'
    which = api.get(f"{POD}/log").json()["message"]
    assert which == "a container name must be specified for pod p-0, choose one of: [a b]"
    waiting = api.get(f"{POD}/log", params={"container": "a"}).json()["message"]
    assert waiting == 'container "a" in pod "p-0" is waiting to start: ContainerCreating'
    assert api.get(f"{POD}/log", params={"container": "a", "tailLines": "-1"}).status_code == 400
    assert api.post(f"{POD}/log", json={}).status_code == 405


def test_pods_log_is_its_own_rbac_resource(
    api: TestClient, store: ObjectStore, tmp_path: Path
) -> None:
    log = tmp_path / "p-0.out"
    log.write_text("secret\n")
    store.create(pod(log, "c"))
    store.create(
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "Role",
            "metadata": {"name": "pod-reader", "namespace": "default"},
            "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}],
        }
    )
    store.create(
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "RoleBinding",
            "metadata": {"name": "bob", "namespace": "default"},
            "roleRef": {
                "apiGroup": "rbac.authorization.k8s.io",
                "kind": "Role",
                "name": "pod-reader",
            },
            "subjects": [{"kind": "User", "name": "bob"}],
        }
    )
    bob = {"Authorization": "Bearer bob"}
    assert api.get(POD, headers=bob).status_code == 200
    denied = api.get(f"{POD}/log", headers=bob)
    assert denied.status_code == 403
    assert 'cannot get resource "pods/log" in API group ""' in denied.json()["message"]


def test_follow_streams_until_the_pod_ends(
    api: TestClient, store: ObjectStore, tmp_path: Path
) -> None:
    log = tmp_path / "p-0.out"
    log.write_text("start\n")
    store.create(pod(log, "c"))

    def finish() -> None:
        time.sleep(0.5)
        with log.open("a") as f:
            f.write("middle\nend")
        time.sleep(0.5)
        done = store.get(("", "pods"), "default", "p-0")
        assert done is not None
        done["status"]["phase"] = "Succeeded"
        store.update_status(done)

    writer = threading.Thread(target=finish)
    writer.start()
    began = time.monotonic()
    with api.stream("GET", f"{POD}/log", params={"follow": "true"}) as r:
        got = b"".join(r.iter_bytes())
    writer.join()
    assert got == b"start\nmiddle\nend"
    assert time.monotonic() - began >= 1.0  # it waited for the pod to end


def test_the_creator_is_recorded_and_cannot_be_forged(api: TestClient, store: ObjectStore) -> None:
    forged = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": "pi",
            "annotations": {"phalanx.io/user": "root", "phalanx.io/log": "/etc/shadow", "x": "1"},
        },
        "spec": {"template": {"spec": {"containers": [{"name": "c", "image": "busybox"}]}}},
    }
    made = api.post("/apis/batch/v1/namespaces/default/jobs", json=forged)
    assert made.status_code == 201, made.text
    assert made.json()["metadata"]["annotations"] == {"phalanx.io/user": "ann", "x": "1"}
    url = "/apis/batch/v1/namespaces/default/jobs/pi"
    body = made.json()
    body["metadata"]["annotations"] = {"phalanx.io/user": "root"}
    put = api.put(url, json=body)
    assert put.status_code == 200, put.text
    assert put.json()["metadata"]["annotations"] == {"phalanx.io/user": "ann"}
    merge = {"metadata": {"annotations": {"phalanx.io/user": "root", "y": "2"}}}
    patched = api.patch(url, json=merge, headers={"Content-Type": "application/merge-patch+json"})
    assert patched.status_code == 200, patched.text
    assert patched.json()["metadata"]["annotations"] == {"phalanx.io/user": "ann", "y": "2"}
    gone = [{"op": "remove", "path": "/metadata/annotations/phalanx.io~1user"}]
    patched = api.patch(url, json=gone, headers={"Content-Type": "application/json-patch+json"})
    assert patched.status_code == 200, patched.text
    assert patched.json()["metadata"]["annotations"]["phalanx.io/user"] == "ann"
    stored = store.get(("batch", "jobs"), "default", "pi")
    assert stored is not None and stored["metadata"]["annotations"]["phalanx.io/user"] == "ann"


def test_auth_can_i_and_whoami(api: TestClient) -> None:
    review = "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews"

    def can(token: str, **attrs: str) -> bool:
        body = {
            "apiVersion": "authorization.k8s.io/v1",
            "kind": "SelfSubjectAccessReview",
            "spec": {"resourceAttributes": attrs},
        }
        r = api.post(review, json=body, headers={"Authorization": f"Bearer {token}"})
        assert r.status_code == 201, r.text
        return bool(r.json()["status"]["allowed"])

    assert can("tok", verb="create", group="batch", resource="jobs", namespace="default")
    assert not can("bob", verb="create", group="batch", resource="jobs", namespace="default")
    assert not can("bob", verb="get", resource="pods", subresource="log", namespace="default")
    assert api.post(review, json={"spec": {}}).status_code == 400
    me = api.post("/apis/authentication.k8s.io/v1/selfsubjectreviews", json={})
    assert me.status_code == 201
    assert me.json()["status"]["userInfo"] == {
        "username": "ann",
        "groups": ["system:authenticated", "system:masters"],
    }
