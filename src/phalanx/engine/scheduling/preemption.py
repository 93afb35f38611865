"""Step 5 of the pass, engine side: who may preempt, and carrying out a post-filter's answer.

Whether a job may preempt at all follows Slurm's PreemptType: its QOS lists others to preempt,
or some partition of a lower priority tier allows preemption. Victims get their grace signal
(SIGTERM, SIGKILL after the grace time) and are requeued or cancelled as their QOS or partition
says; the job that preempted them is looked at first in later passes, and is nominated for
what they give back (``nominations``), so that it goes to it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from mypy_extensions import mypyc_attr

from phalanx.domain.cluster import Cluster, PreemptMode
from phalanx.domain.jobspec import SIGNALS
from phalanx.domain.time import Duration, Instant
from phalanx.engine.commands import Command, Kill, Signal, WakeAt
from phalanx.engine.decisions import DecisionLog, Preempted
from phalanx.engine.endings import Endings, preempt_mode
from phalanx.engine.scheduling.nominations import Nominations
from phalanx.engine.timers import KillTimer
from phalanx.sched.capacity import Allocation
from phalanx.sched.context import PassContext
from phalanx.sched.job import Job
from phalanx.sched.occupancy import Occupancy
from phalanx.sched.points import PostFilterPlugin

__all__ = ["Preemption"]


@mypyc_attr(allow_interpreted_subclasses=True)
class Preemption:
    def __init__(
        self,
        cluster: Cluster,
        plugin: PostFilterPlugin | None,
        endings: Endings,
        state: Occupancy,
        decisions: DecisionLog,
        emit: Callable[[Command], None],
        *,
        suspend_grace: Duration = 0,
    ) -> None:
        self.plugin = plugin
        self._cluster = cluster
        self._endings = endings
        self._state = state
        self._decisions = decisions
        self._emit = emit
        self._suspend_grace = suspend_grace
        """With a grace, victims are asked to checkpoint at the signal (suspension)."""
        self.claims: dict[int, set[int]] = {}
        """Jobs that preempted others, with their victims (or that wait for jobs already
        leaving, with those): a pass looks at them first (``PendingQueue.with_first``)."""
        self.nominations = Nominations(state)
        """What those jobs will take once their victims are gone, kept for them."""
        self._can: dict[tuple[str, int], bool] = {}
        self.preemptors = 0
        self._queue_can: Callable[[Job, Cluster], bool] | None = getattr(
            plugin, "could_preempt", None
        )
        """A post-filter's own answer to whether a job could preempt (a ClusterQueue's
        preemption policies), beyond QOS and partition tiers; stable for a job."""
        """Queued jobs for which ``could_preempt`` holds."""

    def could_preempt(self, job: Job) -> bool:
        """Whether ``job`` could preempt anything at all (by its QOS or partition tier, or
        as its post-filter says: ``could_preempt(job, cluster)`` where it has one)."""
        if self.plugin is None:
            return False
        key = (job.spec.qos, job.tier)
        can = self._can.get(key)
        if can is None:
            qos = self._cluster.qos_for(job.spec.qos)
            can = bool(qos is not None and qos.preempt) or any(
                p.priority_tier < job.tier and p.preempt_mode is not PreemptMode.OFF
                for p in self._cluster.partitions.values()
            )
            self._can[key] = can
        if not can and self._queue_can is not None:
            return self._queue_can(job, self._cluster)
        return can

    def is_preempting(self, job: Job) -> bool:
        return job.id in self._endings.preempting

    def victims(self, job: Job, ctx: PassContext) -> list[Job] | None:
        """The post-filter's victims for ``job``, or None without a plugin."""
        if self.plugin is None:
            return None
        return self.plugin.victims(job, ctx)

    def victims_leaving(self, job: Job) -> bool:
        """Whether victims ``job`` preempted earlier are still on their way out."""
        claimed = self.claims.get(job.id)
        return bool(claimed) and any(v in self._endings.preempting for v in claimed or ())

    def leaving(self) -> list[Allocation]:
        """The allocations of the running jobs signalled for preemption, in id order."""
        running = self._state.running
        return [running[v].alloc for v in sorted(self._endings.preempting) if v in running]

    def wait_for_leaving(self, job: Job) -> None:
        """``job`` waits for the jobs now leaving rather than preempting more (a
        post-filter's ``[]``): they count as its victims."""
        self.claims.setdefault(job.id, set()).update(self._endings.preempting)

    def forget(self, job_id: int) -> None:
        """``job_id`` left the queue: it claims nothing and is nominated for nothing."""
        self.claims.pop(job_id, None)
        self.nominations.drop(job_id)

    def preempt(self, victims: Sequence[Job], for_job: Job, now: Instant) -> None:
        """Signal, then requeue or cancel, each victim as its QOS or partition says."""
        self.claims.setdefault(for_job.id, set()).update(v.id for v in victims)
        for v in victims:
            mode, grace = preempt_mode(self._cluster, v, self._suspend_grace)
            self._endings.preempting[v.id] = (mode, for_job.id)
            # The timeline must see the victim's resources coming back at the kill, so that a
            # reservation for ``for_job`` can hold them against lower jobs.
            self._state.expect_end(v.id, now + grace)
            suspend = self._suspend_grace > 0  # the victim is asked to checkpoint now
            self._decisions.add(Preempted(now, v.id, v.run, for_job.id, mode, suspend))
            if grace > 0:
                self._emit(Signal(v.id, v.run, SIGNALS["TERM"]))
                self._emit(WakeAt(now + grace, KillTimer(v.id, v.run)))
            else:
                self._emit(Kill(v.id, v.run))
