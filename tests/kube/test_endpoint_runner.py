"""The EndpointSlice controller against the object store: pods come and go, the Service goes."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from phalanx.kube.endpointrunner import ENDPOINTS, ENDPOINTSLICES, SERVICES, EndpointsRunner
from phalanx.kube.store import ObjectStore

PODS = ("", "pods")


class Deferred:
    def __init__(self) -> None:
        self.calls: list[Callable[[], None]] = []

    def __call__(self, fn: Callable[[], None]) -> None:
        self.calls.append(fn)

    def run(self) -> None:
        while self.calls:
            self.calls.pop(0)()


def pod(name: str, app: str = "web") -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default", "labels": {"app": app}},
        "spec": {"containers": [{"name": "c", "ports": [{"name": "http", "containerPort": 8000}]}]},
    }


def running(store: ObjectStore, name: str) -> None:
    current = store.get(PODS, "default", name)
    assert current is not None
    current["status"] = {"phase": "Running", "podIP": "127.0.0.1"}
    store.update_status(current)


def endpoints_of(store: ObjectStore) -> list[str]:
    found = store.list(ENDPOINTSLICES, "default", {"kubernetes.io/service-name": "web"})
    return sorted(e["targetRef"]["name"] for s in found for e in s["endpoints"])


def test_the_runner_follows_pods_and_cleans_up_after_the_service() -> None:
    store = ObjectStore()
    defer = Deferred()
    runner = EndpointsRunner(store, defer)
    runner.start()
    store.create(
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": "web", "namespace": "default"},
            "spec": {"selector": {"app": "web"}, "ports": [{"port": 80, "targetPort": "http"}]},
        }
    )
    defer.run()
    assert endpoints_of(store) == []  # the placeholder slice
    for name in ("a", "b"):
        store.create(pod(name))
        running(store, name)
    store.create(pod("db", app="db"))
    running(store, "db")
    defer.run()
    assert endpoints_of(store) == ["a", "b"]
    legacy = store.get(ENDPOINTS, "default", "web")
    assert legacy is not None
    assert [a["targetRef"]["name"] for a in legacy["subsets"][0]["addresses"]] == ["a", "b"]
    reconciles = runner.reconciles
    defer.run()
    assert runner.reconciles == reconciles  # nothing dirty, nothing done
    store.delete(PODS, "default", "a")
    defer.run()
    assert endpoints_of(store) == ["b"]
    store.delete(SERVICES, "default", "web")
    defer.run()
    assert store.list(ENDPOINTSLICES, "default") == []
    assert store.get(ENDPOINTS, "default", "web") is None


def test_existing_services_are_reconciled_at_start() -> None:
    store = ObjectStore()
    store.create(pod("a"))
    running(store, "a")
    store.create(
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": "web", "namespace": "default"},
            "spec": {"selector": {"app": "web"}, "ports": [{"port": 80, "targetPort": 8000}]},
        }
    )
    defer = Deferred()
    EndpointsRunner(store, defer).start()
    defer.run()
    assert endpoints_of(store) == ["a"]
