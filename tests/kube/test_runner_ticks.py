"""The workload runner's ticks look at the waiting workloads in turn, ``TICK_LOOKS`` a tick;
an owner's children come from the store's owners index (``ObjectStore.owned``) exactly as a
filtered list of the namespace would give them."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from phalanx.domain.time import Instant
from phalanx.kube.controllers import PODS, WorkloadRunner
from phalanx.kube.controllers import TICK_LOOKS as LOOKS
from phalanx.kube.store import ObjectStore


def _runner(store: ObjectStore, deferred: list[Callable[[], None]]) -> WorkloadRunner:
    engine: Any = object()  # a tick reconciles nothing by itself: it only marks
    return WorkloadRunner(
        store,
        engine,
        clock=lambda: Instant(0),
        defer=deferred.append,
        log_dir="/nonexistent",
    )


def test_a_tick_marks_at_most_tick_looks_waiting_workloads_and_a_round_covers_all() -> None:
    deferred: list[Callable[[], None]] = []
    runner = _runner(ObjectStore(), deferred)
    keys = [(PODS, "ns", f"p-{i:05d}") for i in range(2 * LOOKS + LOOKS // 4)]
    runner.waiting = set(keys)
    seen: list[set[Any]] = []
    for _ in range(3):
        runner.tick()
        seen.append(set(runner.dirty))
        runner.dirty = {}
    assert [len(s) for s in seen] == [LOOKS, LOOKS, LOOKS // 4]
    assert seen[0] | seen[1] | seen[2] == set(keys)
    assert sorted(seen[0]) == keys[:LOOKS]  # in key order
    # one that stopped waiting meanwhile is skipped; the next round starts over
    runner.waiting.discard(keys[0])
    runner.tick()
    assert set(runner.dirty) == set(keys[1 : LOOKS + 1])
    assert len(deferred) == 1  # one drain scheduled, not one per key


def _obj(kind: str, name: str, labels: dict[str, str], refs: list[dict[str, Any]]) -> Any:
    api = "batch/v1" if kind == "Job" else "v1"
    spec: dict[str, Any] = {"containers": [{"name": "c", "image": "x"}]}
    if kind == "Job":
        spec = {"template": {"spec": {**spec, "restartPolicy": "Never"}}}
    meta: dict[str, Any] = {"name": name, "namespace": "default", "labels": labels}
    if refs:
        meta["ownerReferences"] = refs
    return {"apiVersion": api, "kind": kind, "metadata": meta, "spec": spec}


def test_owned_is_the_filtered_list_of_the_namespace() -> None:
    store = ObjectStore()
    job = store.create(_obj("Job", "j", {}, []))
    other = store.create(_obj("Job", "k", {}, []))
    uid, other_uid = job["metadata"]["uid"], other["metadata"]["uid"]

    def ref(u: str, controller: bool = True) -> dict[str, Any]:
        return {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "name": "j",
            "uid": u,
            "controller": controller,
        }

    store.create(_obj("Pod", "c-1", {"x": "1"}, [ref(uid)]))
    store.create(_obj("Pod", "a-1", {"x": "1"}, [ref(other_uid, False), ref(uid)]))
    store.create(_obj("Pod", "b-0", {"x": "2"}, [ref(uid)]))  # other labels
    store.create(_obj("Pod", "b-1", {"x": "1"}, [ref(uid, False)]))  # not the controller
    store.create(_obj("Pod", "b-2", {"x": "1"}, [ref(other_uid)]))  # another owner
    store.create(_obj("Pod", "b-3", {"x": "1"}, []))

    def by_scan(labels: dict[str, str] | None) -> list[Any]:
        return [
            p
            for p in store.list(PODS, "default", labels)
            if any(
                r.get("uid") == uid and r.get("controller")
                for r in p["metadata"].get("ownerReferences") or ()
            )
        ]

    for labels in (None, {"x": "1"}, {"x": "2"}, {"x": "3"}):
        assert store.owned(PODS, "default", uid, labels) == by_scan(labels)
    assert [p["metadata"]["name"] for p in store.owned(PODS, "default", uid, {"x": "1"})] == [
        "a-1",
        "c-1",
    ]
    store.delete(PODS, "default", "a-1")
    assert [p["metadata"]["name"] for p in store.owned(PODS, "default", uid)] == ["b-0", "c-1"]
    assert store.owned(PODS, "elsewhere", uid) == []
    # a copy: changing it changes nothing stored
    store.owned(PODS, "default", uid)[0]["metadata"]["name"] = "changed"
    assert store.get(PODS, "default", "b-0") is not None
