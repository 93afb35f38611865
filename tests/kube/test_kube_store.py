"""The object store: Kubernetes metadata, optimistic concurrency, GC, persistence, events."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from phalanx.kube.errors import AlreadyExists, Conflict, Forbidden, Gone, Invalid, NotFound
from phalanx.kube.store import ObjectStore
from phalanx.live.kubeobjects import SqliteObjects

JOBS = ("batch", "jobs")
PODS = ("", "pods")


def job(name: str, ns: str = "default", **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name, "namespace": ns, "labels": {"app": name}},
        "spec": {"parallelism": 1, **spec},
    }


def pod(name: str, owner: dict[str, Any] | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": "default"}
    if owner is not None:
        meta["ownerReferences"] = [
            {
                "apiVersion": "batch/v1",
                "kind": "Job",
                "name": owner["metadata"]["name"],
                "uid": owner["metadata"]["uid"],
                "controller": True,
            }
        ]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": {"containers": []}}


def test_system_namespaces_exist() -> None:
    s = ObjectStore()
    names = [n["metadata"]["name"] for n in s.list(("", "namespaces"))]
    assert {"default", "kube-system", "kube-public"} <= set(names)
    assert s.get(("", "namespaces"), None, "default")["status"] == {"phase": "Active"}  # type: ignore[index]


def test_create_fills_metadata_and_counts_versions() -> None:
    s = ObjectStore(clock=lambda: 1_700_000_000.0)
    before = s.resource_version
    a = s.create(job("a"))
    b = s.create(job("b"))
    assert a["metadata"]["uid"] != b["metadata"]["uid"]
    assert int(a["metadata"]["resourceVersion"]) == before + 1
    assert int(b["metadata"]["resourceVersion"]) == before + 2
    assert a["metadata"]["generation"] == 1
    assert a["metadata"]["creationTimestamp"] == "2023-11-14T22:13:20Z"
    with pytest.raises(AlreadyExists, match=r'jobs\.batch "a" already exists'):
        s.create(job("a"))


def test_generate_name_and_bad_names() -> None:
    s = ObjectStore()
    obj = job("")
    obj["metadata"] = {"generateName": "pi-"}
    made = s.create(obj)
    assert made["metadata"]["name"].startswith("pi-") and len(made["metadata"]["name"]) == 8
    with pytest.raises(Invalid, match=r"metadata\.name: Invalid value"):
        s.create(job("Bad_Name"))
    with pytest.raises(NotFound, match='namespaces "nope" not found'):
        s.create(job("x", ns="nope"))


def test_update_is_optimistic_and_bumps_generation_on_spec_only() -> None:
    s = ObjectStore()
    a = s.create(job("a"))
    stale = dict(a)
    a["metadata"]["labels"] = {"x": "y"}
    b = s.update(a)
    assert b["metadata"]["generation"] == 1
    assert b["metadata"]["resourceVersion"] != a["metadata"]["resourceVersion"]
    with pytest.raises(Conflict, match="the object has been modified"):
        s.update(stale)
    b["spec"]["parallelism"] = 3
    c = s.update(b)
    assert c["metadata"]["generation"] == 2
    # a no-op update keeps the resourceVersion
    assert s.update(c)["metadata"]["resourceVersion"] == c["metadata"]["resourceVersion"]


def test_status_only_through_its_subresource() -> None:
    s = ObjectStore()
    a = s.create(job("a"))
    a["status"] = {"active": 1}
    assert "status" not in s.update(a)
    b = s.update_status(a)
    assert b["status"] == {"active": 1}
    assert b["metadata"]["generation"] == 1
    b["spec"]["parallelism"] = 5
    b["status"] = {"active": 9}
    c = s.update(b)
    assert c["status"] == {"active": 1} and c["spec"]["parallelism"] == 5


def test_finalizers_mark_then_delete_when_removed() -> None:
    s = ObjectStore()
    obj = job("a")
    obj["metadata"]["finalizers"] = ["example.com/hold"]
    s.create(obj)
    marked = s.delete(JOBS, "default", "a")
    assert marked is not None and marked["metadata"]["deletionTimestamp"]
    assert s.get(JOBS, "default", "a") is not None
    marked["metadata"]["finalizers"] = []
    s.update(marked)
    assert s.get(JOBS, "default", "a") is None


def test_owner_deletion_background_and_orphan() -> None:
    s = ObjectStore()
    owner = s.create(job("a"))
    s.create(pod("a-0", owner))
    s.create(pod("a-1", owner))
    s.create(pod("other"))
    s.delete(JOBS, "default", "a")
    assert [p["metadata"]["name"] for p in s.list(PODS, "default")] == ["other"]
    owner = s.create(job("b"))
    s.create(pod("b-0", owner))
    s.delete(JOBS, "default", "b", propagation="Orphan")
    orphan = s.get(PODS, "default", "b-0")
    assert orphan is not None and "ownerReferences" not in orphan["metadata"]


def test_namespace_deletion_takes_its_objects() -> None:
    s = ObjectStore()
    s.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team"}})
    s.create(job("a", ns="team"))
    s.create(job("a"))
    s.delete(("", "namespaces"), None, "team")
    assert s.list(JOBS, "team") == []
    assert len(s.list(JOBS)) == 1
    with pytest.raises(Forbidden, match="may not be deleted"):
        s.delete(("", "namespaces"), None, "default")


def test_list_filters_by_namespace_and_labels() -> None:
    s = ObjectStore()
    s.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team"}})
    s.create(job("b"))
    s.create(job("a"))
    s.create(job("a", ns="team"))
    assert [j["metadata"]["name"] for j in s.list(JOBS, "default")] == ["a", "b"]
    assert [(j["metadata"]["namespace"]) for j in s.list(JOBS, labels={"app": "a"})] == [
        "default",
        "team",
    ]


def test_events_subscribers_and_watch_window() -> None:
    s = ObjectStore(window=3)
    seen: list[tuple[str, str]] = []
    s.subscribe(lambda kind, obj: seen.append((kind, obj["metadata"]["name"])))
    start = s.resource_version
    s.create(job("a"))
    a = s.get(JOBS, "default", "a")
    assert a is not None
    a["spec"]["parallelism"] = 2
    s.update(a)
    s.delete(JOBS, "default", "a")
    assert seen == [("ADDED", "a"), ("MODIFIED", "a"), ("DELETED", "a")]
    assert [e[1] for e in s.events_since(start)] == ["ADDED", "MODIFIED", "DELETED"]
    s.create(job("b"))
    with pytest.raises(Gone, match="too old resource version"):
        s.events_since(start)


def test_restart_keeps_every_object(tmp_path: Path) -> None:
    path = str(tmp_path / "state.db")
    s = ObjectStore(SqliteObjects(path))
    a = s.create(job("a"))
    owner = s.get(JOBS, "default", "a")
    s.create(pod("a-0", owner))
    s.create(job("gone"))
    s.delete(JOBS, "default", "gone")
    rv = s.resource_version
    again = ObjectStore(SqliteObjects(path))
    assert again.resource_version == rv
    assert again.get(JOBS, "default", "a") == a
    assert again.get(JOBS, "default", "gone") is None
    again.delete(JOBS, "default", "a")  # the ownership index was rebuilt
    assert again.get(PODS, "default", "a-0") is None
    assert int(again.create(job("c"))["metadata"]["resourceVersion"]) > rv


def test_restart_keeps_objects_on_each_state_store(db_url: str) -> None:
    from phalanx.live.kubeobjects import open_objects

    first = open_objects(db_url)
    s = ObjectStore(first)
    s.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team"}})
    made = s.create(job("a", ns="team"))
    rv = s.resource_version
    first.close()
    again = open_objects(db_url)
    try:
        back = ObjectStore(again)
        assert back.get(JOBS, "team", "a") == made
        assert back.resource_version == rv
    finally:
        again.close()


def test_create_fills_the_defaults_of_jobs_and_pods() -> None:
    s = ObjectStore()
    made = s.create(job("pi"))
    uid = made["metadata"]["uid"]
    assert made["spec"]["selector"] == {"matchLabels": {"batch.kubernetes.io/controller-uid": uid}}
    assert made["spec"]["backoffLimit"] == 6 and made["spec"]["completionMode"] == "NonIndexed"
    assert made["metadata"]["labels"] == {"app": "pi"}  # its own labels kept
    bare = job("bare")
    del bare["metadata"]["labels"]
    bare["spec"]["template"] = {"spec": {"containers": [{"name": "c", "image": "busybox"}]}}
    made = s.create(bare)
    labels = made["spec"]["template"]["metadata"]["labels"]
    assert labels["batch.kubernetes.io/job-name"] == "bare" and made["metadata"]["labels"] == labels
    assert made["spec"]["template"]["spec"]["restartPolicy"] == "Never"
    assert made["spec"]["template"]["spec"]["containers"][0]["imagePullPolicy"] == "Always"
    p = s.create(pod("p"))
    assert p["status"]["phase"] == "Pending" and p["spec"]["restartPolicy"] == "Always"
