"""Kueue's suspension for PyTorchJob, JobSet and Volcano Job, carried out by the workload
runner against the live controller under a ClusterQueue of 1 CPU: a queued workload is
created suspended and has no pods until the engine admits it; its Workload says why it
waits; a preempted one is suspended again and its pods go, its engine job keeping its place."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from runner_loop import Loop

from phalanx.config.clusterspec import regular_cluster
from phalanx.config.queues import queues_from_file
from phalanx.domain.caller import Caller
from phalanx.kube.controllers import JOBS, JOBSETS, PODS, PYTORCHJOBS, VCJOBS, WorkloadRunner
from phalanx.kube.kueue_workloads import ENGINE_JOBS, WORKLOADS
from phalanx.kube.store import ObjectStore
from phalanx.live.controller import Controller
from phalanx.policies.catalog import POLICIES
from phalanx.runtime import MemoryJournal
from phalanx.testing.live import LiveStack, LocalAgents
from phalanx.workloads.kueue_workload import JOB_UID_LABEL

QUEUES = """\
apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata: {name: default-flavor}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: cluster-queue}
spec:
  namespaceSelector: {}
  preemption: {withinClusterQueue: LowerPriority}
  resourceGroups:
  - coveredResources: [cpu, memory]
    flavors:
    - name: default-flavor
      resources:
      - {name: cpu, nominalQuota: 1}
      - {name: memory, nominalQuota: 36Gi}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {namespace: default, name: user-queue}
spec: {clusterQueue: cluster-queue}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: WorkloadPriorityClass
metadata: {name: high}
value: 1000
"""

CONTAINER = {
    "name": "main",
    "image": "busybox",
    "resources": {"requests": {"cpu": "1", "memory": "200Mi"}},
}


class World:
    """The controller, its agents and the object store, with runners started on demand."""

    def __init__(self, tmp_path: Path) -> None:
        path = tmp_path / "queues.yaml"
        path.write_text(QUEUES)
        queues = queues_from_file(str(path))
        cluster = dataclasses.replace(regular_cluster(2, 1, 2), queues=queues)
        journal = MemoryJournal()
        self.controller = Controller(cluster, POLICIES["phalanx"], journal, run_as_submitter=False)
        self.controller.recover()
        self.stack = LiveStack(self.controller, LocalAgents(self.controller), journal)
        self.store = ObjectStore()
        self.loop = Loop(self.stack)
        self.tmp_path = tmp_path
        self.live: list[WorkloadRunner] = []

    def runner(self) -> WorkloadRunner:
        """A runner as a controller starts one; ``stop`` disconnects it (a restart)."""
        runner = WorkloadRunner(
            self.store,
            self.controller,
            clock=self.controller.clock.now,
            defer=self.loop.defer,
            log_dir=str(self.tmp_path / "logs"),
            workdir=str(self.tmp_path),
            default_user="tester",
            known_user=lambda _user: True,
        )
        self.live.append(runner)
        runner.start(lambda cb: self.controller.watch(lambda ids: self._cue(runner, cb, ids)))
        return runner

    def _cue(self, runner: WorkloadRunner, cb: Callable[[set[int]], None], ids: set[int]) -> None:
        if runner in self.live:
            cb(ids)

    def stop(self, runner: WorkloadRunner) -> None:
        self.live.remove(runner)
        self.store.unsubscribe(runner.on_object)

    def close(self) -> None:
        for resource in (JOBS, PYTORCHJOBS, JOBSETS, VCJOBS):
            for obj in self.store.list(resource):
                if not (obj["metadata"].get("ownerReferences")):
                    meta = obj["metadata"]
                    self.store.delete(resource, meta["namespace"], meta["name"])
        admin = Caller(0, "root", admin=True)
        for job in self.controller.jobs():
            self.controller.cancel(job.id, admin)
        tasks = self.stack.agents.runner
        assert self.loop.run(lambda: not tasks.running_count() and not tasks.unreaped(), 30)


@pytest.fixture
def bare(tmp_path: Path) -> Iterator[World]:
    w = World(tmp_path)
    for doc in QUEUES.split("---\n"):
        w.store.create(yaml.safe_load(doc))
    yield w
    w.close()


@pytest.fixture
def world(bare: World) -> tuple[ObjectStore, Loop]:
    bare.runner()
    return bare.store, bare.loop


def _command(seconds: float) -> dict[str, Any]:
    return {**CONTAINER, "command": ["/bin/sh", "-c", f"sleep {seconds}"]}


def batch_job(name: str, seconds: float, priority: str | None = None) -> dict[str, Any]:
    labels = {"kueue.x-k8s.io/queue-name": "user-queue"}
    if priority is not None:
        labels["kueue.x-k8s.io/priority-class"] = priority
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name, "namespace": "default", "labels": labels},
        "spec": {
            "template": {"spec": {"containers": [_command(seconds)], "restartPolicy": "Never"}}
        },
    }


def pytorchjob(name: str, seconds: float) -> dict[str, Any]:
    return {
        "apiVersion": "kubeflow.org/v1",
        "kind": "PyTorchJob",
        "metadata": {
            "name": name,
            "namespace": "default",
            "labels": {"kueue.x-k8s.io/queue-name": "user-queue"},
        },
        "spec": {
            "pytorchReplicaSpecs": {
                "Master": {
                    "replicas": 1,
                    "restartPolicy": "OnFailure",
                    "template": {"spec": {"containers": [_command(seconds)]}},
                }
            }
        },
    }


def jobset(name: str, seconds: float) -> dict[str, Any]:
    return {
        "apiVersion": "jobset.x-k8s.io/v1alpha2",
        "kind": "JobSet",
        "metadata": {
            "name": name,
            "namespace": "default",
            "labels": {"kueue.x-k8s.io/queue-name": "user-queue"},
        },
        "spec": {
            "replicatedJobs": [
                {
                    "name": "w",
                    "replicas": 1,
                    "template": {
                        "spec": {
                            "parallelism": 1,
                            "completions": 1,
                            "template": {
                                "spec": {
                                    "containers": [_command(seconds)],
                                    "restartPolicy": "Never",
                                }
                            },
                        }
                    },
                }
            ]
        },
    }


def vcjob(name: str, seconds: float) -> dict[str, Any]:
    return {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": {
            "name": name,
            "namespace": "default",
            "labels": {"kueue.x-k8s.io/queue-name": "user-queue"},
        },
        "spec": {
            "minAvailable": 1,
            "tasks": [
                {
                    "name": "t",
                    "replicas": 1,
                    "template": {
                        "spec": {"containers": [_command(seconds)], "restartPolicy": "Never"}
                    },
                }
            ],
        },
    }


def workload_of(store: ObjectStore, resource: Any, name: str) -> dict[str, Any] | None:
    found = store.get(resource, "default", name)
    if found is None:
        return None
    owned = store.list(WORKLOADS, "default", {JOB_UID_LABEL: found["metadata"]["uid"]})
    return owned[0] if owned else None


def cond(obj: dict[str, Any] | None, kind: str) -> dict[str, Any]:
    for c in ((obj or {}).get("status") or {}).get("conditions") or ():
        if c["type"] == kind:
            return dict(c)
    return {}


def pods_of(store: ObjectStore, owner: str) -> list[str]:
    """Names of the stored pods whose name begins with ``owner-``."""
    return sorted(
        p["metadata"]["name"]
        for p in store.list(PODS, "default")
        if p["metadata"]["name"].startswith(owner + "-")
    )


def suspend_of(obj: dict[str, Any] | None) -> object:
    spec = (obj or {}).get("spec") or {}
    if (obj or {}).get("kind") == "PyTorchJob":
        return (spec.get("runPolicy") or {}).get("suspend")
    return spec.get("suspend")


@pytest.mark.parametrize(
    ("resource", "make", "pod_set"),
    [
        (PYTORCHJOBS, pytorchjob, "master"),
        (JOBSETS, jobset, "w"),
        (VCJOBS, vcjob, "t"),
    ],
)
def test_a_queued_workload_has_no_pods_until_the_engine_admits_it(
    world: tuple[ObjectStore, Loop],
    resource: Any,
    make: Callable[[str, float], dict[str, Any]],
    pod_set: str,
) -> None:
    store, loop = world
    store.create(batch_job("holder", 60))  # holds the ClusterQueue's 1 CPU
    assert loop.run(lambda: len(pods_of(store, "holder")) == 1, 20)
    made = store.create(make("waits", 1))
    if resource != VCJOBS:  # Volcano's Job has no suspend flag
        assert suspend_of(made) is True  # Kueue's webhook
    assert loop.run(lambda: cond(workload_of(store, resource, "waits"), "QuotaReserved"), 20)
    pending = cond(workload_of(store, resource, "waits"), "QuotaReserved")
    assert pending["status"] == "False" and pending["reason"] == "Pending"
    assert pending["message"].startswith(f"couldn't assign flavors to pod set {pod_set}: ")
    loop.run(lambda: False, 1)  # a second of passes: still nothing
    assert pods_of(store, "waits") == []
    if resource != VCJOBS:
        assert suspend_of(store.get(resource, "default", "waits")) is True

    store.delete(JOBS, "default", "holder")
    assert loop.run(
        lambda: cond(workload_of(store, resource, "waits"), "Admitted").get("status") == "True",
        20,
    )
    assert loop.run(lambda: len(pods_of(store, "waits")) == 1, 10)
    if resource != VCJOBS:
        assert loop.run(lambda: suspend_of(store.get(resource, "default", "waits")) is False, 10)
    assert loop.run(
        lambda: cond(workload_of(store, resource, "waits"), "Finished").get("status") == "True",
        30,
    )


def test_a_preempted_pytorchjob_is_suspended_again_and_its_pods_go(
    world: tuple[ObjectStore, Loop],
) -> None:
    store, loop = world
    store.create(pytorchjob("low", 120))
    assert loop.run(lambda: len(pods_of(store, "low")) == 1, 20)
    assert loop.run(lambda: suspend_of(store.get(PYTORCHJOBS, "default", "low")) is False, 10)
    uid = store.get(PODS, "default", "low-master-0")["metadata"]["uid"]  # type: ignore[index]

    store.create(batch_job("urgent", 2, priority="high"))
    assert loop.run(
        lambda: cond(workload_of(store, PYTORCHJOBS, "low"), "Evicted").get("status") == "True",
        20,
    )
    evicted = cond(workload_of(store, PYTORCHJOBS, "low"), "Evicted")
    assert evicted["reason"] == "Preempted"
    assert loop.run(lambda: pods_of(store, "low") == [], 10)
    assert loop.run(lambda: suspend_of(store.get(PYTORCHJOBS, "default", "low")) is True, 10)

    # the urgent job done, the PyTorchJob is admitted again: the same pod, the same uid
    assert loop.run(lambda: pods_of(store, "low") == ["low-master-0"], 30)
    again = store.get(PODS, "default", "low-master-0")
    assert again is not None and again["metadata"]["uid"] == uid
    assert loop.run(
        lambda: cond(workload_of(store, PYTORCHJOBS, "low"), "Admitted").get("status") == "True",
        10,
    )
    assert loop.run(lambda: suspend_of(store.get(PYTORCHJOBS, "default", "low")) is False, 10)


def test_a_restarted_runner_cancels_the_engine_job_of_pods_held_before(bare: World) -> None:
    store, loop = bare.store, bare.loop
    first = bare.runner()
    store.create(batch_job("holder", 60))
    assert loop.run(lambda: len(pods_of(store, "holder")) == 1, 20)
    store.create(batch_job("waits", 1))
    assert loop.run(lambda: ENGINE_JOBS in _notes(workload_of(store, JOBS, "waits")), 20)
    (before,) = [int(i) for i in _notes(workload_of(store, JOBS, "waits"))[ENGINE_JOBS].split(",")]
    assert pods_of(store, "waits") == []

    bare.stop(first)  # the controller restarts: the held pod was in its memory
    second = bare.runner()
    assert loop.run(
        lambda: len(_notes(workload_of(store, JOBS, "waits")).get(ENGINE_JOBS, "").split(",")) == 2,
        20,
    )  # its Job made its pod again, under a new key: a second engine job, both named
    assert second.sweep() == [before]
    (old,) = bare.controller.jobs(finished=True, ids=[before])
    assert old.state.is_final
    assert second.sweep() == []

    store.delete(JOBS, "default", "holder")
    assert loop.run(
        lambda: cond(workload_of(store, JOBS, "waits"), "Finished").get("status") == "True", 30
    )
    assert len(pods_of(store, "waits")) == 1
    ran = [j for j in bare.controller.jobs(finished=True) if j.spec.name == "waits"]
    assert sorted(j.state.value for j in ran) == ["CANCELLED", "COMPLETED"]


def _notes(obj: dict[str, Any] | None) -> dict[str, str]:
    return dict(((obj or {}).get("metadata") or {}).get("annotations") or {})


def test_a_restarted_runner_keeps_a_pending_pytorchjobs_engine_job(bare: World) -> None:
    """A PyTorchJob's pods come back under the same submission key: the engine answers them
    with the job it has, which keeps its place and is not swept."""
    store, loop = bare.store, bare.loop
    first = bare.runner()
    store.create(batch_job("holder", 60))
    assert loop.run(lambda: len(pods_of(store, "holder")) == 1, 20)
    store.create(pytorchjob("waits", 1))
    assert loop.run(lambda: ENGINE_JOBS in _notes(workload_of(store, PYTORCHJOBS, "waits")), 20)
    before = _notes(workload_of(store, PYTORCHJOBS, "waits"))[ENGINE_JOBS]

    bare.stop(first)
    second = bare.runner()
    loop.run(lambda: False, 1)
    assert second.sweep() == []
    assert _notes(workload_of(store, PYTORCHJOBS, "waits"))[ENGINE_JOBS] == before
    store.delete(JOBS, "default", "holder")
    assert loop.run(
        lambda: cond(workload_of(store, PYTORCHJOBS, "waits"), "Finished").get("status") == "True",
        30,
    )
    ran = [j for j in bare.controller.jobs(finished=True) if j.spec.name == "waits"]
    assert [(j.id, j.state.value) for j in ran] == [(int(before), "COMPLETED")]
