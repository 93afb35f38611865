"""Kueue's "no pods before admission", for the workload runner: the pods of a queued
workload (one labelled ``kueue.x-k8s.io/queue-name``: a batch Job, a PyTorchJob, a Volcano
Job, or a JobSet's child Jobs) are held back, out of the object store, until the engine
starts their engine job.

The reconcilers stay as they are: they make a queued owner's pods and its submissions as for
any owner (``kueue_workload.as_reconciled``), and the engine admits the submissions against
the ClusterQueue. ``hold`` then rewrites the plan: a new pod whose engine job has not started
is kept here instead of created; a held pod whose engine job started is created (Running,
bound to its node) from then on; a stored pod whose engine job went back to the queue
(preempted: Kueue evicts the workload and suspends it, and its pods go) is deleted from the
store and held again, without its engine job being cancelled (it waits in the queue with
its place); a held pod the plan deletes has its engine job cancelled, as the deletion of a
stored pod does (``WorkloadRunner.on_object``). Reconcilers see the held pods with the
stored ones (``pods``), so they make none twice.

The held pods live in the runner's memory: after a controller restart the reconcilers make
them again (a PyTorchJob's under the same submission key, so the engine answers the job it
has; a Job's and a Volcano Job's, whose pod names are drawn, under new keys). The engine
jobs of the lost ones are found through the Workloads, which name their owner's live engine
jobs (``left``), and cancelled by the runner once it leads (``WorkloadRunner.sweep``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from phalanx.domain.queues import PRIORITY_CLASS_LABEL, QUEUE_NAME_LABEL
from phalanx.domain.state import JobState
from phalanx.kube.errors import KubeError
from phalanx.kube.kueue_workloads import ENGINE_JOBS, WORKLOADS
from phalanx.kube.workload_ports import JOBS, JOBSETS, PODS, PYTORCHJOBS, VCJOBS, Key, Obj, Store
from phalanx.kube.workload_ports import owner_of as parent_of
from phalanx.workloads import kueue_workload as kw
from phalanx.workloads.plan import EngineJob, Plan
from phalanx.workloads.pods import engine_id

__all__ = ["PodGate", "started"]

_GATED = (JOBS, PYTORCHJOBS, VCJOBS)
_WAITING = frozenset({JobState.PENDING, JobState.REQUEUED, JobState.PREEMPTED, JobState.SUSPENDED})


def started(job: EngineJob | None) -> bool:
    """Whether ``job`` has been started by the engine (and not sent back to its queue)."""
    return job is not None and job.start is not None and job.state not in _WAITING


def _name(pod: Mapping[str, Any]) -> str:
    return str((pod.get("metadata") or {}).get("name"))


class PodGate:
    """The held pods of each queued workload (module docstring)."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.held: dict[Key, dict[str, Obj]] = {}
        self.moving: set[tuple[str, str]] = set()
        """(namespace, pod) deleted from the store by the gate: its engine job lives on."""

    def gated(self, key: Key, obj: Mapping[str, object]) -> dict[str, str] | None:
        """None if ``obj``'s pods need no admission; else the Kueue labels its pods' engine
        jobs take from elsewhere: none for a queued owner (it has its own), its JobSet's
        queue name and priority class for the child Job of a queued JobSet."""
        if key[0] not in _GATED:
            return None
        if kw.queue_of(obj) is not None:
            return {}
        parent = parent_of(obj)
        if key[0] != JOBS or parent is None or parent[0] != JOBSETS:
            return None
        found = self.store.get(*parent)
        if found is None or kw.queue_of(found) is None:
            return None
        labels = found["metadata"].get("labels") or {}
        return {k: str(labels[k]) for k in (QUEUE_NAME_LABEL, PRIORITY_CLASS_LABEL) if k in labels}

    def pods(self, key: Key, stored: list[Obj]) -> list[Obj]:
        """The stored pods of ``key`` and its held ones."""
        held = self.held.get(key)
        if not held:
            return stored
        names = {_name(p) for p in stored}
        return [*stored, *(p for n, p in sorted(held.items()) if n not in names)]

    def left(self) -> set[int]:
        """The engine jobs queued owners' Workloads name (``ENGINE_JOBS``), a PyTorchJob's
        left out: after a restart, those no pod claims are what held pods ran as before,
        their owners having made new pods under new submission keys (a PyTorchJob's keys are
        its own: the engine answers its new pods with the same job)."""
        out: set[int] = set()
        for workload in self.store.list(WORKLOADS):
            meta = workload["metadata"]
            if any(r.get("kind") == "PyTorchJob" for r in meta.get("ownerReferences") or ()):
                continue
            text = str((meta.get("annotations") or {}).get(ENGINE_JOBS, ""))
            out.update(int(i) for i in text.split(",") if i.isdecimal())
        return out

    def forget(self, key: Key) -> None:
        self.held.pop(key, None)

    def moved(self, namespace: str, name: str) -> bool:
        """Whether the deletion of pod ``namespace/name`` was the gate's (once)."""
        if (namespace, name) in self.moving:
            self.moving.discard((namespace, name))
            return True
        return False

    def hold(
        self,
        key: Key,
        plan: Plan,
        stored: Sequence[Obj],
        jobs: Mapping[int, EngineJob],
        with_job: Callable[[Obj], Obj],
    ) -> None:
        """Rewrite ``plan`` of the queued workload ``key`` (module docstring). ``stored``:
        its pods as the reconciler saw them (held ones included); ``with_job``: a pod with
        its engine job's id and rank where the runner knows them."""
        namespace = key[1]
        held = self.held.setdefault(key, {})

        def job_of(pod: Obj) -> EngineJob | None:
            job_id = engine_id(with_job(pod))
            return None if job_id is None else jobs.get(job_id)

        create: list[Obj] = []
        for pod in plan.create:
            if started(job_of(pod)):
                create.append(pod)
            else:
                held[_name(pod)] = pod
        updated = {_name(p): p for p in plan.update}
        update: list[Obj] = []
        for name, pod in updated.items():
            if name not in held:
                update.append(pod)
            elif started(job_of(pod)):
                del held[name]
                create.append(with_job(pod))
            else:
                held[name] = pod
        for pod in stored:
            name = _name(pod)
            if name in held or name in plan.delete:
                continue
            job = job_of(pod)
            if job is not None and job.state in _WAITING:
                # preempted: Kueue evicts the workload and its pods go; the engine job waits
                latest = updated.get(name, pod)
                update = [p for p in update if _name(p) != name]
                held[name] = _pending(latest)
                self.moving.add((namespace, name))
                self._quietly_delete(namespace, name)
        for name in list(plan.delete):
            gone = held.pop(name, None)
            if gone is not None:
                plan.delete.remove(name)
                job_id = engine_id(with_job(gone))
                if job_id is not None and job_id not in plan.cancel:
                    plan.cancel.append(job_id)
        plan.create = create
        plan.update = update
        if not held:
            self.held.pop(key, None)

    def _quietly_delete(self, namespace: str, name: str) -> None:
        try:
            self.store.delete(PODS, namespace, name)
        except KubeError:  # gone already: nothing to move
            self.moving.discard((namespace, name))


def _pending(pod: Obj) -> Obj:
    """``pod`` as a held pod shows again: Pending, bound to no node."""
    spec = {k: v for k, v in (pod.get("spec") or {}).items() if k != "nodeName"}
    status = {
        k: v
        for k, v in (pod.get("status") or {}).items()
        if k not in ("startTime", "hostIP", "podIP", "hostIPs", "podIPs", "containerStatuses")
    }
    status["phase"] = "Pending"
    meta = {k: v for k, v in pod["metadata"].items() if k != "resourceVersion"}
    return {**pod, "metadata": meta, "spec": spec, "status": status}
