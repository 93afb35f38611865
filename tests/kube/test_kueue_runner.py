"""Kueue's integration for ``batch/v1`` Job, carried out by the workload runner against the
live controller under ClusterQueues: a queued Job is suspended until the engine admits it, its
Workload says why it waits in Kueue's words, and deleting the Job that holds the quota admits
the next."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from runner_loop import Loop

from phalanx.config.clusterspec import regular_cluster
from phalanx.config.queues import queues_from_file
from phalanx.domain.caller import Caller
from phalanx.kube.controllers import JOBS, WorkloadRunner
from phalanx.kube.kinds import by_kind
from phalanx.kube.kueue_workloads import CLUSTER_QUEUES, LOCAL_QUEUES, WORKLOADS
from phalanx.kube.queuestatus import QueueStatus
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
"""
ORPHAN = """\
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {namespace: default, name: orphan-queue}
spec: {clusterQueue: no-such-cq}
"""
"""Stored only: the engine's set-up refuses a LocalQueue of an unknown ClusterQueue, as
``phalanx up --queues`` does, while the API server stores one (Kueue shows it inactive)."""


@pytest.fixture
def world(tmp_path: Path) -> Iterator[tuple[ObjectStore, Loop]]:
    path = tmp_path / "queues.yaml"
    path.write_text(QUEUES)
    cluster = dataclasses.replace(regular_cluster(2, 1, 2), queues=queues_from_file(str(path)))
    journal = MemoryJournal()
    controller = Controller(cluster, POLICIES["phalanx"], journal, run_as_submitter=False)
    controller.recover()
    stack = LiveStack(controller, LocalAgents(controller), journal)
    store = ObjectStore()
    loop = Loop(stack)
    runner = WorkloadRunner(
        store,
        controller,
        clock=controller.clock.now,
        defer=loop.defer,
        log_dir=str(tmp_path / "logs"),
        workdir=str(tmp_path),
        default_user="tester",
        known_user=lambda _user: True,
    )
    runner.start(controller.watch)
    for doc in (QUEUES + "---\n" + ORPHAN).split("---\n"):
        store.create(yaml.safe_load(doc))
    yield store, loop
    for obj in store.list(JOBS):
        store.delete(JOBS, obj["metadata"]["namespace"], obj["metadata"]["name"])
    admin = Caller(0, "root", admin=True)
    for job in controller.jobs():
        controller.cancel(job.id, admin)
    tasks = stack.agents.runner
    assert loop.run(lambda: not tasks.running_count() and not tasks.unreaped(), 30)


def job(name: str, queue: str, seconds: int, cpu: str = "1") -> dict[str, Any]:
    obj: dict[str, Any] = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": name,
            "namespace": "default",
            "labels": {"kueue.x-k8s.io/queue-name": queue},
        },
        "spec": {
            "template": {
                "spec": {
                    "containers": [
                        {
                            "name": "main",
                            "image": "busybox",
                            "command": ["/bin/sh", "-c", f"sleep {seconds}"],
                            "resources": {"requests": {"cpu": cpu, "memory": "200Mi"}},
                        }
                    ],
                    "restartPolicy": "Never",
                }
            }
        },
    }
    return obj


def workload_of(store: ObjectStore, name: str) -> dict[str, Any] | None:
    found = store.get(JOBS, "default", name)
    if found is None:
        return None
    owned = store.list(WORKLOADS, "default", {JOB_UID_LABEL: found["metadata"]["uid"]})
    return owned[0] if owned else None


def cond(obj: dict[str, Any] | None, kind: str) -> dict[str, Any]:
    for c in ((obj or {}).get("status") or {}).get("conditions") or ():
        if c["type"] == kind:
            return dict(c)
    return {}


def suspended(store: ObjectStore, name: str) -> bool:
    return bool(((store.get(JOBS, "default", name) or {}).get("spec") or {}).get("suspend"))


def test_a_queued_job_is_created_suspended_and_admitted_by_the_engine(
    world: tuple[ObjectStore, Loop],
) -> None:
    store, loop = world
    made = store.create(job("first", "user-queue", 30))
    assert made["spec"]["suspend"] is True  # Kueue's webhook
    assert loop.run(
        lambda: cond(workload_of(store, "first"), "Admitted").get("status") == "True", 20
    )
    wl = workload_of(store, "first")
    assert wl is not None
    assert wl["metadata"]["name"].startswith("job-first-")
    assert wl["metadata"]["ownerReferences"][0]["uid"] == made["metadata"]["uid"]
    assert wl["spec"]["queueName"] == "user-queue"
    assert wl["spec"]["podSets"][0]["count"] == 1
    admission = wl["status"]["admission"]
    assert admission["clusterQueue"] == "cluster-queue"
    assert admission["podSetAssignments"][0]["flavors"] == {
        "cpu": "default-flavor",
        "memory": "default-flavor",
    }
    assert admission["podSetAssignments"][0]["resourceUsage"] == {"cpu": "1", "memory": "200Mi"}
    assert cond(wl, "QuotaReserved")["message"] == "Quota reserved in ClusterQueue cluster-queue"
    assert loop.run(lambda: not suspended(store, "first"), 10)

    # over quota: suspended, QuotaReserved False with the reason
    store.create(job("second", "user-queue", 1))
    assert loop.run(lambda: cond(workload_of(store, "second"), "QuotaReserved") != {}, 20)
    pending = cond(workload_of(store, "second"), "QuotaReserved")
    assert pending["status"] == "False" and pending["reason"] == "Pending"
    assert pending["message"].startswith("couldn't assign flavors to pod set main: ")
    assert "1 CPUs more needed" in pending["message"] and "expected start" not in pending["message"]
    assert suspended(store, "second")
    assert cond(workload_of(store, "second"), "Admitted") == {}
    # the queues' status is the engine's (written every tick by the server)
    controller = loop.stack.controller
    QueueStatus(store, controller.jobs).write(controller.cluster)
    lq = (store.get(LOCAL_QUEUES, "default", "user-queue") or {}).get("status", {})
    assert (lq.get("pendingWorkloads"), lq.get("admittedWorkloads")) == (1, 1)
    assert lq["flavorsUsage"][0]["resources"][0] == {"name": "cpu", "total": "1"}
    cq = store.get(CLUSTER_QUEUES, None, "cluster-queue") or {}
    assert cq.get("status", {}).get("reservingWorkloads") == 1
    assert cq["status"]["pendingWorkloads"] == 1

    # the quota freed: the second is admitted, unsuspended and runs to completion
    store.delete(JOBS, "default", "first")
    assert loop.run(
        lambda: cond(workload_of(store, "second"), "Admitted").get("status") == "True", 20
    )
    assert loop.run(lambda: not suspended(store, "second"), 10)
    assert loop.run(
        lambda: cond(workload_of(store, "second"), "Finished").get("status") == "True", 30
    )
    assert cond(workload_of(store, "second"), "Finished")["reason"] == "Succeeded"


@pytest.mark.parametrize(
    ("queue", "message"),
    [
        ("missing-queue", "LocalQueue missing-queue doesn't exist"),
        ("orphan-queue", "ClusterQueue no-such-cq doesn't exist"),
    ],
)
def test_a_job_of_a_missing_queue_stays_pending_and_says_why(
    world: tuple[ObjectStore, Loop], queue: str, message: str
) -> None:
    store, loop = world
    store.create(job("lost", queue, 1))
    assert loop.run(lambda: cond(workload_of(store, "lost"), "QuotaReserved") != {}, 20)
    pending = cond(workload_of(store, "lost"), "QuotaReserved")
    assert pending["status"] == "False"
    assert pending["message"].startswith(message)
    assert suspended(store, "lost")


def test_workloads_read_through_both_versions() -> None:
    kind = by_kind("kueue.x-k8s.io/v1beta1", "Workload")
    assert kind is not None and kind.versions == ("v1beta2", "v1beta1")
