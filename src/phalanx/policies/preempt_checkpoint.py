"""``preempt/checkpoint``: the cheapest victims, by work lost since their last checkpoint.

A job may preempt a running job whose QOS its own QOS lists in ``preempt``, or one in a
partition of a lower priority tier whose preempt mode is not OFF. Victims are added in order of
least work lost (GPUs x time since the last checkpoint), until the gang fits; then victims that
turn out not to be needed are dropped, dearest first, so the set is also small. A gang is
always preempted whole.
"""

from __future__ import annotations

import bisect
from collections.abc import Mapping

from mypy_extensions import mypyc_attr

from phalanx.domain.cluster import Cluster, PreemptMode
from phalanx.domain.jobspec import JobSpec
from phalanx.domain.time import HOUR, MINUTE, Instant
from phalanx.errors import ConfigError
from phalanx.policies.victim_search import VictimBudget, lost_work, search
from phalanx.sched.capacity import Allocation
from phalanx.sched.context import PassContext
from phalanx.sched.job import Job

__all__ = ["CheckpointPreempt", "VictimBudget", "could_preempt_any", "lost_work", "may_preempt"]

_FIRST, _LAST = -1, 1 << 62
"""Below and above every job's ``seq``: bounds of a range of phases in (phase, seq) keys."""


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


@mypyc_attr(allow_interpreted_subclasses=True)
class CheckpointPreempt:
    """``preempt/checkpoint`` (post-filter). Victims by QOS or partition tier; with
    ``opportunistic``, also checkpointing jobs that
    have had a long run (attained service of ``victim_attained_gpu_ms`` or more) and would
    lose at most ``max_loss_ms`` since their last checkpoint, for a job that has had almost
    none (``job_attained_gpu_ms``): least-attained-service first, as Tiresias, but only where
    the victim loses next to nothing."""

    def __init__(self, params: Mapping[str, object]) -> None:
        self._can: dict[tuple[str, int], bool] = {}
        self._phase_signature: tuple[int, int, int] | None = None
        self._phases: dict[int, tuple[list[tuple[int, int]], list[Job]]] = {}
        """Running jobs that checkpoint, by interval: (phase of the start, seq), sorted, and
        the jobs in that order (``_near_checkpoint``)."""
        self._phased: dict[Job, tuple[int, tuple[int, tuple[int, int]] | None]] = {}
        """The running jobs ``_phases`` was last updated with: the run it saw and its entry's
        interval and key (None for a run that does not checkpoint)."""
        self._phased_starts = 0
        """The occupancy's ``starts`` at that update."""
        self.opportunistic = bool(params.get("opportunistic", False))
        self.victim_attained = _ms(params, "victim_attained_gpu_ms", 10 * HOUR)
        self.job_attained = _ms(params, "job_attained_gpu_ms", 1 * HOUR)
        self.max_loss = _ms(params, "max_loss_ms", 10 * MINUTE)
        self.max_restarts = _ms(params, "max_victim_restarts", 1)
        """A job already requeued this often is no longer a cheap victim: long jobs must end."""
        self.lease = _ms(params, "lease_ms", 5 * MINUTE)
        """A job that started this recently is not a cheap victim (no thrashing)."""
        limit = params.get("job_max_limit_ms")
        self.job_max_limit = int(limit) if isinstance(limit, int | float) else None
        """Only a job whose time limit is at most this may displace cheap victims (None: any).
        Displacing a run for a job as long as itself only moves the wait onto the victim."""
        self.job_min_wait = _ms(params, "job_min_wait_ms", 0)
        """Only a job that has waited this long since its submission may displace cheap
        victims. A requeued victim waits again for room of its own shape, for as long as the
        queue ahead of it takes; a job that would have found room within minutes anyway does
        not pass that wait on (on a lightly loaded cluster, most jobs)."""
        ratio = params.get("max_victim_gpu_ratio")
        self.max_ratio = float(ratio) if isinstance(ratio, int | float) else None
        """Cheap victims may hold at most this many GPUs per GPU of the job that preempts them
        (None: no bound). What a victim frees beyond what the job uses stands idle while the
        victim, requeued, waits for room of its own shape: a 1-GPU job that displaces an 8-GPU
        run leaves 7 GPUs idle and a whole-node job pending."""
        covered = params.get("covered_victim_gpus")
        self.covered_gpus = float(covered) if isinstance(covered, int | float) else None
        """Cheap victims holding more than this many GPUs are taken only if they could start
        again at once elsewhere, beside the job placed where the victims were (None: no such
        check). Such a preemption moves the victim rather than queueing it: it loses at most
        ``max_loss_ms`` and its restart, never a wait for room of its own shape."""
        spared = params.get("spared_victim_gpus")
        self.spared = _gpu_range(spared)
        """Cheap victims holding from ``low`` to ``high`` GPUs (a ``[low, high]`` pair, both
        included; None: none spared) are never taken. A requeued victim of a few GPUs on one
        node waits again for that many GPUs free on one node, which the one-GPU jobs that fill
        every gap keep taking before it; on Philly (``policies/catalog.py``) sparing runs of 2-4
        GPUs cut their class's wait at no cost in mean JCT, sparing whole nodes too cost the
        gangs that displace them."""
        most = params.get("max_victim_gpus")
        self.max_victim_gpus = float(most) if isinstance(most, int | float) else None
        """Cheap victims may hold at most this many GPUs (None: no bound). A requeued victim
        waits again for room of its own shape; one GPU is found on any node as soon as any job
        ends, while a whole node (or several GPUs on one) is what the small jobs that fill
        every gap keep taking, so a multi-GPU victim's second wait can outlast the time its
        preemptor saved."""

    def _cheap_candidates(self, job: Job, ctx: PassContext) -> list[Job]:
        """Cheap victims for jobs of this QOS and tier; the same for every such job until the
        running set changes, so a pass computes them once (the snapshot's memo)."""
        memo = ctx.state.memo()
        key = ("cheap-victims", ctx.now, job.spec.qos, job.tier)
        found = memo.get(key)
        if found is None:
            now, cluster, floor, lease = ctx.now, ctx.cluster, self.victim_attained, self.lease
            # ``_cheap_victim``'s tests, those on the job once (past the floor by the sum
            # below, ``attained_at`` truncates it: the same test against a whole floor).
            tier, max_loss, restarts = job.tier, self.max_loss, self.max_restarts
            qos = cluster.qos_for(job.spec.qos)
            priority = qos.priority if qos else 0
            fixed = self._fixed
            if fixed is None:
                fixed = self._fixed = {}
            cheap: list[Job] = []
            for r in self._near_checkpoint(ctx):
                start, alloc = r.start, r.alloc
                assert start is not None
                ran = now - start
                if ran < lease or alloc is None or r.attained_gpu_ms + alloc.gpus * ran < floor:
                    continue
                if r.tier > tier or r.restarts >= restarts:
                    continue
                spec = r.spec
                seen = fixed.get(r)
                if (
                    seen is None
                    or seen[0] is not spec
                    or seen[1] is not alloc
                    or seen[2] is not cluster
                ):
                    seen = fixed[r] = (spec, alloc, cluster, *self._fixed_tests(r, alloc, cluster))
                interval, vpriority = seen[3], seen[4]
                if interval and ran % interval <= max_loss and vpriority <= priority:
                    cheap.append(r)
            found = memo[key] = cheap
        assert isinstance(found, list)
        return found

    _fixed: dict[Job, tuple[JobSpec, Allocation, Cluster, int, int]] | None = None
    """``_cheap_victim``'s tests on what a run cannot change while it lasts, by running job,
    with the spec, allocation and cluster they were made with (frozen: a job updated, or a
    cluster reconfigured, is a new object, and its tests are made again)."""

    def _fixed_tests(self, r: Job, alloc: Allocation, cluster: Cluster) -> tuple[int, int]:
        """The run's checkpoint interval (0: never a cheap victim, by its requeue flag or
        its GPUs) and its QOS's priority."""
        spec, gpus, most, spared = r.spec, alloc.gpus, self.max_victim_gpus, self.spared
        interval = spec.checkpoint_interval or 0
        if (
            not spec.requeue
            or (most is not None and gpus > most)
            or (spared is not None and spared[0] <= gpus <= spared[1])
        ):
            interval = 0
        vqos = cluster.qos_for(spec.qos)
        return interval, vqos.priority if vqos else 0

    def _near_checkpoint(self, ctx: PassContext) -> list[Job]:
        """Running jobs that checkpoint and took their last checkpoint at most ``max_loss_ms``
        ago, found by bisection: running jobs are kept sorted by the phase of their starts in
        their checkpoint interval, updated with the runs that started or ended since (most
        running jobs are far from a checkpoint, and this is asked in every contended pass).
        In no useful order."""
        running = ctx.running()
        if not isinstance(running, list):
            running = list(running)  # the engine's view hands a fresh list already
        state = ctx.state
        signature = (id(state), state.starts, len(running))
        last = self._phase_signature
        if signature != last:
            same = last is not None and last[0] == signature[0]
            self._update_phases(running, state.starts, same)
            self._phase_signature = signature
        now, max_loss = ctx.now, self.max_loss
        near: list[Job] = []
        for interval, (keys, jobs) in self._phases.items():
            if max_loss >= interval:
                near.extend(jobs)
                continue
            # (now - start) % interval <= max_loss, with p = start % interval and
            # a = now % interval: a - max_loss <= p <= a, wrapping around below 0.
            a = now % interval
            low = a - max_loss
            upto = bisect.bisect_right(keys, (a, _LAST))
            if low >= 0:
                near.extend(jobs[bisect.bisect_left(keys, (low, _FIRST)) : upto])
            else:
                near.extend(jobs[:upto])
                near.extend(jobs[bisect.bisect_left(keys, (low + interval, _FIRST)) :])
        return near

    _order: list[Job] | None = None
    """The running list ``_phases`` was last updated with, as it came (a class default, so
    a plugin pickled before it existed gets it on first use: one full update)."""

    def _update_phases(self, running: list[Job], starts: int, same: bool) -> None:
        """``_phases`` for the runs in ``running``: those gone out, those new in (``same``:
        the occupancy is the one of the last update). A job that ended and started again
        since the last update is the same object with a new run: its old entry goes and its
        new one comes.

        The engine lists its running jobs in the order they started: the list is the last
        one less the runs that ended, the new runs after them. Where that is so, the ``d``
        starts since the last update are the last ``d`` jobs, each with a new run, and the
        runs that ended are found by walking the two lists side by side (a few object
        comparisons per job, instead of a look-up of each one). Any other list (another
        order, or a run that started and ended between two updates) is matched job by job
        (``_update_all``)."""
        old = self._order
        new_count = starts - self._phased_starts
        kept_count = len(running) - new_count
        if not same or old is None or new_count < 0 or kept_count < 0:
            self._update_all(running, starts)
            return
        phased = self._phased
        new = running[kept_count:]
        for r in new:
            seen = phased.get(r)
            if seen is not None and seen[0] == r.run:
                self._update_all(running, starts)  # not a new run: not the starts' order
                return
        gone = _left_out(old, running, kept_count)  # with the restarted jobs' old runs
        if gone is None:
            self._update_all(running, starts)
            return
        self._apply(gone, new, running, starts)

    def _update_all(self, running: list[Job], starts: int) -> None:
        """``_update_phases`` for any list: one pass over ``running`` finds the new runs and
        counts the others; only when that count says some run left is a set of ``running``
        made to find which."""
        phased = self._phased
        new: list[Job] = []
        kept = 0
        for r in running:
            seen = phased.get(r)
            if seen is not None and seen[0] == r.run:
                kept += 1
            else:
                new.append(r)
        gone = [r for r in new if r in phased]  # restarted: the old run's entry goes
        if kept + len(gone) < len(phased):
            current = set(running)
            gone += [r for r in phased if r not in current]
        self._apply(gone, new, running, starts)

    def _apply(self, gone: list[Job], new: list[Job], running: list[Job], starts: int) -> None:
        """Drop the entries of ``gone``, add those of ``new``; ``running`` is the list now."""
        phased = self._phased
        self._phased_starts = starts
        self._order = list(running)  # a copy: the caller's list may change after
        fixed = self._fixed
        for r in gone:
            if fixed is not None:
                fixed.pop(r, None)
            placed = phased.pop(r)[1]
            if placed is not None:
                keys, jobs = self._phases[placed[0]]
                i = bisect.bisect_left(keys, placed[1])
                del keys[i], jobs[i]
        for r in new:
            interval, start = r.spec.checkpoint_interval, r.start
            if not interval or start is None:
                phased[r] = (r.run, None)
                continue
            entry = (start % interval, r.seq)
            keys, jobs = self._phases.setdefault(interval, ([], []))
            i = bisect.bisect_left(keys, entry)
            keys.insert(i, entry)
            jobs.insert(i, r)
            phased[r] = (r.run, (interval, entry))

    def _cheap_victim(self, job: Job, victim: Job, cluster: Cluster, now: Instant) -> bool:
        interval = victim.spec.checkpoint_interval
        if not interval or not victim.spec.requeue or victim.tier > job.tier:
            return False
        if victim.restarts >= self.max_restarts:
            return False
        most = self.max_victim_gpus
        if most is not None and (victim.alloc is None or victim.alloc.gpus > most):
            return False
        if victim.start is None or now - victim.start < self.lease:
            return False
        spared = self.spared
        if (
            spared is not None
            and victim.alloc is not None
            and (spared[0] <= victim.alloc.gpus <= spared[1])
        ):
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
        cheap = (
            self.opportunistic
            and job.attained_at(now) < self.job_attained
            and now - job.submit >= self.job_min_wait
            and (self.job_max_limit is None or job.time_limit <= self.job_max_limit)
        )
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
        if can or ctx.leaf_limit(job) is not None:
            return self._search(job, ctx, candidates, can)
        # Cheap victims only, no leaf limit: the answer depends on the job's shape and the
        # candidates alone while nothing changes (the snapshot's memo), and the search asks
        # for no wake-up; jobs of one shape that are passed over for a shorter time limit
        # would otherwise search again in the same pass.
        memo = ctx.state.memo()
        mkey = ("victims", now, job.key, tuple(r.id for r in candidates))
        found = memo.get(mkey, ())
        if found == ():
            found = memo[mkey] = self._search(job, ctx, candidates, can)
        assert found is None or isinstance(found, list)
        return None if found is None else list(found)

    def _search(
        self,
        job: Job,
        ctx: PassContext,
        candidates: list[Job],
        can: bool,
        budget: VictimBudget | None = None,
    ) -> list[Job] | None:
        """``search`` (``victim_search``) with this plugin's bounds."""
        return search(job, ctx, candidates, can, budget, self.max_ratio, self.covered_gpus)


def _gpu_range(value: object) -> tuple[float, float] | None:
    """``[low, high]`` GPUs as a pair, None for None; anything else is a configuration error."""
    if value is None:
        return None
    if (
        isinstance(value, list | tuple)
        and len(value) == 2
        and all(isinstance(v, int | float) and not isinstance(v, bool) for v in value)
        and 0 <= value[0] <= value[1]
    ):
        return (float(value[0]), float(value[1]))
    raise ConfigError(
        f"spared_victim_gpus must be [low, high] GPUs with 0 <= low <= high, got {value!r}",
        field="preempt/checkpoint.spared_victim_gpus",
    )


def _left_out(old: list[Job], running: list[Job], kept: int) -> list[Job] | None:
    """The jobs of ``old`` not among the first ``kept`` of ``running``, if those are ``old``
    less some jobs, in the same order; None otherwise."""
    gone: list[Job] = []
    extra = len(old) - kept
    if extra < 0:
        return None
    i = 0
    for j in range(kept):
        r = running[j]
        while old[i] is not r:
            gone.append(old[i])
            i += 1
            if len(gone) > extra:
                return None
        i += 1
    gone.extend(old[i:])
    return gone
