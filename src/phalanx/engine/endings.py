"""How running jobs end: what was asked of each run that is ending (a requeue, a cancel, a
preemption, a node failure, its time limit), and the state it ends in once its tasks are gone."""

from __future__ import annotations

from mypy_extensions import mypyc_attr

from phalanx.domain.cluster import Cluster, PreemptMode
from phalanx.domain.state import JobState
from phalanx.domain.time import Duration
from phalanx.sched.job import Job

__all__ = ["Endings", "preempt_mode"]


@mypyc_attr(allow_interpreted_subclasses=True)
class Endings:
    """The marks on running jobs, by id, that decide their end state."""

    __slots__ = ("cancelled", "failing", "preempting", "requeue_asked", "timeouts")

    def __init__(self) -> None:
        self.preempting: dict[int, tuple[PreemptMode, int]] = {}
        """Running jobs signalled for preemption: (mode, id of the job it was for)."""
        self.failing: set[int] = set()
        """On a node that went down."""
        self.requeue_asked: set[int] = set()
        self.timeouts: set[int] = set()
        self.cancelled: dict[int, str] = {}
        """Cancelled while running: by whom."""

    def forget(self, jid: int) -> str | None:
        """Clear every mark of a run that never started (its launch failed); return who had
        cancelled it, if anyone did: that cancel still stands."""
        self.requeue_asked.discard(jid)
        self.preempting.pop(jid, None)
        self.failing.discard(jid)
        self.timeouts.discard(jid)
        return self.cancelled.pop(jid, None)

    def final_state(self, job: Job) -> JobState:
        """The state ``job``'s run ends in; its marks are cleared. A requeue asked for wins
        over a cancel, which wins over a preemption, a node failure, then the time limit;
        with no mark, the exit status decides."""
        jid = job.id
        if jid in self.requeue_asked:
            self.requeue_asked.discard(jid)
            self.cancelled.pop(jid, None)
            self.preempting.pop(jid, None)
            self.failing.discard(jid)
            self.timeouts.discard(jid)
            return JobState.REQUEUED
        if jid in self.cancelled:
            del self.cancelled[jid]
            self.preempting.pop(jid, None)
            self.failing.discard(jid)
            self.timeouts.discard(jid)
            return JobState.CANCELLED
        if jid in self.preempting:
            mode, _ = self.preempting.pop(jid)
            self.timeouts.discard(jid)
            if mode is PreemptMode.REQUEUE and job.spec.requeue:
                return JobState.REQUEUED
            return JobState.PREEMPTED
        if jid in self.failing:
            self.failing.discard(jid)
            self.timeouts.discard(jid)
            return JobState.REQUEUED if job.spec.requeue else JobState.NODE_FAIL
        if jid in self.timeouts:
            self.timeouts.discard(jid)
            return JobState.TIMEOUT
        ok = job.exit_code == 0 and job.exit_signal == 0
        return JobState.COMPLETED if ok else JobState.FAILED


def preempt_mode(
    cluster: Cluster, victim: Job, suspend_grace: Duration = 0
) -> tuple[PreemptMode, Duration]:
    """How ``victim`` is preempted and its grace time: its partition's mode if set, else its
    QOS's. A policy that suspends its victims (the profile's ``suspend_grace``, Tiresias)
    gives every victim at least that long to save a checkpoint before the kill."""
    qos = cluster.qos_for(victim.spec.qos)
    part = cluster.partitions.get(victim.partition)
    mode: PreemptMode
    if part is not None and part.preempt_mode is not PreemptMode.OFF:
        mode, grace = part.preempt_mode, part.grace_time
    elif qos is not None:
        mode, grace = qos.preempt_mode, qos.grace_time
    else:
        mode, grace = PreemptMode.REQUEUE, 0
    return mode, max(grace, suspend_grace)
