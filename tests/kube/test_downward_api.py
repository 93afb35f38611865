"""The Downward API in the pods controllers make (a Job's, a PyTorchJob's gang, a
ReplicaSet's): ``fieldRef`` variables hold the stored pod's own uid, name, namespace and
labels, and the node it runs on (``spec.nodeName``) and its address (``status.podIP``),
in the environment and, through ``$(VAR)``, in the argv."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from test_workload_runner import Loop, world  # noqa: F401 (the fixture)

from phalanx.kube.controllers import JOBS, PODS, PYTORCHJOBS, REPLICASETS, WorkloadRunner, log_path
from phalanx.kube.store import ObjectStore
from phalanx.testing.live import LiveStack

World = tuple[ObjectStore, WorkloadRunner, Loop, LiveStack]

FIELDS = [
    ("POD_UID", "metadata.uid"),
    ("POD_NAME", "metadata.name"),
    ("POD_NAMESPACE", "metadata.namespace"),
    ("NODE", "spec.nodeName"),
    ("POD_IP", "status.podIP"),
    ("HOST_IP", "status.hostIP"),
    ("APP", "metadata.labels['app']"),
]
SCRIPT = 'echo "$POD_UID $POD_NAME $POD_NAMESPACE $NODE $POD_IP $HOST_IP $APP $(NODE)"; sleep 30'


def _template(restart: str) -> dict[str, Any]:
    env = [{"name": n, "valueFrom": {"fieldRef": {"fieldPath": p}}} for n, p in FIELDS]
    return {
        "metadata": {"labels": {"app": "downward"}},
        "spec": {
            "restartPolicy": restart,
            "containers": [
                {"name": "main", "image": "busybox", "command": ["sh", "-c", SCRIPT], "env": env}
            ],
        },
    }


def _job() -> dict[str, Any]:
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "dj", "namespace": "default"},
        "spec": {"template": _template("Never")},
    }


def _pytorchjob() -> dict[str, Any]:
    return {
        "apiVersion": "kubeflow.org/v1",
        "kind": "PyTorchJob",
        "metadata": {"name": "dp", "namespace": "default"},
        "spec": {
            "pytorchReplicaSpecs": {
                kind: {"replicas": 1, "restartPolicy": "Never", "template": _template("Never")}
                for kind in ("Master", "Worker")
            }
        },
    }


def _replicaset() -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {"name": "dr", "namespace": "default"},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"app": "downward"}},
            "template": _template("Always"),
        },
    }


@pytest.mark.parametrize(
    ("make", "resource"),
    [(_job, JOBS), (_pytorchjob, PYTORCHJOBS), (_replicaset, REPLICASETS)],
)
def test_field_refs_hold_the_stored_pods_own_values(
    world: World,  # noqa: F811
    make: Callable[[], dict[str, Any]],
    resource: Any,
) -> None:
    store, _runner, loop, _stack = world
    made = store.create(make())
    name = made["metadata"]["name"]

    def mine() -> list[dict[str, Any]]:
        return [
            p
            for p in store.list(PODS, "default")
            if p["metadata"]["name"].startswith(name + "-")
            and (p.get("status") or {}).get("phase") == "Running"
        ]

    def written() -> bool:
        pods = mine()
        return bool(pods) and all(
            (path := log_path(p)) is not None and path.exists() and path.read_text().strip()
            for p in pods
        )

    assert loop.run(written, 30)
    for pod in mine():
        path = log_path(pod)
        assert path is not None
        words = path.read_text().split()
        meta = pod["metadata"]
        node = pod["spec"]["nodeName"]
        address = pod["status"]["podIP"]
        assert node and address
        assert words == [
            meta["uid"],
            meta["name"],
            "default",
            node,
            address,
            pod["status"]["hostIP"],
            "downward",
            node,
        ]
    store.delete(resource, "default", name)
