"""The ``status`` of the ClusterQueue objects, read from the engine: the workloads of every
job the queue takes (Kubernetes workloads and ``sbatch`` jobs alike: one system),
pending and admitted, and the quota their runs hold per flavor (``flavorsReservation``,
``flavorsUsage``: the same here, as admission and quota reservation are one step). A
pending job counts as one pending workload; a running one as reserving and admitted. The
flavor a run holds is the first of its resource group whose nodes hold all of the run's.
With Kueue's fair sharing on, ``fairSharing.weightedShare`` too: the queue's weighted share
of what its cohort lends, as Kueue reports it. Usage and shares come from
``policies.clusterqueue.usage``, which the dashboard reads too.

And the ``Active`` condition of a queue object, as Kueue's controllers set it
(``condition_of``)."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from phalanx.domain.cluster import Cluster
from phalanx.domain.quantity import format_quantity
from phalanx.domain.state import JobState
from phalanx.kube.errors import KubeError
from phalanx.kube.store import ObjectStore, timestamp
from phalanx.policies.clusterqueue.usage import queue_usage, weighted_shares
from phalanx.sched.job import Job

__all__ = ["CLUSTER_QUEUES", "QueueStatus", "cluster_queue_status", "condition_of"]

log = logging.getLogger("phalanx.kube.queues")

CLUSTER_QUEUES = ("kueue.x-k8s.io", "clusterqueues")
_COUNTS = ("pendingWorkloads", "reservingWorkloads", "admittedWorkloads")
_USAGE = ("flavorsReservation", "flavorsUsage")


def condition_of(kind: str, inactive: tuple[str, str] | None, at: str) -> dict[str, Any]:
    """The ``Active`` condition of a ClusterQueue, LocalQueue or Cohort: ``inactive`` is
    (reason, message) of one Kueue would not use (``config.queue_objects``), None if active."""
    if inactive is not None:
        reason, message = inactive
        return _condition("False", reason, message, at)
    if kind == "ClusterQueue":
        return _condition("True", "Ready", "Can admit new workloads", at)
    if kind == "LocalQueue":
        return _condition("True", "Ready", "Can submit new workloads to localQueue", at)
    return _condition("True", "Ready", "Cohort is active", at)


def _condition(status: str, reason: str, message: str, at: str) -> dict[str, Any]:
    return {
        "type": "Active",
        "status": status,
        "reason": reason,
        "message": message,
        "lastTransitionTime": at or timestamp(time.time()),
    }


def cluster_queue_status(cluster: Cluster, jobs: Iterable[Job]) -> dict[str, dict[str, Any]]:
    """ClusterQueue name -> its counts and flavor usage (module docstring)."""
    queues = cluster.queues
    jobs = list(jobs)
    counts = {name: dict.fromkeys(_COUNTS, 0) for name in queues.cluster_queues}
    for job in jobs:
        if job.state.is_final:
            continue
        cq, _ = cluster.cluster_queue_of(job.spec)
        if cq is None or cq.name not in counts:
            continue
        mine = counts[cq.name]
        if job.state is JobState.PENDING or job.alloc is None:
            mine["pendingWorkloads"] += 1
            continue
        mine["reservingWorkloads"] += 1
        mine["admittedWorkloads"] += 1
    used = queue_usage(cluster, jobs)
    out: dict[str, dict[str, Any]] = {}
    for name, cq in queues.cluster_queues.items():
        usage = [
            {
                "name": flavor,
                "resources": [
                    {
                        "name": quota.name,
                        "total": format_quantity(total, quota.name),
                        "borrowed": format_quantity(max(0, total - quota.nominal), quota.name),
                    }
                    for f, quota in cq.quotas()
                    if f == flavor
                    for total in [used[name].get((flavor, quota.name), 0)]
                ],
            }
            for flavor in dict.fromkeys(f for f, _ in cq.quotas())
        ]
        out[name] = {**counts[name], "flavorsReservation": usage, "flavorsUsage": usage}
    for name, weighted in weighted_shares(queues, used).items():
        out[name]["fairSharing"] = {"weightedShare": weighted}
    return out


class QueueStatus:
    """Writes the ClusterQueue objects' status from the engine where it changed."""

    def __init__(self, store: ObjectStore, jobs: Callable[[], Iterable[Job]]) -> None:
        self.store = store
        self.jobs = jobs

    def write(self, cluster: Cluster, only: str | None = None) -> None:
        """Every ClusterQueue's status (``only``: that one's)."""
        if not cluster.queues.cluster_queues:
            return
        wanted = cluster_queue_status(cluster, self.jobs())
        for name, status in wanted.items():
            if only is not None and name != only:
                continue
            obj = self.store.get(CLUSTER_QUEUES, None, name)
            if obj is not None:
                self._write(obj, status)

    def _write(self, obj: dict[str, Any], wanted: Mapping[str, Any]) -> None:
        status = obj.get("status") or {}
        if all(status.get(k) == v for k, v in wanted.items()):
            return
        obj["status"] = {**status, **wanted}
        obj["metadata"].pop("resourceVersion", None)
        try:
            self.store.update_status(obj)
        except KubeError as exc:
            log.debug("status of ClusterQueue %s: %s", obj["metadata"].get("name"), exc)
