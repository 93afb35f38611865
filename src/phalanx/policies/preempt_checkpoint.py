"""``preempt/checkpoint``: the cheapest victims, by work lost since their last checkpoint.

A job may preempt a running job whose QOS its own QOS lists in ``preempt``, or one in a
partition of a lower priority tier whose preempt mode is not OFF. Victims are added in order of
least work lost (GPUs x time since the last checkpoint), until the gang fits; then victims that
turn out not to be needed are dropped, dearest first, so the set is also small. A gang is
always preempted whole.
"""

from __future__ import annotations

from collections.abc import Mapping

from phalanx.domain.cluster import Cluster, PreemptMode
from phalanx.domain.time import Instant
from phalanx.sched.job import Job
from phalanx.sched.protocols import PassContext

__all__ = ["CheckpointPreempt", "could_preempt_any", "lost_work", "may_preempt"]


def lost_work(job: Job, now: Instant) -> float:
    """GPU-ms a preemption at ``now`` would throw away."""
    if job.start is None or job.alloc is None:
        return 0.0
    ran = now - job.start
    interval = job.spec.checkpoint_interval
    since = ran % interval if interval else ran
    return job.alloc.gpus * since


def may_preempt(job: Job, victim: Job, cluster: Cluster) -> bool:
    qos = cluster.qos.get(job.spec.qos)
    vqos = cluster.qos.get(victim.spec.qos)
    if qos is not None and victim.spec.qos in qos.preempt:
        return vqos is None or vqos.preempt_mode is not PreemptMode.OFF
    part = cluster.partitions.get(victim.partition)
    return (
        victim.tier < job.tier
        and part is not None
        and part.preempt_mode is not PreemptMode.OFF
    )


def could_preempt_any(job: Job, cluster: Cluster) -> bool:
    """Whether any running job could ever be a victim of ``job`` (cheap, by QOS and tier)."""
    qos = cluster.qos.get(job.spec.qos)
    if qos is not None and qos.preempt:
        return True
    return any(
        p.priority_tier < job.tier and p.preempt_mode is not PreemptMode.OFF
        for p in cluster.partitions.values()
    )


class CheckpointPreempt:
    def __init__(self, params: Mapping[str, object]) -> None:
        del params
        self._can: dict[tuple[str, int], bool] = {}

    def victims(self, job: Job, ctx: PassContext) -> list[Job] | None:
        now = ctx.now
        cluster = ctx.cluster
        key = (job.spec.qos, job.tier)
        can = self._can.get(key)
        if can is None:
            can = self._can[key] = could_preempt_any(job, cluster)
        if not can:
            return None
        candidates = [
            r
            for r in ctx.running()
            if not ctx.is_preempting(r) and may_preempt(job, r, cluster)
        ]
        if not candidates:
            return None
        candidates.sort(key=lambda r: (lost_work(r, now), -(r.alloc.gpus if r.alloc else 0), r.seq))
        cap = ctx.state.cap.copy()
        chosen: list[Job] = []
        for r in candidates:
            assert r.alloc is not None
            cap.give(r.alloc)
            chosen.append(r)
            if ctx.place(job, cap) is not None:
                break
        else:
            return None
        for r in sorted(chosen, key=lambda r: (-lost_work(r, now), r.seq)):
            assert r.alloc is not None
            cap.take(r.alloc)
            if ctx.place(job, cap) is None:
                cap.give(r.alloc)
            else:
                chosen.remove(r)
        return chosen
