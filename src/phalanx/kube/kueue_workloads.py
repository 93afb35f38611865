"""Kueue's objects kept in step with the engine's admission, for the workload runner
(``phalanx.kube.controllers``): the ``Workload`` of each queued owner (batch Job,
PyTorchJob, JobSet, Volcano Job), the owner's suspend flag, and the counts in the status
of the LocalQueue objects stored under those names.

The decisions are the engine's (``admit/clusterqueue`` over the cluster's queues); what a
Workload says is built by ``phalanx.workloads.kueue_workload`` from the engine jobs of the
owner's pods (held ones too: ``phalanx.kube.podgate``), read here with the queue set-up
(which ClusterQueue, which flavors)."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from phalanx.kube.errors import KubeError
from phalanx.kube.queuestatus import CLUSTER_QUEUES
from phalanx.kube.workload_ports import (
    JOBS,
    JOBSETS,
    PYTORCHJOBS,
    VCJOBS,
    Engine,
    Key,
    Obj,
    Resource,
    Store,
)
from phalanx.workloads import kueue_owners as ko
from phalanx.workloads import kueue_workload as kw
from phalanx.workloads.plan import EngineJob

__all__ = [
    "CLUSTER_QUEUES",
    "ENGINE_JOBS",
    "LOCAL_QUEUES",
    "WORKLOADS",
    "KueueWorkloads",
    "quietly",
    "write_workload",
]

WORKLOADS: Resource = ("kueue.x-k8s.io", "workloads")
LOCAL_QUEUES: Resource = ("kueue.x-k8s.io", "localqueues")

log = logging.getLogger("phalanx.kube.kueue")
ENGINE_JOBS = "phalanx.io/engine-jobs"
"""On a queued owner's Workload: the ids of its live engine jobs, held pods' ones too, so
that a controller that restarts (the held pods were in its predecessor's memory) can find
those no pod claims any more (``WorkloadRunner.sweep``)."""
_KINDS = frozenset({JOBS, PYTORCHJOBS, VCJOBS, JOBSETS})

# The pending message's forecast ("; expected start in 0:40:00, when job 812 ends") changes
# every second; Kueue's message has none, and leaving it out spares a write a tick.
_FORECASTS = ("; expected start in ", "; no running job's end")


class KueueWorkloads:
    """The runner's hook (module docstring): ``view`` before a Job's reconcile, ``sync``
    after it."""

    def __init__(self, store: Store, engine: Engine, clock: Any) -> None:
        self.store = store
        self.engine = engine
        self.clock = clock
        self.refused: dict[Key, str] = {}
        """Owner -> why the engine refused its last submission (a request that can never run
        here): its Workload's pending message while it has no engine job."""

    def queued(self, key: Key, obj: Obj) -> bool:
        """Whether ``obj`` is a workload Kueue admits: one of the kinds it integrates,
        labelled with a queue name, controlled by no other workload."""
        return key[0] in _KINDS and kw.queue_of(obj) is not None

    def view(self, key: Key, obj: Obj) -> Obj:
        """The owner its reconciler should see (``kueue_workload.as_reconciled``): a queued
        one unsuspended unless its Workload was deactivated; others as they are."""
        if not self.queued(key, obj) or not ko.has_suspend(obj):
            return obj
        stored = self._stored(obj)
        active = stored is None or (stored.get("spec") or {}).get("active", True) is not False
        return kw.as_reconciled(obj, active)

    def sync(
        self, key: Key, obj: Obj, status: Mapping[str, Any] | None, jobs: Mapping[int, EngineJob]
    ) -> None:
        """Write the Workload of the queued owner ``obj`` (``status``: the owner's newest;
        ``jobs``: the engine jobs of its pods, held ones included) and its suspend flag,
        where they changed."""
        queue = kw.queue_of(obj)
        if queue is None or key[0] not in _KINDS:
            return
        namespace = key[1]
        stored = self._stored(obj)
        placement, problem = self._placement(namespace, queue, jobs.values())
        if placement is not None and key in self.refused:
            problem = self.refused[key]  # (no engine job, so the verdict says this)
        verdict = kw.judge(list(jobs.values()), problem)
        pod_sets = ko.pod_sets(obj)
        first = str(pod_sets[0]["name"]) if pod_sets else "main"
        # the queue set-up's problem, in Kueue's words, over the engine's longer message
        message = problem if placement is None else _plain(verdict.message, first)
        verdict = kw.Verdict(verdict.admitted, message, verdict.evicted)
        finished = ko.finished_of({**obj, "status": status or {}})
        made = kw.workload(obj, pod_sets, verdict, placement, finished, stored, self.clock())
        notes = made["metadata"].setdefault("annotations", {})
        live = self._live(jobs, str(notes.get(ENGINE_JOBS, "")))
        if live:
            notes[ENGINE_JOBS] = ",".join(str(i) for i in live)
        else:
            notes.pop(ENGINE_JOBS, None)
        write_workload(self.store, made, stored)
        active = (made.get("spec") or {}).get("active", True) is not False
        suspend = not active or (finished is None and not verdict.admitted)
        if finished is None and ko.has_suspend(obj) and ko.is_suspended(obj) != suspend:
            current = self.store.get(key[0], namespace, key[2])
            if current is not None:
                current = ko.with_suspend(current, suspend)
                current["metadata"].pop("resourceVersion", None)
                self._quietly(self.store.update, current)

    def _live(self, jobs: Mapping[int, EngineJob], noted: str) -> list[int]:
        """The owner's live engine jobs: its pods' (``jobs``), and those the Workload named
        before that still live (a restarted runner's predecessor's, until swept)."""
        live = {i for i, j in jobs.items() if not j.state.is_final}
        before = {int(i) for i in noted.split(",") if i.isdecimal()} - set(jobs)
        if before:
            live.update(j.id for j in self.engine.jobs(ids=sorted(before)) if not j.state.is_final)
        return sorted(live)

    # -- reading -------------------------------------------------------------------------

    def _stored(self, obj: Obj) -> Obj | None:
        meta = obj.get("metadata") or {}
        found = self.store.list(
            WORKLOADS,
            str(meta.get("namespace", "default")),
            {kw.JOB_UID_LABEL: str(meta.get("uid"))},
        )
        return found[0] if found else None

    def _placement(self, namespace: str, queue: str, jobs: Any) -> tuple[kw.Placement | None, str]:
        """The ClusterQueue and flavors of the Job's admission, or None and why not."""
        queues = self.engine.cluster.queues
        local = queues.local_queues.get((namespace, queue))
        if local is None:
            if not queues.cluster_queues:
                # no ClusterQueues configured: the engine admits every job; no queue to name
                return kw.Placement(""), f"LocalQueue {queue} doesn't exist"
            stored = self.store.get(LOCAL_QUEUES, namespace, queue)
            target = str(((stored or {}).get("spec") or {}).get("clusterQueue") or "")
            if target and target not in queues.cluster_queues:
                return None, f"ClusterQueue {target} doesn't exist"
            return None, f"LocalQueue {queue} doesn't exist"
        cq, problem = queues.cluster_queue_named(local.cluster_queue, namespace)
        if cq is None:
            return None, problem
        names = {n.name: n.index for n in self.engine.cluster.nodes}
        used = {names[n] for j in jobs if not j.state.is_final for n in j.nodes if n in names}
        flavors: dict[str, str] = {}
        for group in cq.resource_groups:
            for fq in group.flavors:
                if fq.name in queues.flavors and used <= set(
                    queues.flavor_nodes(self.engine.cluster, fq.name)
                ):
                    flavors.update({r: fq.name for r in group.covered_resources})
                    break
        return kw.Placement(cq.name, flavors), ""

    @staticmethod
    def _quietly(call: Any, *args: Any) -> Any:
        return quietly(call, *args)


def quietly(call: Any, *args: Any) -> Any:
    """``call(*args)``, or None when the store refuses it (a conflict, an object gone
    meanwhile): a derived object is written again on the next tick."""
    try:
        return call(*args)
    except KubeError as e:
        log.debug("%s: %s", getattr(call, "__name__", call), e)
        return None


def write_workload(store: Store, made: Obj, stored: Obj | None) -> Obj | None:
    """Bring Workload ``stored`` (None: none yet) to ``made``: its spec by create or update
    when it differs, then its status through the status subresource when that differs.
    Returns the object as written (None when the store refused it)."""
    wanted = made.pop("status", None)
    made["metadata"].pop("resourceVersion", None)
    if stored is None:
        written = quietly(store.create, made)
    elif made.get("spec") != stored.get("spec") or _notes(made) != _notes(stored):
        written = quietly(store.update, made)
    else:
        written = stored
    if written is not None and wanted and written.get("status") != wanted:
        written = {**written, "status": wanted}
        written["metadata"] = {
            k: v for k, v in written["metadata"].items() if k != "resourceVersion"
        }
        quietly(store.update_status, written)
    return written if isinstance(written, dict) else None


def _notes(obj: Obj) -> Any:
    return (obj.get("metadata") or {}).get("annotations") or {}


def _plain(message: str, pod_set: str) -> str:
    """The engine's pending message in Kueue's words: the forecast left out, the pod set
    named (a Job's ``main``, a PyTorchJob's first replica type...)."""
    for mark in _FORECASTS:
        message = message.split(mark, 1)[0]
    if message.startswith("couldn't assign flavors to ClusterQueue "):
        message = f"couldn't assign flavors to pod set {pod_set}:" + message.split(":", 1)[1]
    return message
