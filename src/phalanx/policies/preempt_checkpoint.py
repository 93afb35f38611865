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
from phalanx.domain.time import HOUR, MINUTE, Instant
from phalanx.sched.context import PassContext
from phalanx.sched.job import Job

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
    qos = cluster.qos_for(job.spec.qos)
    vqos = cluster.qos_for(victim.spec.qos)
    if qos is not None and (vqos.name if vqos else victim.spec.qos) in qos.preempt:
        return vqos is None or vqos.preempt_mode is not PreemptMode.OFF
    part = cluster.partitions.get(victim.partition)
    return victim.tier < job.tier and part is not None and part.preempt_mode is not PreemptMode.OFF


def could_preempt_any(job: Job, cluster: Cluster) -> bool:
    """Whether any running job could ever be a victim of ``job`` (cheap, by QOS and tier)."""
    qos = cluster.qos_for(job.spec.qos)
    if qos is not None and qos.preempt:
        return True
    return any(
        p.priority_tier < job.tier and p.preempt_mode is not PreemptMode.OFF
        for p in cluster.partitions.values()
    )


def _ms(params: Mapping[str, object], key: str, default: int) -> int:
    value = params.get(key, default)
    return int(value) if isinstance(value, int | float) else default


class CheckpointPreempt:
    """``preempt/checkpoint`` (post-filter). Victims by QOS or partition tier; with
    ``opportunistic``, also checkpointing jobs that
    have had a long run (attained service of ``victim_attained_gpu_ms`` or more) and would
    lose at most ``max_loss_ms`` since their last checkpoint, for a job that has had almost
    none (``job_attained_gpu_ms``): least-attained-service first, as Tiresias, but only where
    the victim loses next to nothing."""

    def __init__(self, params: Mapping[str, object]) -> None:
        self._can: dict[tuple[str, int], bool] = {}
        self.opportunistic = bool(params.get("opportunistic", False))
        self.victim_attained = _ms(params, "victim_attained_gpu_ms", 10 * HOUR)
        self.job_attained = _ms(params, "job_attained_gpu_ms", 1 * HOUR)
        self.max_loss = _ms(params, "max_loss_ms", 10 * MINUTE)
        self.max_restarts = _ms(params, "max_victim_restarts", 1)
        """A job already requeued this often is no longer a cheap victim: long jobs must end."""
        self.lease = _ms(params, "lease_ms", 5 * MINUTE)
        """A job that started this recently is not a cheap victim (no thrashing)."""

    def _cheap_candidates(self, job: Job, ctx: PassContext) -> list[Job]:
        """Cheap victims for jobs of this QOS and tier; the same for every such job until the
        running set changes, so a pass computes them once (the snapshot's memo)."""
        memo = ctx.state.memo()
        key = ("cheap-victims", ctx.now, job.spec.qos, job.tier)
        found = memo.get(key)
        if found is None:
            now, cluster, floor = ctx.now, ctx.cluster, self.victim_attained
            lease, max_loss = self.lease, self.max_loss
            # Most running jobs are short or far from a checkpoint: the inline tests reject
            # them before the full check is called (this runs in every contended pass).
            found = [
                r
                for r in ctx.running()
                if r.start is not None
                and r.alloc is not None
                and (interval := r.spec.checkpoint_interval)
                and now - r.start >= lease
                and (now - r.start) % interval <= max_loss
                and r.attained_gpu_ms + r.alloc.gpus * (now - r.start) >= floor
                and self._cheap_victim(job, r, cluster, now)
            ]
            memo[key] = found
        assert isinstance(found, list)
        return found

    def _cheap_victim(self, job: Job, victim: Job, cluster: Cluster, now: Instant) -> bool:
        interval = victim.spec.checkpoint_interval
        if not interval or not victim.spec.requeue or victim.tier > job.tier:
            return False
        if victim.restarts >= self.max_restarts:
            return False
        if victim.start is None or now - victim.start < self.lease:
            return False
        if (now - victim.start) % interval > self.max_loss:
            return False
        if victim.attained_at(now) < self.victim_attained:
            return False
        qos, vqos = cluster.qos_for(job.spec.qos), cluster.qos_for(victim.spec.qos)
        return (vqos.priority if vqos else 0) <= (qos.priority if qos else 0)

    def victims(self, job: Job, ctx: PassContext) -> list[Job] | None:
        now = ctx.now
        cluster = ctx.cluster
        key = (job.spec.qos, job.tier)
        can = self._can.get(key)
        if can is None:
            can = self._can[key] = could_preempt_any(job, cluster)
        cheap = self.opportunistic and job.attained_at(now) < self.job_attained
        if not can and not cheap:
            return None
        if ctx.victims_leaving(job):
            return None  # its victims are still on their way out
        if can:
            candidates = [
                r
                for r in ctx.running()
                if not ctx.is_preempting(r)
                and (
                    may_preempt(job, r, cluster)
                    or (cheap and self._cheap_victim(job, r, cluster, now))
                )
            ]
        else:
            candidates = [r for r in self._cheap_candidates(job, ctx) if not ctx.is_preempting(r)]
        if not candidates:
            return None
        # Whole GPUs free once the victims so far are gone, at most (a shared device counted
        # as if it became whole): while fewer than the job needs, placing cannot succeed and
        # is not tried. Not with a switch limit, whose failed placement asks for a wake-up.
        counting = job.shape.switches is None
        need = job.shape.nodes_min * job.shape.gpus
        could = ctx.state.free_gpus
        if counting and could + sum(_devices(r) for r in candidates) < need:
            return None
        candidates.sort(key=lambda r: (lost_work(r, now), -(r.alloc.gpus if r.alloc else 0), r.seq))
        cap = ctx.state.cap.copy()
        chosen: list[Job] = []
        for r in candidates:
            assert r.alloc is not None
            cap.give(r.alloc)
            chosen.append(r)
            could += _devices(r)
            if counting and could < need:
                continue
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


def _devices(job: Job) -> int:
    """GPU devices a running job holds (whole, or a share of one)."""
    alloc = job.alloc
    return sum(len(d) for d in alloc.devices) if alloc is not None else 0
