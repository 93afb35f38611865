"""``preempt/las``: Tiresias' preemption (2D-LAS, NSDI'19) as a post-filter.

A pending job that fits nowhere preempts running jobs of strictly lower-priority LAS queues
(highest queue index first, then the newest), as few as it needs; the victims requeue and lose
the work since their last checkpoint. A job that started less than ``min_run_ms`` ago is not a
victim (the lease of the paper's scheduling interval). Tiresias' profile puts ``priority/las``
at queue sort and ``sched/greedy`` (no reservations, every blocked job searches) after it.
"""

from __future__ import annotations

import bisect
import itertools
from collections.abc import Iterable, Mapping
from operator import itemgetter

from phalanx.domain.time import MINUTE, Instant
from phalanx.policies.priority_simple import LasPriority, las_queue
from phalanx.sched.context import PassContext
from phalanx.sched.job import Job

__all__ = ["LasPreempt"]

_first_two = itemgetter(0, 1)


class LasPreempt:
    plugin = "preempt/las"

    def __init__(self, params: Mapping[str, object]) -> None:
        self.las = LasPriority(params)
        max_victims = params.get("max_victims", 16)
        self.max_victims = int(max_victims) if isinstance(max_victims, int) else 16
        min_run = params.get("min_run_ms", 5 * MINUTE)
        self.min_run = int(min_run) if isinstance(min_run, int) else 5 * MINUTE

    def _running(self, ctx: PassContext) -> list[tuple[int, int, Job]]:
        """Running jobs by LAS queue, lowest priority first: once per pass (jobs started
        later in the pass are in the first queue and just started, never victims)."""
        found = ctx.scratch.get(self.plugin)
        if found is None:
            found = ctx.scratch[self.plugin] = self._by_queue(ctx.running(), ctx.now)
        assert isinstance(found, list)
        return found

    def _by_queue(self, running: Iterable[Job], now: Instant) -> list[tuple[int, int, Job]]:
        """Running jobs as ``(queue, seq, job)``, lowest-priority queue first, then newest.

        ``LasPriority.queue`` of a running job inlined (a running job is never promoted): a
        deep queue blocks in nearly every pass, and every pass needs this order afresh."""
        thresholds = self.las.thresholds
        ordered = all(a <= b for a, b in itertools.pairwise(thresholds))
        last = len(thresholds)
        keyed: list[tuple[int, int, Job]] = []
        for r in running:
            attained = r.attained_gpu_ms
            if r.start is not None and r.alloc is not None:
                attained += int(r.alloc.gpus * (now - r.start))
            if ordered:
                q = bisect.bisect_right(thresholds, attained)
            else:
                q = next((i for i, t in enumerate(thresholds) if attained < t), last)
            keyed.append((-q, -r.seq, r))
        keyed.sort(key=_first_two)  # seq is unique: jobs themselves are never compared
        return [(-nq, -ns, r) for nq, ns, r in keyed]

    def victims(self, job: Job, ctx: PassContext) -> list[Job] | None:
        # Starvation promotion only reorders the queue; preemption goes by attained service.
        q = las_queue(job.attained_at(ctx.now), self.las.thresholds)
        cap = ctx.state.cap.copy()
        chosen: list[Job] = []
        for rq, _, r in self._running(ctx):
            if rq <= q or len(chosen) >= self.max_victims:
                break
            if ctx.is_preempting(r) or r.alloc is None:
                continue
            if r.start is not None and ctx.now - r.start < self.min_run:
                continue  # a lease: a job just started is not preempted at once
            cap.give(r.alloc)
            chosen.append(r)
            if ctx.place(job, cap) is not None:
                return chosen
        return None
