"""Kueue ``Workload`` objects for every workload the engine runs, not only queued
``batch/v1`` Jobs (``phalanx.kube.kueue_workloads``): PyTorchJobs, JobSets, Volcano Jobs,
and the Slurm jobs submitted with ``sbatch``/``srun``, so that ``kubectl get workloads -A``
shows one system (a Slurm job's namespace is its account).

They are views: computed again every tick from the engine's jobs (the owner's pods' engine
jobs; a Slurm job itself) with ``phalanx.workloads.kueue_workload``, and written only where
they changed; nothing reads them back to decide anything, so they cannot drift. A Workload
of a Kubernetes owner is owned by it (deleted with it); a Slurm job's is deleted when the
engine forgets the job (``MinJobAge``). A queued owner's (one labelled
``kueue.x-k8s.io/queue-name``) is no view: the workload runner writes it as it admits and
suspends the owner (``phalanx.kube.kueue_workloads``).

A Slurm job is an engine job no Kubernetes workload made (those carry their container
image in ``JobSpec.extra``). Its Workload, ``slurm-ID`` in the namespace of its account
(made if missing; an account that is no valid namespace name gets none), has one pod set
``main`` of its tasks with each task's requests, the name of the LocalQueue that counts it
(``queuestatus.local_queue_of``), and once admitted the flavors its nodes are of.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from phalanx.domain.queues import queue_name
from phalanx.domain.state import JobState
from phalanx.kube.errors import KubeError
from phalanx.kube.kueue_workloads import quietly, write_workload
from phalanx.kube.queuestatus import local_queue_of
from phalanx.kube.workload_ports import (
    JOBS,
    JOBSETS,
    PODS,
    PYTORCHJOBS,
    VCJOBS,
    Engine,
    Obj,
    engine_job,
)
from phalanx.kube.workload_ports import Store as StorePort
from phalanx.policies.clusterqueue.usage import flavor_of
from phalanx.sched.job import Job
from phalanx.workloads import jobset, training, volcano
from phalanx.workloads import kueue_workload as kw
from phalanx.workloads.job import CONTROLLER_UID
from phalanx.workloads.kueue_owners import finished_of, pod_sets
from phalanx.workloads.plan import ANNOTATION_JOB_ID, EngineJob
from phalanx.workloads.podspec import LOCALHOST

__all__ = [
    "SLURM_JOB_LABEL",
    "WRITES_PER_TICK",
    "WorkloadViews",
    "finished_of",
    "is_slurm_job",
    "pod_sets",
]

log = logging.getLogger("phalanx.kube.kueue")

WORKLOADS = ("kueue.x-k8s.io", "workloads")
NAMESPACES = ("", "namespaces")
SLURM_JOB_LABEL = "phalanx.io/slurm-job-id"
"""On a Slurm job's Workload: the job's id."""
_OWNERS = (PYTORCHJOBS, JOBSETS, VCJOBS)
WRITES_PER_TICK = 500
SWEEP_TICKS = 60
"""Ticks between two looks through every stored Workload for views of Slurm jobs the engine
no longer has, when no job was seen to go in between (listing copies every Workload: not
something to do each second on a cluster with a long history)."""
"""Slurm jobs' views brought up to date per tick at most: a queue of tens of thousands of
jobs (a controller's first tick after a start) is written over several ticks rather than
holding the event loop for one long one."""
_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")
"""A namespace's name (RFC 1123 label)."""


def is_slurm_job(job: Job) -> bool:
    """An engine job no Kubernetes workload made (module docstring)."""
    return not any(k == "image" for k, _ in job.spec.extra)


class WorkloadViews:
    """``tick()`` writes every view (module docstring)."""

    def __init__(self, store: StorePort, engine: Engine, clock: Callable[[], int]) -> None:
        self.store = store
        self.engine = engine
        self.clock = clock
        self._seen: dict[int, tuple[object, ...]] = {}
        """Slurm job id -> what its view was last written from: thousands of jobs that did
        not change cost no rebuild."""
        self._alive: set[str] = set()
        self._sweep_in = 0
        """Ticks until the stored views are looked through whether or not a job went."""
        self._views: dict[int, tuple[str, str]] | None = None
        """Slurm job id -> (namespace, name) of its stored view: found by name, not by a
        label selector, which scans every Workload of the namespace (500 scans a tick of
        tens of thousands of views took a third of the controller's CPU under a stream of
        submissions). Built from one look through the store, kept as views are written,
        and rebuilt at each sweep."""

    def tick(self) -> None:
        for resource in _OWNERS:
            for obj in self.store.list(resource):
                try:
                    self._owner(obj)
                except (KubeError, ValueError, TypeError) as exc:  # one bad object, not all
                    log.debug("workload of %s: %s", obj.get("metadata", {}).get("name"), exc)
        self._slurm_jobs()

    # -- Kubernetes owners ---------------------------------------------------------------

    def _pods(self, obj: Obj) -> list[Obj]:
        meta = obj["metadata"]
        ns, name, uid = meta.get("namespace", "default"), meta["name"], meta.get("uid")
        if obj.get("kind") == "JobSet":
            pods: list[Obj] = []
            for child in self.store.list(JOBS, ns, {jobset.JOBSET_NAME: name}):
                child_uid = child["metadata"].get("uid")
                pods.extend(self.store.list(PODS, ns, {CONTROLLER_UID: str(child_uid)}))
            return pods
        label = training.JOB_NAME if obj.get("kind") == "PyTorchJob" else volcano.JOB_NAME
        return [
            p
            for p in self.store.list(PODS, ns, {label: name})
            if any(r.get("uid") == uid for r in p["metadata"].get("ownerReferences") or ())
        ]

    def _engine_jobs(self, pods: Iterable[Obj]) -> list[EngineJob]:
        ids = set()
        for pod in pods:
            value = (pod["metadata"].get("annotations") or {}).get(ANNOTATION_JOB_ID)
            if value is not None and str(value).isdecimal():
                ids.add(int(value))
        if not ids:
            return []
        cluster = self.engine.cluster
        found = self.engine.jobs(finished=True, ids=sorted(ids))
        return [engine_job(j, cluster, lambda _: LOCALHOST) for j in found]

    def _owner(self, obj: Obj) -> None:
        meta = obj["metadata"]
        queue = kw.queue_of(obj)
        if meta.get("deletionTimestamp") or queue is not None:
            return  # a queued owner's Workload is the runner's (``kueue_workloads``)
        jobs = self._engine_jobs(self._pods(obj))
        namespace = str(meta.get("namespace", "default"))
        verdict = kw.judge(jobs)
        placement = kw.Placement("") if verdict.admitted else None  # no queue named
        stored = self._stored(namespace, {kw.JOB_UID_LABEL: str(meta.get("uid"))})
        made = kw.workload(
            obj, pod_sets(obj), verdict, placement, finished_of(obj), stored, self.clock()
        )
        self._write(made, stored)

    # -- Slurm jobs ----------------------------------------------------------------------

    def _slurm_jobs(self) -> None:
        cluster = self.engine.cluster
        alive: set[str] = set()
        budget = WRITES_PER_TICK
        for job in self.engine.jobs(finished=True):
            if not is_slurm_job(job) or not _DNS_LABEL.match(job.account):
                continue
            alive.add(str(job.id))
            seen = (job.state, job.start, job.end, job.reason, job.reason_message, job.restarts)
            if self._seen.get(job.id) == seen or budget <= 0:
                continue  # unchanged, or left for the next tick
            budget -= 1
            self._seen[job.id] = seen
            try:
                self._slurm_job(job, cluster)
            except KubeError as exc:
                log.debug("workload of Slurm job %d: %s", job.id, exc)
        gone = not alive >= self._alive  # a job the engine had is no longer there
        self._alive = alive
        self._sweep_in -= 1
        if not gone and self._sweep_in > 0:
            return
        self._sweep_in = SWEEP_TICKS
        self._views = {}
        for view in self.store.list(WORKLOADS):
            labels = view["metadata"].get("labels") or {}
            job_id = labels.get(SLURM_JOB_LABEL)
            if job_id is not None and job_id not in alive:
                self._seen.pop(int(job_id), None)
                meta = view["metadata"]
                self._quietly(self.store.delete, WORKLOADS, meta.get("namespace"), meta["name"])
            elif job_id is not None:
                self._index(view)

    def _slurm_job(self, job: Job, cluster: Any) -> None:
        ns = job.account
        if self.store.get(NAMESPACES, None, ns) is None:
            namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}
            self.store.create(namespace)
        owner = {
            "apiVersion": "slurm.schedmd.com/v1",
            "kind": "SlurmJob",
            "metadata": {"name": str(job.id), "namespace": ns, "uid": f"slurm-{job.id}"},
        }
        spec = job.spec
        requests = {"cpu": str(max(spec.cpus_per_task, 1))}
        if spec.gpus_per_task:
            requests["nvidia.com/gpu"] = str(spec.gpus_per_task)
        tasks = spec.nodes_min * spec.tasks_per_node
        sets = [
            {
                "name": "main",
                "count": tasks,
                "template": {
                    "spec": {
                        "containers": [
                            {"name": spec.name or "batch", "resources": {"requests": requests}}
                        ]
                    }
                },
            }
        ]
        viewed = engine_job(job, cluster, lambda _: LOCALHOST)
        verdict = kw.judge([viewed])
        cq, problem = cluster.cluster_queue_of(spec)
        flavors: dict[str, str] = {}
        if cq is not None and job.alloc is not None:
            flavors = flavor_of(cluster.queues, cluster, cq, set(job.alloc.nodes))
        placement = kw.Placement(cq.name if cq is not None else "", flavors)
        if not verdict.admitted and problem and cluster.queues.cluster_queues:
            verdict = kw.Verdict(False, verdict.message or problem, verdict.evicted)
        finished: tuple[bool, str] | None = None
        if job.state.is_final:
            ok = job.state is JobState.COMPLETED
            finished = (ok, "Job finished successfully" if ok else f"Job {job.state.value}")
        stored = self._stored_view(job.id, ns)
        made = kw.workload(owner, sets, verdict, placement, finished, stored, self.clock())
        meta = made["metadata"]
        meta.pop("ownerReferences", None)  # no object owns it: deleted with the job
        meta["labels"] = {SLURM_JOB_LABEL: str(job.id)}
        if stored is None:
            meta["name"] = f"slurm-{job.id}"
        local = local_queue_of(cluster, spec)  # the LocalQueue whose counts hold it
        if not cluster.queues.cluster_queues:
            made["spec"]["queueName"] = ""
        else:
            made["spec"]["queueName"] = local[1] if local is not None else queue_name(spec)
        written = write_workload(self.store, made, stored)
        if written is not None and self._views is not None:
            self._views[job.id] = (ns, written["metadata"]["name"])

    # -- writing -------------------------------------------------------------------------

    def _index(self, view: Obj) -> None:
        assert self._views is not None
        meta = view["metadata"]
        job_id = (meta.get("labels") or {}).get(SLURM_JOB_LABEL)
        if job_id is not None and job_id.isascii() and job_id.isdigit():
            self._views[int(job_id)] = (meta.get("namespace", "default"), meta["name"])

    def _stored_view(self, job_id: int, namespace: str) -> Obj | None:
        """The stored view of Slurm job ``job_id`` in ``namespace`` (None: none yet)."""
        if self._views is None:
            self._views = {}
            for view in self.store.list(WORKLOADS, copy=False):
                self._index(view)
        where = self._views.get(job_id)
        if where is None or where[0] != namespace:
            return None
        found = self.store.get(WORKLOADS, namespace, where[1])
        labels = (found or {}).get("metadata", {}).get("labels") or {}
        if labels.get(SLURM_JOB_LABEL) == str(job_id):
            return found
        # Renamed, relabelled or deleted behind our back: look as before.
        del self._views[job_id]
        stored = self._stored(namespace, {SLURM_JOB_LABEL: str(job_id)})
        if stored is not None:
            self._index(stored)
        return stored

    def _stored(self, namespace: str, labels: Mapping[str, str]) -> Obj | None:
        found = self.store.list(WORKLOADS, namespace, labels)
        return found[0] if found else None

    def _write(self, made: Obj, stored: Obj | None) -> None:
        write_workload(self.store, made, stored)

    @staticmethod
    def _quietly(call: Any, *args: Any) -> Any:
        return quietly(call, *args)
