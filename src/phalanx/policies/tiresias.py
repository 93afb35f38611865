"""``preempt/las``: Tiresias' preemption (2D-LAS, NSDI'19) as a post-filter.

A pending job that fits nowhere preempts running jobs of strictly lower-priority LAS queues
(highest queue index first, then the newest), as few as it needs; the victims requeue and lose
the work since their last checkpoint. A job that started less than ``min_run_ms`` ago is not a
victim (the lease of the paper's scheduling interval). Tiresias' profile puts ``priority/las``
at queue sort and ``sched/greedy`` (no reservations, every blocked job searches) after it.
"""

from __future__ import annotations

from collections.abc import Mapping

from phalanx.domain.time import MINUTE
from phalanx.policies.priority_simple import LasPriority, las_queue
from phalanx.sched.context import PassContext
from phalanx.sched.job import Job

__all__ = ["LasPreempt"]


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
            now = ctx.now
            found = sorted(
                ((self.las.queue(r, now), r.seq, r) for r in ctx.running()),
                key=lambda t: (-t[0], -t[1]),
            )
            ctx.scratch[self.plugin] = found
        assert isinstance(found, list)
        return found

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
