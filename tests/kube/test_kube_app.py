"""The Kubernetes API app in process: auth, discovery, verbs, errors as Status, watch, tables."""

from __future__ import annotations

import json
import warnings
from collections.abc import Iterator
from typing import Any

import pytest

with warnings.catch_warnings():
    # As in tests/api: starlette's TestClient on httpx warns on import (errors here).
    warnings.filterwarnings("ignore", "Using `httpx` with `starlette.testclient`")
    from starlette.testclient import TestClient

from phalanx.kube.server import create_app
from phalanx.kube.store import ObjectStore

AUTH = {"Authorization": "Bearer tok"}
TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json"
JOBS = "/apis/batch/v1/namespaces/default/jobs"


def job(name: str, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name, "labels": {"app": name}},
        "spec": {
            "parallelism": 1,
            "template": {"spec": {"containers": [{"name": "c", "image": "busybox"}]}},
            **spec,
        },
    }


@pytest.fixture
def store() -> ObjectStore:
    return ObjectStore()


@pytest.fixture
def api(store: ObjectStore) -> Iterator[TestClient]:
    app = create_app(store, {"tok": ("ann", ("system:authenticated", "system:masters"))})
    with TestClient(app, base_url="https://testserver") as client:
        client.headers.update(AUTH)
        yield client


def test_no_token_is_401_but_version_is_open(store: ObjectStore) -> None:
    client = TestClient(create_app(store, {}))
    r = client.get("/api/v1/namespaces")
    assert r.status_code == 401 and r.json()["reason"] == "Unauthorized"
    assert client.get("/version").json()["major"] == "1"


def test_discovery_lists_resources_with_verbs_and_short_names(api: TestClient) -> None:
    core = api.get("/api/v1").json()
    pods = next(r for r in core["resources"] if r["name"] == "pods")
    assert pods["shortNames"] == ["po"] and "watch" in pods["verbs"] and pods["namespaced"]
    assert pods["categories"] == ["all"]
    assert any(r["name"] == "pods/status" for r in core["resources"])
    groups = {g["name"]: g for g in api.get("/apis").json()["groups"]}
    assert groups["kueue.x-k8s.io"]["preferredVersion"]["version"] == "v1beta2"
    agg = api.get(
        "/apis",
        headers={"Accept": "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"},
    )
    assert agg.headers["content-type"].startswith("application/json;g=apidiscovery.k8s.io;v=v2")
    names = [i["metadata"]["name"] for i in agg.json()["items"]]
    assert "batch" in names and "kubeflow.org" in names
    assert api.get("/apis/nope.example.com/v1").status_code == 404


def test_create_get_list_delete_with_statuses(api: TestClient) -> None:
    made = api.post(JOBS, json=job("pi"))
    assert made.status_code == 201, made.text
    assert made.json()["metadata"]["namespace"] == "default"
    again = api.post(JOBS, json=job("pi"))
    assert again.status_code == 409 and again.json()["message"] == 'jobs.batch "pi" already exists'
    got = api.get(f"{JOBS}/pi").json()
    assert got["metadata"]["uid"] == made.json()["metadata"]["uid"]
    listed = api.get(JOBS).json()
    assert listed["kind"] == "JobList" and [i["metadata"]["name"] for i in listed["items"]] == [
        "pi"
    ]
    gone = api.delete(f"{JOBS}/pi")
    assert gone.json()["status"] == "Success" and gone.json()["details"]["kind"] == "jobs"
    missing = api.get(f"{JOBS}/pi")
    assert missing.status_code == 404
    assert missing.json()["message"] == 'jobs.batch "pi" not found'


def test_bad_bodies_are_400_and_protobuf_415_until_it_lands(api: TestClient) -> None:
    r = api.post(JOBS, content=b"{not json", headers={"Content-Type": "application/json"})
    assert r.status_code == 400 and r.json()["reason"] == "BadRequest"
    r = api.post(JOBS, content=b"a: [1, 2", headers={"Content-Type": "application/yaml"})
    assert r.status_code == 400
    r = api.post(JOBS, content=b"[1, 2]", headers={"Content-Type": "application/json"})
    assert r.status_code == 400
    r = api.post(
        JOBS,
        content=b"k8s\x00\x01",
        headers={"Content-Type": "application/vnd.kubernetes.protobuf"},
    )
    try:
        import phalanx.kube.protobuf  # noqa: F401
    except ImportError:
        assert r.status_code == 415 and r.json()["reason"] == "UnsupportedMediaType"
    wrong = job("x")
    wrong["metadata"]["namespace"] = "other"
    assert api.post(JOBS, json=wrong).status_code == 400


def test_yaml_body_and_dry_run(api: TestClient, store: ObjectStore) -> None:
    body = (
        "apiVersion: batch/v1\nkind: Job\nmetadata: {name: y}\nspec:\n  parallelism: 2\n"
        "  template: {spec: {containers: [{name: c, image: busybox}], restartPolicy: Never}}\n"
    )
    r = api.post(f"{JOBS}?dryRun=All", content=body, headers={"Content-Type": "application/yaml"})
    assert r.status_code == 201 and store.get(("batch", "jobs"), "default", "y") is None
    r = api.post(JOBS, content=body, headers={"Content-Type": "application/yaml"})
    assert r.status_code == 201 and store.get(("batch", "jobs"), "default", "y") is not None


def test_update_conflict_and_status_subresource(api: TestClient) -> None:
    made = api.post(JOBS, json=job("pi")).json()
    made["spec"]["parallelism"] = 2
    ok = api.put(f"{JOBS}/pi", json=made)
    assert ok.status_code == 200 and ok.json()["metadata"]["generation"] == 2
    stale = api.put(f"{JOBS}/pi", json=made)
    assert stale.status_code == 409 and stale.json()["reason"] == "Conflict"
    current = ok.json()
    current["status"] = {"active": 1}
    st = api.put(f"{JOBS}/pi/status", json=current)
    assert st.status_code == 200 and st.json()["status"] == {"active": 1}
    assert api.get(f"{JOBS}/pi/status").json()["status"] == {"active": 1}


def test_patch_types(api: TestClient) -> None:
    api.post(JOBS, json=job("pi"))
    r = api.patch(
        f"{JOBS}/pi",
        content=json.dumps([{"op": "replace", "path": "/spec/parallelism", "value": 4}]),
        headers={"Content-Type": "application/json-patch+json"},
    )
    assert r.status_code == 200 and r.json()["spec"]["parallelism"] == 4
    r = api.patch(
        f"{JOBS}/pi",
        content=json.dumps({"metadata": {"labels": {"app": None, "x": "1"}}}),
        headers={"Content-Type": "application/merge-patch+json"},
    )
    assert r.json()["metadata"]["labels"] == {"x": "1"}
    smp = {"spec": {"template": {"spec": {"containers": [{"name": "side", "image": "b"}]}}}}
    r = api.patch(
        f"{JOBS}/pi",
        content=json.dumps(smp),
        headers={"Content-Type": "application/strategic-merge-patch+json"},
    )
    names = [c["name"] for c in r.json()["spec"]["template"]["spec"]["containers"]]
    assert names == ["c", "side"]
    bad = api.patch(
        f"{JOBS}/pi",
        content=json.dumps([{"op": "remove", "path": "/spec/nope"}]),
        headers={"Content-Type": "application/json-patch+json"},
    )
    assert bad.status_code in (400, 422)
    cq = "/apis/kueue.x-k8s.io/v1beta2/clusterqueues"
    applied = api.patch(
        f"{cq}/cq?fieldManager=kubectl",
        content="apiVersion: kueue.x-k8s.io/v1beta2\nkind: ClusterQueue\nmetadata: {name: cq}\n"
        "spec: {cohort: c}\n",
        headers={"Content-Type": "application/apply-patch+yaml"},
    )
    assert applied.status_code == 201, applied.text
    assert applied.json()["metadata"]["managedFields"][0]["manager"] == "kubectl"
    smp_on_crd = api.patch(
        f"{cq}/cq",
        content=json.dumps({"spec": {"cohort": "d"}}),
        headers={"Content-Type": "application/strategic-merge-patch+json"},
    )
    assert smp_on_crd.status_code == 415


def test_label_and_field_selectors_and_pages(api: TestClient) -> None:
    for name in ("a", "b", "c", "d"):
        api.post(JOBS, json=job(name))
    sel = api.get(JOBS, params={"labelSelector": "app in (a,c)"}).json()
    assert [i["metadata"]["name"] for i in sel["items"]] == ["a", "c"]
    sel = api.get(JOBS, params={"labelSelector": "app!=a,app"}).json()
    assert [i["metadata"]["name"] for i in sel["items"]] == ["b", "c", "d"]
    sel = api.get(JOBS, params={"fieldSelector": "metadata.name=b"}).json()
    assert [i["metadata"]["name"] for i in sel["items"]] == ["b"]
    bad = api.get(JOBS, params={"fieldSelector": "spec.nope=1"})
    assert bad.status_code == 400
    first = api.get(JOBS, params={"limit": 3}).json()
    assert len(first["items"]) == 3 and first["metadata"]["remainingItemCount"] == 1
    rest = api.get(JOBS, params={"limit": 3, "continue": first["metadata"]["continue"]}).json()
    assert [i["metadata"]["name"] for i in rest["items"]] == ["d"]
    assert "continue" not in rest["metadata"]


def test_table_has_columns_and_wide_ones(api: TestClient) -> None:
    api.post(JOBS, json=job("pi", completions=3))
    t = api.get(JOBS, headers={"Accept": TABLE}).json()
    assert t["kind"] == "Table"
    cols = [(c["name"], c["priority"]) for c in t["columnDefinitions"]]
    assert cols[:5] == [("Name", 0), ("Status", 0), ("Completions", 0), ("Duration", 0), ("Age", 0)]
    assert ("Images", 1) in cols
    row = t["rows"][0]
    assert row["cells"][:3] == ["pi", "Running", "0/3"]
    assert row["object"]["kind"] == "PartialObjectMetadata"


def test_watch_replays_from_a_version_and_410_when_too_old(store: ObjectStore) -> None:
    small = ObjectStore(window=2)
    client = TestClient(create_app(small, {"tok": ("ann", ("system:masters",))}))
    client.headers.update(AUTH)
    start = small.resource_version
    client.post(JOBS, json=job("a"))
    client.post(JOBS, json=job("b"))
    r = client.get(JOBS, params={"watch": "1", "resourceVersion": start + 1, "timeoutSeconds": 1})
    lines = [json.loads(x) for x in r.text.splitlines()]
    assert [(e["type"], e["object"]["metadata"]["name"]) for e in lines] == [("ADDED", "b")]
    client.post(JOBS, json=job("c"))
    old = client.get(JOBS, params={"watch": "1", "resourceVersion": start, "timeoutSeconds": 1})
    assert old.status_code == 410 and old.json()["reason"] == "Expired"
    fresh = client.get(JOBS, params={"watch": "1", "timeoutSeconds": 1})
    names = [json.loads(x)["object"]["metadata"]["name"] for x in fresh.text.splitlines()]
    assert names == ["a", "b", "c"]


def test_delete_propagates_to_dependents_unless_orphaned(
    api: TestClient, store: ObjectStore
) -> None:
    owner = api.post(JOBS, json=job("pi")).json()
    ref = {"apiVersion": "batch/v1", "kind": "Job", "name": "pi", "uid": owner["metadata"]["uid"]}
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "pi-0", "ownerReferences": [ref]},
        "spec": {"containers": [{"name": "c", "image": "x"}]},
    }
    assert api.post("/api/v1/namespaces/default/pods", json=pod).status_code == 201
    # batch/v1 Jobs orphan their pods by default, as upstream; kubectl asks for Background.
    api.delete(f"{JOBS}/pi")
    assert store.get(("", "pods"), "default", "pi-0") is not None
    owner = api.post(JOBS, json=job("pi2")).json()
    ref["uid"] = owner["metadata"]["uid"]
    pod["metadata"] = {"name": "pi2-0", "ownerReferences": [ref]}
    api.post("/api/v1/namespaces/default/pods", json=pod)
    api.request("DELETE", f"{JOBS}/pi2", json={"propagationPolicy": "Background"})
    assert store.get(("", "pods"), "default", "pi2-0") is None


def test_cluster_scoped_and_namespace_errors(api: TestClient) -> None:
    pod = {"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "image": "i"}]}}
    r = api.post("/api/v1/namespaces/nope/pods", json=pod)
    assert r.status_code == 404 and r.json()["message"] == 'namespaces "nope" not found'
    ns = api.post("/api/v1/namespaces", json={"metadata": {"name": "team"}})
    assert ns.status_code == 201 and ns.json()["status"]["phase"] == "Active"
    assert api.get("/api/v1/namespaces/team").json()["metadata"]["name"] == "team"
    bad = api.delete("/api/v1/namespaces/default")
    assert bad.status_code == 403 and bad.json()["reason"] == "Forbidden"
    assert api.post("/api/v1/namespaces", json={"metadata": {"name": "Bad"}}).status_code == 422


def test_rbac_a_user_bound_in_one_namespace_is_forbidden_in_another(
    api: TestClient, store: ObjectStore
) -> None:
    for ns in ("a", "b"):
        api.post("/api/v1/namespaces", json={"metadata": {"name": ns}})
    binding = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "RoleBinding",
        "metadata": {"name": "bob-user", "namespace": "a"},
        "roleRef": {
            "apiGroup": "rbac.authorization.k8s.io",
            "kind": "ClusterRole",
            "name": "kueue-batch-user-role",
        },
        "subjects": [{"kind": "User", "name": "bob"}],
    }
    made = api.post("/apis/rbac.authorization.k8s.io/v1/namespaces/a/rolebindings", json=binding)
    assert made.status_code == 201, made.text
    bob = TestClient(create_app(store, {"b0b": ("bob", ("system:authenticated",))}))
    bob.headers.update({"Authorization": "Bearer b0b"})
    ok = bob.post("/apis/batch/v1/namespaces/a/jobs", json=job("mine"))
    assert ok.status_code == 201, ok.text
    assert bob.get("/apis/kueue.x-k8s.io/v1beta2/namespaces/a/localqueues").status_code == 200
    no = bob.post("/apis/batch/v1/namespaces/b/jobs", json=job("theirs"))
    assert no.status_code == 403
    assert no.json()["message"] == (
        'jobs.batch is forbidden: User "bob" cannot create resource "jobs" in API group "batch"'
        ' in the namespace "b"'
    )
    assert bob.get("/apis/kueue.x-k8s.io/v1beta2/namespaces/b/localqueues").status_code == 403
    assert bob.get("/apis/batch/v1/jobs").status_code == 403  # all namespaces: cluster scope
    cq = bob.post("/apis/kueue.x-k8s.io/v1beta2/clusterqueues", json={"metadata": {"name": "x"}})
    assert cq.status_code == 403
    status = bob.put("/apis/batch/v1/namespaces/a/jobs/mine/status", json=ok.json())
    assert status.status_code == 403 and '"jobs/status"' in status.json()["message"]


def test_scale_subresource(api: TestClient) -> None:
    deploy = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web"},
        "spec": {"replicas": 3, "selector": {"matchLabels": {"app": "web"}}, "template": {}},
    }
    path = "/apis/apps/v1/namespaces/default/deployments/web"
    assert api.post("/apis/apps/v1/namespaces/default/deployments", json=deploy).status_code == 201
    scale = api.get(f"{path}/scale").json()
    assert scale["kind"] == "Scale" and scale["spec"]["replicas"] == 3
    assert scale["status"]["selector"] == "app=web"
    patched = api.patch(
        f"{path}/scale",
        content=json.dumps({"spec": {"replicas": 1}}),
        headers={"Content-Type": "application/merge-patch+json"},
    )
    assert patched.status_code == 200 and patched.json()["spec"]["replicas"] == 1
    assert api.get(path).json()["spec"]["replicas"] == 1
    bad = api.put(f"{path}/scale", json={"spec": {"replicas": -1}})
    assert bad.status_code == 422 and "spec.replicas" in bad.json()["message"]


def test_a_standby_answers_503(store: ObjectStore) -> None:
    app = create_app(store, {"tok": ("ann", ("system:masters",))}, is_open=lambda: False)
    r = TestClient(app).get("/api/v1/namespaces", headers=AUTH)
    assert r.status_code == 503 and r.json()["reason"] == "ServiceUnavailable"


def test_delete_collection_by_label(api: TestClient, store: ObjectStore) -> None:
    for name in ("a", "b", "c"):
        api.post(JOBS, json=job(name))
    gone = api.request("DELETE", JOBS, params={"labelSelector": "app in (a,b)"}).json()
    assert gone["kind"] == "JobList" and [i["metadata"]["name"] for i in gone["items"]] == [
        "a",
        "b",
    ]
    assert [j["metadata"]["name"] for j in store.list(("batch", "jobs"))] == ["c"]
