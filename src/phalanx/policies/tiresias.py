"""``preempt/las``: Tiresias' preemption (2D-LAS, NSDI'19) as a post-filter.

A pending job that fits nowhere preempts running jobs of strictly lower-priority LAS queues
(highest queue index first, then the newest), as few as it needs; a job whose earlier victims
are still saving and would let it fit waits for them. The victims are suspended: signalled to
checkpoint now, given the profile's ``suspend_grace`` to save, and requeued with their work up
to the signal. A job that started less than ``min_run_ms`` ago is not a victim (the lease of
the paper's scheduling interval). The queues are ``priority/las``'s with these parameters
(the same defaults; a profile that sets thresholds sets them for both). Tiresias' profile puts
``priority/las`` at queue sort and ``sched/greedy`` (no reservations, every blocked job
searches) at the reservation step.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Mapping
from operator import itemgetter

import numpy as np
from mypy_extensions import mypyc_attr

from phalanx.domain.time import MINUTE, Instant
from phalanx.policies.backfill import GreedyScheduler
from phalanx.policies.priority_simple import LasPriority
from phalanx.sched.capacity import Allocation
from phalanx.sched.context import PassContext
from phalanx.sched.job import Job

__all__ = ["LasPreempt", "TiresiasStep"]

_first_two = itemgetter(0, 1)


@mypyc_attr(allow_interpreted_subclasses=True)
class LasPreempt:
    plugin = "preempt/las"

    def __init__(self, params: Mapping[str, object]) -> None:
        self._params = params
        self.las = LasPriority(params)
        self._las_from_priority = False
        max_victims = params.get("max_victims", 16)
        self.max_victims = int(max_victims) if isinstance(max_victims, int) else 16
        min_run = params.get("min_run_ms", 5 * MINUTE)
        self.min_run = int(min_run) if isinstance(min_run, int) else 5 * MINUTE

    def _running(self, ctx: PassContext) -> _PassRunning:
        """Running jobs by LAS queue, lowest priority first, and the allocations of those
        already being preempted: once per pass (jobs started later in the pass are in the
        first queue and just started, never victims; within a pass only this plugin
        preempts, and the victims it picks leave the list, so neither changes otherwise)."""
        found = ctx.scratch.get(self.plugin)
        if found is None:
            running_q = self._by_queue(ctx.running(), ctx.now)
            coming = [r.alloc for _, _, r in running_q if r.alloc and ctx.is_preempting(r)]
            found = ctx.scratch[self.plugin] = _PassRunning(running_q, coming)
        assert isinstance(found, _PassRunning)
        return found

    def _by_queue(self, running: Iterable[Job], now: Instant) -> list[tuple[int, int, Job]]:
        """Running jobs as ``(queue, seq, job)``, lowest-priority queue first, then newest.

        ``LasPriority.queue`` of a running job inlined (its LAS service: attained since its
        last promotion, which ``service_base_gpu_ms`` in its factors records), over numpy
        columns: a deep queue blocks in nearly every pass, and every pass needs this order
        afresh. The same integer service as ``Job.attained_at`` (``int()`` truncates the
        same double product that ``astype`` does)."""
        jobs = list(running)
        thresholds = self.las.thresholds
        if not all(a <= b for a, b in itertools.pairwise(thresholds)):
            return self._by_queue_unordered(jobs, now)
        n = len(jobs)
        attained = np.array([r.attained_gpu_ms for r in jobs], np.int64)
        attained -= np.array(
            [int(r.factors.get("service_base_gpu_ms", 0.0)) for r in jobs], np.int64
        )
        live = [r.start is not None and r.alloc is not None for r in jobs]
        if any(live):
            on = np.array(live)
            gpus = np.array([r.alloc.gpus if r.alloc is not None else 0.0 for r in jobs])
            start = np.array([r.start if r.start is not None else now for r in jobs], np.int64)
            attained[on] += (gpus[on] * (now - start[on])).astype(np.int64)
        queue = np.searchsorted(np.array(thresholds, np.int64), attained, side="right")
        seqs = np.array([r.seq for r in jobs], np.int64)
        order = np.lexsort((-seqs, -queue)) if n else np.zeros(0, np.intp)
        return list(
            zip(
                queue[order].tolist(),
                seqs[order].tolist(),
                [jobs[i] for i in order.tolist()],
                strict=True,
            )
        )

    def _by_queue_unordered(self, jobs: list[Job], now: Instant) -> list[tuple[int, int, Job]]:
        """``_by_queue`` for thresholds not in increasing order: the first one above."""
        thresholds = self.las.thresholds
        last = len(thresholds)
        keyed: list[tuple[int, int, Job]] = []
        for r in jobs:
            attained = r.attained_gpu_ms - int(r.factors.get("service_base_gpu_ms", 0.0))
            if r.start is not None and r.alloc is not None:
                attained += int(r.alloc.gpus * (now - r.start))
            q = next((i for i, t in enumerate(thresholds) if attained < t), last)
            keyed.append((-q, -r.seq, r))
        keyed.sort(key=_first_two)  # seq is unique: jobs themselves are never compared
        return [(-nq, -ns, r) for nq, ns, r in keyed]

    def victims(self, job: Job, ctx: PassContext) -> list[Job] | None:
        """Running jobs of lower queues whose GPUs let ``job`` start, as few as needed; ``[]``
        when the victims already on their way out are enough; None when no set is."""
        if not self._las_from_priority:
            # The queues are the priority plugin's: its thresholds, unless set here as well.
            self.las = LasPriority({**ctx.params("priority/las"), **self._params})
            self._las_from_priority = True
        # The job's queue with its promotion (release: a promoted job preempts as a Q0 job).
        q = self.las.queue(job, ctx.now)
        found = self._running(ctx)
        running_q = found.running
        cap = ctx.state.cap.copy()
        # Victims still saving their checkpoint give their GPUs back soon: a job that fits with
        # those waits for them rather than preempting more (several passes run within a grace).
        if found.coming:
            for alloc in found.coming:
                cap.give(alloc)
            if ctx.place(job, cap) is not None:
                return []
        chosen: list[Job] = []
        for rq, _, r in running_q:
            if rq <= q or len(chosen) >= self.max_victims:
                break
            if ctx.is_preempting(r) or r.alloc is None:
                continue
            if r.start is not None and ctx.now - r.start < self.min_run:
                continue  # a lease: a job just started is not preempted at once
            cap.give(r.alloc)
            chosen.append(r)
            if ctx.place(job, cap) is not None:
                # They leave this pass's list: later jobs do not count them as coming.
                kept = [t for t in running_q if t[2] not in chosen]
                ctx.scratch[self.plugin] = _PassRunning(kept, found.coming)
                return chosen
        return None


@mypyc_attr(allow_interpreted_subclasses=True)
class _PassRunning:
    """One pass's running jobs by LAS queue and the allocations already on their way out."""

    __slots__ = ("coming", "running")

    def __init__(self, running: list[tuple[int, int, Job]], coming: list[Allocation]) -> None:
        self.running = running
        self.coming = coming


@mypyc_attr(allow_interpreted_subclasses=True)
class TiresiasStep(GreedyScheduler):
    """``sched/tiresias``: the reservation step of Tiresias' profile: nothing reserved, every
    blocked job waits for Resources after asking the post-filter for victims."""

    plugin = "sched/tiresias"

    def __init__(self, params: Mapping[str, object]) -> None:
        super().__init__({**params, "reason": "Resources", "victim_search_depth": "all"})
