"""``permit/pod-group``: vanilla Kubernetes' gang wait, at permit. No gang scheduling.

Kubernetes' profile places each task as a pod on its own (``members="pods"``), in queue order,
as soon as some node fits it (LeastAllocated spreading at score). A job runs only when its last
pod is placed; until then its placed pods hold their GPUs idle: this plugin keeps such a job
waiting (GangWait). Jobs that hold parts of the cluster can wait on each other forever
(Kubeflow training-operator #165): a pass counts a deadlock when no partially placed job could
complete even if every running job ended, and a partially placed job that has waited
``hold_timeout_ms`` gives back its pods and waits again, as gang-scheduling timeouts of the
operators do: its pods are made again, so they queue behind the pods already waiting at their
priority (kube-scheduler orders pods of equal priority by when they were queued, and queues a
pod again under a new timestamp after a failed attempt). Were it to keep its place, it would
take back what it just gave up before any other job could use it, and gangs that block each
other would do so for ever, each timing out in turn (found by the property tests).
"""

from __future__ import annotations

from collections.abc import Mapping

from mypy_extensions import mypyc_attr

from phalanx.domain.state import Reason
from phalanx.domain.time import MINUTE
from phalanx.sched.context import GangContext
from phalanx.sched.job import Job
from phalanx.sched.members import member_count
from phalanx.sched.status import OK, Status

__all__ = ["PodGroupPermit"]


@mypyc_attr(allow_interpreted_subclasses=True)
class PodGroupPermit:
    plugin = "permit/pod-group"

    def __init__(self, params: Mapping[str, object]) -> None:
        timeout = params.get("hold_timeout_ms", 10 * MINUTE)
        self.timeout = int(timeout) if isinstance(timeout, int) else 10 * MINUTE
        self._in_deadlock = False
        self._wait = Status.wait(Reason.GANG_WAIT, self.plugin)

    def begin(self, ctx: GangContext) -> None:
        # Timeouts first: a partially placed job deep in the queue still gives its pods back.
        now = ctx.now
        for job in ctx.waiting():
            if job.hold_since is not None and now - job.hold_since >= self.timeout:
                ctx.requeue(job)

    def permit(self, job: Job, members: int, ctx: GangContext) -> Status:
        if len(job.holds) >= members:
            return OK
        if job.hold_since is not None:
            ctx.wake_at(job.hold_since + self.timeout)
        return self._wait

    def end(self, ctx: GangContext) -> None:
        partial = ctx.waiting()
        if len(partial) < 2:
            self._in_deadlock = False
            return
        releasable = ctx.state.free_gpus + sum(
            len(d) for r in ctx.running() if r.alloc is not None for d in r.alloc.devices
        )
        stuck = all(
            (member_count(j) - len(j.holds)) * j.spec.gpus_per_task > releasable for j in partial
        )
        if stuck and not self._in_deadlock:
            ctx.note_deadlock(partial)
        self._in_deadlock = stuck
