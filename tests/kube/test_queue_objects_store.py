"""Queue objects in the object store feed the live controller's engine (``QueueObjects``):
created, changed and deleted, journaled as ``QueuesChange``; the ClusterQueue's status comes
from the engine; a dangling flavor makes the queue inactive. And the Workload views of
Slurm jobs and of the other kinds (``WorkloadViews``)."""

from __future__ import annotations

import copy
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from phalanx.config.clusterspec import regular_cluster
from phalanx.domain.caller import Caller
from phalanx.domain.time import HOUR
from phalanx.engine import QueuesChange
from phalanx.kube.errors import Invalid
from phalanx.kube.kinds import by_kind
from phalanx.kube.queueobjects import QUEUE_RESOURCES, QueueObjects, admit
from phalanx.kube.queuestatus import QueueStatus
from phalanx.kube.store import ObjectStore
from phalanx.kube.workload_views import SLURM_JOB_LABEL, WorkloadViews, finished_of, pod_sets
from phalanx.live.controller import Controller
from phalanx.policies.catalog import POLICIES
from phalanx.runtime import MemoryJournal
from phalanx.testing import make_job
from phalanx.testing.live import LiveStack, LocalAgents

KUEUE = "kueue.x-k8s.io/v1beta2"
FLAVOR: dict[str, Any] = {
    "apiVersion": KUEUE,
    "kind": "ResourceFlavor",
    "metadata": {"name": "default-flavor"},
}
LOCAL: dict[str, Any] = {
    "apiVersion": KUEUE,
    "kind": "LocalQueue",
    "metadata": {"name": "default", "namespace": "default"},
    "spec": {"clusterQueue": "cq"},
}


def cluster_queue(cpus: int) -> dict[str, Any]:
    flavor = {"name": "default-flavor", "resources": [{"name": "cpu", "nominalQuota": cpus}]}
    return {
        "apiVersion": KUEUE,
        "kind": "ClusterQueue",
        "metadata": {"name": "cq"},
        "spec": {
            "namespaceSelector": {},
            "resourceGroups": [{"coveredResources": ["cpu"], "flavors": [flavor]}],
        },
    }


class World:
    def __init__(self, tmp_path: Path) -> None:
        self.journal = MemoryJournal()
        self.controller = Controller(
            regular_cluster(2, 1, 2), POLICIES["phalanx"], self.journal, run_as_submitter=False
        )
        self.controller.recover()
        self.stack = LiveStack(self.controller, LocalAgents(self.controller), self.journal)
        self.store = ObjectStore()
        self.calls: list[Any] = []
        self.queues = QueueObjects(
            self.store,
            lambda: self.controller.cluster,
            lambda event: self.controller.loop.accept([event]),
            now=self.controller.clock.now,
            defer=lambda fn: self.calls.append(fn),
            status=QueueStatus(self.store, self.controller.jobs),
        )
        self.queues.start()

    def until(self, check: Any, timeout: float = 30) -> bool:
        deadline = time.monotonic() + timeout
        while not check():
            if time.monotonic() > deadline:
                return False
            self.settle()
            time.sleep(0.02)
        return True

    def settle(self) -> None:
        while self.calls:
            calls, self.calls = self.calls, []
            for fn in calls:
                fn()
        self.controller.loop.settle()
        self.stack.step()

    def cq_status(self) -> dict[str, Any]:
        found = self.store.get(QUEUE_RESOURCES["ClusterQueue"], None, "cq") or {}
        return dict(found.get("status") or {})


@pytest.fixture
def world(tmp_path: Path) -> Iterator[World]:
    w = World(tmp_path)
    yield w
    admin = Caller(0, "root", admin=True)
    for job in w.controller.jobs():
        w.controller.cancel(job.id, admin)
    tasks = w.stack.agents.runner
    assert w.until(lambda: not tasks.running_count() and not tasks.unreaped())


def active(obj: dict[str, Any]) -> tuple[str, str]:
    for c in (obj.get("status") or {}).get("conditions") or ():
        if c["type"] == "Active":
            return c["status"], c["reason"]
    return "", ""


def test_queue_objects_become_the_engines_queues_and_follow_changes(world: World) -> None:
    for obj in (FLAVOR, cluster_queue(1), LOCAL):
        world.store.create(copy.deepcopy(obj))
    world.settle()
    queues = world.controller.cluster.queues
    assert list(queues.cluster_queues) == ["cq"]
    assert queues.cluster_queues["cq"].resource_groups[0].flavors[0].resources[0].nominal == 1000
    assert active(world.store.get(QUEUE_RESOURCES["ClusterQueue"], None, "cq") or {}) == (
        "True",
        "Ready",
    )
    spec = make_job(
        gpus=0, account="default", cpus_per_task=1, time_limit=HOUR, command=("sleep", "60")
    )
    world.controller.submit([spec, spec])
    world.settle()
    world.queues.tick()
    status = world.cq_status()
    assert (status["pendingWorkloads"], status["admittedWorkloads"]) == (1, 1)
    assert status["flavorsReservation"][0]["resources"][0] == {
        "name": "cpu",
        "total": "1",
        "borrowed": "0",
    }

    current = world.store.get(QUEUE_RESOURCES["ClusterQueue"], None, "cq")
    assert current is not None
    current["spec"] = cluster_queue(2)["spec"]
    world.store.update(current)
    world.settle()
    world.settle()
    world.queues.tick()
    assert (world.cq_status()["pendingWorkloads"], world.cq_status()["admittedWorkloads"]) == (0, 2)
    changes = [e for e in world.journal.events if isinstance(e, QueuesChange)]
    assert len(changes) == 2


def test_a_status_write_is_no_queue_change(world: World) -> None:
    for obj in (FLAVOR, cluster_queue(1)):
        world.store.create(copy.deepcopy(obj))
    world.settle()
    before = len(world.journal.events)
    world.queues.tick()
    world.settle()
    assert len(world.journal.events) == before


def test_deleting_the_flavor_makes_the_queue_inactive(world: World) -> None:
    for obj in (FLAVOR, cluster_queue(1), LOCAL):
        world.store.create(copy.deepcopy(obj))
    world.settle()
    world.store.delete(QUEUE_RESOURCES["ResourceFlavor"], None, "default-flavor")
    world.settle()
    assert not world.controller.cluster.queues.cluster_queues
    cq = world.store.get(QUEUE_RESOURCES["ClusterQueue"], None, "cq") or {}
    assert active(cq) == ("False", "FlavorNotFound")
    lq = world.store.get(QUEUE_RESOURCES["LocalQueue"], "default", "default") or {}
    assert active(lq) == ("False", "ClusterQueueIsInactive")


def test_seeded_objects_are_made_once() -> None:
    store = ObjectStore()
    queues = QueueObjects(
        store, regular_cluster, lambda e: None, now=lambda: 0, defer=lambda f: None
    )
    assert queues.seed([FLAVOR, cluster_queue(3), LOCAL]) == 3
    assert queues.seed([FLAVOR, cluster_queue(5), LOCAL]) == 0
    assert store.get(QUEUE_RESOURCES["LocalQueue"], "default", "default") is not None


def test_admission_refuses_what_a_queues_file_could_not_hold() -> None:
    kind = by_kind(KUEUE, "ClusterQueue")
    assert kind is not None
    with pytest.raises(Invalid) as caught:
        admit(kind, cluster_queue(-1))
    assert caught.value.code == 422
    [cause] = caught.value.causes
    assert cause[0] == "spec.resourceGroups[0].flavors[0].resources[0].nominalQuota"
    admit(kind, cluster_queue(1))
    other = by_kind("v1", "ConfigMap")
    assert other is not None
    admit(other, {"metadata": {"name": "anything"}, "bogus": -1})


def test_slurm_jobs_have_workloads_in_their_accounts_namespace(world: World) -> None:
    views = WorkloadViews(world.store, world.controller, world.controller.clock.now)
    spec = make_job(
        gpus=0, account="physics", cpus_per_task=1, time_limit=HOUR, command=("sleep", "60")
    )
    [[job_id]] = world.controller.submit([spec])
    world.settle()
    views.tick()
    [view] = world.store.list(("kueue.x-k8s.io", "workloads"), "physics")
    assert view["metadata"]["name"] == f"slurm-{job_id}"
    assert view["metadata"]["labels"] == {SLURM_JOB_LABEL: str(job_id)}
    conditions = {c["type"]: c["status"] for c in view["status"]["conditions"]}
    assert conditions["Admitted"] == "True"
    world.controller.cancel(job_id, Caller(0, "root", admin=True))
    assert world.until(lambda: world.controller.jobs(finished=True)[0].state.is_final)
    views.tick()
    [view] = world.store.list(("kueue.x-k8s.io", "workloads"), "physics")
    finished = [c for c in view["status"]["conditions"] if c["type"] == "Finished"]
    assert finished[0]["status"] == "True" and finished[0]["reason"] == "Failed"


def test_pod_sets_and_ends_of_the_other_kinds() -> None:
    pytorch = {
        "kind": "PyTorchJob",
        "spec": {"pytorchReplicaSpecs": {"Master": {"replicas": 1}, "Worker": {"replicas": 3}}},
        "status": {"conditions": [{"type": "Succeeded", "status": "True", "message": "done"}]},
    }
    assert [(p["name"], p["count"]) for p in pod_sets(pytorch)] == [("master", 1), ("worker", 3)]
    assert finished_of(pytorch) == (True, "done")
    jobset = {
        "kind": "JobSet",
        "spec": {
            "replicatedJobs": [
                {"name": "w", "replicas": 2, "template": {"spec": {"parallelism": 4}}}
            ]
        },
    }
    assert [(p["name"], p["count"]) for p in pod_sets(jobset)] == [("w", 8)]
    assert finished_of(jobset) is None
    vcjob = {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "spec": {"tasks": [{"name": "ps", "replicas": 2}]},
        "status": {"state": {"phase": "Failed"}},
    }
    assert [(p["name"], p["count"]) for p in pod_sets(vcjob)] == [("ps", 2)]
    assert finished_of(vcjob) == (False, "Job failed")


def test_slurm_job_views_are_written_a_bounded_number_a_tick(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    from phalanx.kube import workload_views

    monkeypatch.setattr(workload_views, "WRITES_PER_TICK", 1)
    views = WorkloadViews(world.store, world.controller, world.controller.clock.now)
    spec = make_job(gpus=0, account="physics", cpus_per_task=1, time_limit=HOUR)
    world.controller.submit([spec, spec])
    world.controller.loop.settle()
    views.tick()
    assert len(world.store.list(("kueue.x-k8s.io", "workloads"), "physics")) == 1
    views.tick()
    assert len(world.store.list(("kueue.x-k8s.io", "workloads"), "physics")) == 2


def test_slurm_job_views_are_found_by_name_not_by_scanning_every_workload(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A label selector scans every Workload of the namespace: one per job written, 500 a
    # tick, made the views a third of the controller's CPU under a stream of submissions.
    workloads = ("kueue.x-k8s.io", "workloads")
    views = WorkloadViews(world.store, world.controller, world.controller.clock.now)
    spec = make_job(gpus=0, account="physics", cpus_per_task=1, time_limit=HOUR, hold=True)
    ids = [i for [i] in world.controller.submit([spec] * 40)]
    world.settle()
    scans: list[Any] = []
    listing = world.store.list

    def counting(resource: Any, namespace: Any = None, labels: Any = None, **kw: Any) -> Any:
        if resource == workloads and labels:
            scans.append(labels)
        return listing(resource, namespace, labels, **kw)

    monkeypatch.setattr(world.store, "list", counting)
    views.tick()
    assert len(listing(workloads, "physics")) == 40
    admin = Caller(0, "root", admin=True)
    for job_id in ids:
        world.controller.cancel(job_id, admin)
    world.settle()
    views.tick()
    stored = listing(workloads, "physics")
    assert sorted(v["metadata"]["name"] for v in stored) == sorted(f"slurm-{i}" for i in ids)
    for view in stored:
        finished = [c for c in view["status"]["conditions"] if c["type"] == "Finished"]
        assert finished and finished[0]["status"] == "True", view["status"]
    assert scans == []


def test_a_slurm_job_view_deleted_behind_its_back_is_written_again(world: World) -> None:
    workloads = ("kueue.x-k8s.io", "workloads")
    views = WorkloadViews(world.store, world.controller, world.controller.clock.now)
    spec = make_job(gpus=0, account="physics", cpus_per_task=1, time_limit=HOUR, hold=True)
    [[job_id]] = world.controller.submit([spec])
    world.settle()
    views.tick()
    world.store.delete(workloads, "physics", f"slurm-{job_id}")
    world.controller.cancel(job_id, Caller(0, "root", admin=True))
    world.settle()
    views.tick()
    [view] = world.store.list(workloads, "physics")
    assert view["metadata"]["labels"] == {SLURM_JOB_LABEL: str(job_id)}
    assert any(c["type"] == "Finished" for c in view["status"]["conditions"])
