"""``sched/k8s``: vanilla Kubernetes, each task a pod placed on its own. No gang.

Pods are placed in queue order as soon as some node fits them (the profile's select plugin,
LeastAllocated spreading for ``k8s-default``). A job runs only when its last pod is placed;
until then its placed pods hold their GPUs idle (gang wait). Jobs that hold parts of the
cluster can wait on each other forever (Kubeflow training-operator #165): a pass counts a
deadlock when no partially placed job could complete even if every running job ended, and a
partially placed job that has waited ``hold_timeout_ms`` gives back its pods and waits again,
as gang-scheduling timeouts of the operators do.
"""

from __future__ import annotations

from collections.abc import Mapping

from phalanx.domain.state import Reason
from phalanx.domain.time import MINUTE
from phalanx.sched.capacity import Allocation
from phalanx.sched.job import Job
from phalanx.sched.protocols import PassContext
from phalanx.sched.shape import Shape
from phalanx.sched.status import Status

__all__ = ["KubernetesScheduler", "merge", "pod_shape"]


def pod_shape(job: Job) -> Shape:
    """One task of the job as a single-node request."""
    s = job.shape
    tasks = job.spec.tasks_per_node
    return Shape(
        partition=s.partition,
        nodes_min=1,
        nodes_max=1,
        gpus=job.spec.gpus_per_task,
        milli=s.milli,
        cpus=job.spec.cpus_per_task,
        mem_mb=s.mem_mb // tasks,
        models=s.models,
        features=s.features,
        exclusive=False,
        switches=None,
    )


def merge(parts: list[Allocation]) -> Allocation:
    """The pods' allocations as one (a node appears once per pod placed on it)."""
    first = parts[0]
    return Allocation(
        nodes=tuple(n for a in parts for n in a.nodes),
        devices=tuple(d for a in parts for d in a.devices),
        milli=first.milli,
        cpus=first.cpus,
        mem_mb=first.mem_mb,
    )


class KubernetesScheduler:
    plugin = "sched/k8s"

    def __init__(self, params: Mapping[str, object]) -> None:
        timeout = params.get("hold_timeout_ms", 10 * MINUTE)
        self.timeout = int(timeout) if isinstance(timeout, int) else 10 * MINUTE
        self._in_deadlock = False
        self._pods: dict[tuple[object, int], Shape] = {}

    def schedule(self, ctx: PassContext) -> None:
        now = ctx.now
        state = ctx.state
        # Timeouts first: a partially placed job deep in the queue still gives its pods back.
        for job in ctx.held():
            if job.hold_since is not None and now - job.hold_since >= self.timeout:
                ctx.release_holds(job)
        full: set[Shape] = set()
        pending = ctx.pending()
        only_whole = not ctx.more_than_whole_gpus_pending()
        resources = Status.wait(Reason.RESOURCES, self.plugin)
        for index, job in enumerate(pending):
            if only_whole and state.free_gpus == 0 and not job.holds:
                ctx.wait_rest(pending, index, resources)
                break
            key = (job.key, job.spec.tasks_per_node)
            shape = self._pods.get(key)
            if shape is None:
                shape = self._pods[key] = pod_shape(job)
            total = job.shape.nodes_min * job.spec.tasks_per_node
            while len(job.holds) < total:
                if shape in full or (shape.gpus and shape.gpus > state.free_gpus):
                    break
                alloc = ctx.place(job, None) if total == 1 else ctx.place_shape(shape, 1)
                if alloc is None:
                    full.add(shape)
                    break
                if total == 1:
                    ctx.start(job, alloc)
                    break
                ctx.hold(job, alloc)
            if job.holds and len(job.holds) == total:
                parts = list(job.holds)
                ctx.release_holds(job)
                ctx.start(job, merge(parts))
            elif job.holds:
                ctx.wait(job, Status.wait(Reason.GANG_WAIT, self.plugin))
                if job.hold_since is not None:
                    ctx.wake_at(job.hold_since + self.timeout)
            elif job.start is None and job.reason is not Reason.RESOURCES:
                ctx.wait(job, resources)
        self._check_deadlock(ctx)

    def _check_deadlock(self, ctx: PassContext) -> None:
        partial = ctx.held()
        if len(partial) < 2:
            self._in_deadlock = False
            return
        state = ctx.state
        releasable = state.free_gpus + sum(
            len(d) for r in ctx.running() if r.alloc is not None for d in r.alloc.devices
        )
        stuck = all(
            (j.shape.nodes_min * j.spec.tasks_per_node - len(j.holds)) * j.spec.gpus_per_task
            > releasable
            for j in partial
        )
        if stuck and not self._in_deadlock:
            ctx.note_deadlock(partial)
        self._in_deadlock = stuck
