"""The ``status`` of the ClusterQueue and LocalQueue objects, read from the engine: the
workloads of every job the queue takes (Kubernetes workloads and ``sbatch`` jobs alike: one
system), pending and admitted, and the quota their runs hold per flavor
(``flavorsReservation``, ``flavorsUsage``: the same here, as admission and quota reservation
are one step). A workload is a Kubernetes owner's engine jobs together (its namespace and
name), or one Slurm job; it is pending while one of its live engine jobs waits, else
reserving and admitted. A job's LocalQueue is the one of its account's namespace that its
queue name names, else the first that leads to its ClusterQueue (``local_queue_of``); a
LocalQueue's counts and usage are those of its own workloads. The flavor a run holds is the
first of its resource group whose nodes hold all of the run's.
With Kueue's fair sharing on, ``fairSharing.weightedShare`` too: the queue's weighted share
of what its cohort lends, as Kueue reports it. A ClusterQueue's usage and shares come from
``policies.clusterqueue.usage``, which the dashboard reads too.

And the ``Active`` condition of a queue object, as Kueue's controllers set it
(``condition_of``)."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from phalanx.domain.cluster import Cluster
from phalanx.domain.jobspec import JobSpec
from phalanx.domain.quantity import format_quantity
from phalanx.domain.queues import ClusterQueue, queue_name
from phalanx.domain.state import JobState
from phalanx.kube.errors import KubeError
from phalanx.kube.store import ObjectStore, timestamp
from phalanx.policies.clusterqueue.amounts import held
from phalanx.policies.clusterqueue.usage import flavor_of, queue_usage, weighted_shares
from phalanx.sched.job import Job

__all__ = [
    "CLUSTER_QUEUES",
    "LOCAL_QUEUES",
    "QueueStatus",
    "cluster_queue_status",
    "condition_of",
    "local_queue_of",
    "queue_statuses",
]

log = logging.getLogger("phalanx.kube.queues")

CLUSTER_QUEUES = ("kueue.x-k8s.io", "clusterqueues")
LOCAL_QUEUES = ("kueue.x-k8s.io", "localqueues")
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


def local_queue_of(cluster: Cluster, spec: JobSpec) -> tuple[str, str] | None:
    """(namespace, name) of the LocalQueue a job is counted in, or None: the one its queue
    name (``kueue.x-k8s.io/queue-name``, else ``default``) names in the namespace of its
    account where that one leads to the job's ClusterQueue; else the first, by name, of that
    namespace's LocalQueues that does (an ``sbatch`` job that its partition or QOS routes to
    a ClusterQueue is one of the workloads a LocalQueue of its account submits there)."""
    cq, _ = cluster.cluster_queue_of(spec)
    if cq is None:
        return None
    local = cluster.queues.local_queues
    named = (spec.account, queue_name(spec))
    found = local.get(named)
    if found is not None and found.cluster_queue == cq.name:
        return named
    mine = sorted(
        k for k, lq in local.items() if k[0] == spec.account and lq.cluster_queue == cq.name
    )
    return mine[0] if mine else None


def _workload_of(job: Job) -> tuple[str, ...]:
    """What one Workload is: a Kubernetes owner's engine jobs (one per pod of a Job) share
    its namespace and name; a Slurm job is one of its own."""
    if any(k == "image" for k, _ in job.spec.extra):
        return ("kube", job.spec.account, job.spec.name)
    return ("slurm", str(job.id))


def queue_statuses(
    cluster: Cluster, jobs: Iterable[Job]
) -> tuple[dict[str, dict[str, Any]], dict[tuple[str, str], dict[str, Any]]]:
    """The status of each ClusterQueue (by name) and LocalQueue (by namespace and name):
    workloads pending, reserving and admitted (a workload admitted once every live engine job
    of it has started), and the quota their runs hold per flavor."""
    queues = cluster.queues
    jobs = list(jobs)
    pending: dict[tuple[str, ...], bool] = {}
    where: dict[tuple[str, ...], tuple[str, tuple[str, str] | None]] = {}
    used = queue_usage(cluster, jobs)  # the dashboard's figures too
    local_used: dict[tuple[str, str], dict[tuple[str, str], int]] = {
        key: {} for key in queues.local_queues
    }
    for job in jobs:
        if job.state.is_final:
            continue
        cq, _ = cluster.cluster_queue_of(job.spec)
        if cq is None or cq.name not in used:
            continue
        workload = _workload_of(job)
        lq = local_queue_of(cluster, job.spec)
        where[workload] = (cq.name, lq)
        waiting = job.state is JobState.PENDING or job.alloc is None
        pending[workload] = pending.get(workload, False) or waiting
        if waiting or job.alloc is None or lq is None:
            continue
        flavors = flavor_of(queues, cluster, cq, set(job.alloc.nodes))
        for resource, amount in held(job, job.alloc).items():
            flavor = flavors.get(resource)
            if flavor is not None and amount:
                key = (flavor, resource)
                local_used[lq][key] = local_used[lq].get(key, 0) + amount
    counts = {name: dict.fromkeys(_COUNTS, 0) for name in queues.cluster_queues}
    local_counts = {key: dict.fromkeys(_COUNTS, 0) for key in queues.local_queues}
    for workload, (cq_name, lq) in where.items():
        kinds = ("pendingWorkloads",) if pending[workload] else _COUNTS[1:]
        for kind in kinds:
            counts[cq_name][kind] += 1
            if lq is not None:
                local_counts[lq][kind] += 1
    out: dict[str, dict[str, Any]] = {}
    for name, cq in queues.cluster_queues.items():
        usage = _usage(cq, used[name], borrowed=True)
        out[name] = {**counts[name], "flavorsReservation": usage, "flavorsUsage": usage}
    local_out: dict[tuple[str, str], dict[str, Any]] = {}
    for key, local in queues.local_queues.items():
        target = queues.cluster_queues.get(local.cluster_queue)
        usage = [] if target is None else _usage(target, local_used[key], borrowed=False)
        local_out[key] = {**local_counts[key], "flavorsReservation": usage, "flavorsUsage": usage}
    for name, weighted in weighted_shares(queues, used).items():
        out[name]["fairSharing"] = {"weightedShare": weighted}
    return out, local_out


def _usage(
    cq: ClusterQueue, used: Mapping[tuple[str, str], int], *, borrowed: bool
) -> list[dict[str, Any]]:
    """Kueue's ``flavorsUsage``: every flavor of the ClusterQueue with each resource's total
    (and, for a ClusterQueue, what it borrows beyond its nominal quota)."""
    out = []
    for flavor in dict.fromkeys(f for f, _ in cq.quotas()):
        resources = []
        for f, quota in cq.quotas():
            if f != flavor:
                continue
            total = used.get((flavor, quota.name), 0)
            entry = {"name": quota.name, "total": format_quantity(total, quota.name)}
            if borrowed:
                entry["borrowed"] = format_quantity(max(0, total - quota.nominal), quota.name)
            resources.append(entry)
        out.append({"name": flavor, "resources": resources})
    return out


def cluster_queue_status(cluster: Cluster, jobs: Iterable[Job]) -> dict[str, dict[str, Any]]:
    """ClusterQueue name -> its counts and flavor usage (module docstring)."""
    return queue_statuses(cluster, jobs)[0]


class QueueStatus:
    """Writes the ClusterQueue and LocalQueue objects' status from the engine where it
    changed."""

    def __init__(self, store: ObjectStore, jobs: Callable[[], Iterable[Job]]) -> None:
        self.store = store
        self.jobs = jobs

    def write(self, cluster: Cluster, only: str | None = None) -> None:
        """Every ClusterQueue's and LocalQueue's status (``only``: that ClusterQueue's)."""
        if not cluster.queues.cluster_queues:
            return
        wanted, local = queue_statuses(cluster, self.jobs())
        for name, status in wanted.items():
            if only is not None and name != only:
                continue
            obj = self.store.get(CLUSTER_QUEUES, None, name)
            if obj is not None:
                self._write(obj, status)
        for (namespace, name), status in sorted(local.items()):
            if only is not None:
                break
            obj = self.store.get(LOCAL_QUEUES, namespace, name)
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
