"""``sched/backfill``, ``sched/builtin`` and ``sched/greedy``: passes over a priority order.

- ``sched/builtin`` (strict FIFO with gangs): start jobs in order; stop at the first that
  does not fit.
- ``sched/backfill``: start what fits; the first ``depth`` blocked jobs get a reservation on
  the timeline (``depth`` 1 is EASY, more is conservative up to that depth); a lower job
  starts only where it delays no reservation. With ``min_age_reserve_ms`` (Slurm's
  bf_min_age_reserve) only jobs pending that long are reserved for. With a preempt plugin, a
  blocked job that may preempt (by QOS or partition tier), and up to ``victim_search_depth``
  other blocked jobs a pass, ask for victims before they are reserved.
- ``sched/greedy``: start whatever fits, skip what does not, reserve nothing (Kueue's
  BestEffortFIFO, Volcano's allocate).

``sched/backfill`` takes Slurm's bounds on its passes (SchedulerParameters, each off unless
set): ``max_job_test`` (bf_max_job_test: a pass looks at no more jobs than this; the rest keep
the reason and expected start they had), ``window_ms`` (bf_window: no reservation further
ahead), ``resolution_ms`` (bf_resolution: running jobs' ends rounded up to this step on the
timeline) and ``interval_ms`` (bf_interval: a backfill pass at most this often; the passes in
between are Slurm's main scheduler, over ``queue_depth`` jobs (default_queue_depth, 100),
which starts jobs in order until the first that does not fit, and ask for a pass when the
next backfill is due).
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import partial

from phalanx.domain.state import Reason
from phalanx.domain.time import Instant
from phalanx.errors import ConfigError
from phalanx.sched.capacity import Capacity
from phalanx.sched.job import Job
from phalanx.sched.protocols import PassContext
from phalanx.sched.status import Status
from phalanx.sched.timeline import Timeline

__all__ = ["BackfillScheduler", "FifoScheduler", "GreedyScheduler"]


def _never(job: Job) -> bool:
    return False


def _whole_gpus(job: Job) -> int:
    return job.shape.nodes_min * job.shape.gpus


def _positive(params: Mapping[str, object], key: str) -> int | None:
    value = params.get(key)
    if value is None:
        return None
    if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
        raise ConfigError(f"sched/backfill: {key} must be a positive integer, not {value!r}")
    return value


class BackfillScheduler:
    plugin = "sched/backfill"

    def __init__(self, params: Mapping[str, object]) -> None:
        depth = params.get("depth", 1)
        window = params.get("window_ms")
        self.depth = int(depth) if isinstance(depth, int) else 1
        self.window = int(window) if isinstance(window, int) else None
        self.reserve = bool(params.get("reserve", True))
        self.stop_at_blocked = bool(params.get("stop_at_blocked", False))
        victim_depth = params.get("victim_search_depth", 0)
        self.victim_depth = int(victim_depth) if isinstance(victim_depth, int) else 0
        """Blocked jobs per pass that may look for victims although their QOS and partition
        preempt nothing (the preempt plugin decides which victims are cheap enough)."""
        min_age = params.get("min_age_reserve_ms", 0)
        self.min_age_reserve = int(min_age) if isinstance(min_age, int) else 0
        """Slurm's bf_min_age_reserve: reserve only for jobs pending at least this long."""
        self.max_job_test = _positive(params, "max_job_test")
        self.resolution = _positive(params, "resolution_ms") or 0
        self.interval = _positive(params, "interval_ms")
        self.queue_depth = _positive(params, "queue_depth") or 100
        """Slurm's default_queue_depth: jobs a pass between backfill passes looks at."""
        self._next_backfill: Instant | None = None
        """With ``interval``: when the next backfill pass is due (the passes before it are
        main-scheduler passes)."""

    def schedule(self, ctx: PassContext) -> None:
        now = ctx.now
        if self.interval is not None:
            if self._next_backfill is not None and now < self._next_backfill:
                self._main(ctx, self._next_backfill)
                return
            self._next_backfill = now + self.interval
        state = ctx.state
        timeline = Timeline(state, now, self.resolution)
        limit = self.max_job_test
        # Shape -> the shortest time limit that failed: a job of the same shape that runs at
        # least as long fails too (views only shrink with the end of the run and the pass).
        failed: dict[object, tuple[int, Status]] = {}
        reserved = 0
        blocked = False
        horizon: Instant | None = now + self.window if self.window is not None else None
        depth = self.depth if self.reserve else 0
        only_whole = not ctx.more_than_whole_gpus_pending()
        # The top blocked jobs' reservations are computed lazily: only once a lower job could
        # start on free resources is it worth knowing what it must not delay.
        unreserved: list[Job] = []
        pending = ctx.pending()
        preemptors = ctx.preemptors_pending()
        could_preempt = ctx.could_preempt if preemptors else _never
        searched = 0
        # No node has more free GPUs than this (starts only lower it): a cheap test before
        # a placement is tried.
        most_free = int(state.cap.gpus.max()) if state.n else 0
        for index, job in enumerate(pending):
            if limit is not None and index >= limit:
                break  # bf_max_job_test: the rest keep what they had
            if (
                only_whole
                and not preemptors
                and state.free_gpus == 0
                and reserved + len(unreserved) >= depth
                and searched >= self.victim_depth
            ):
                # Nothing more can start, be reserved or preempt this pass.
                ctx.wait_rest(pending, index, Status.wait(Reason.PRIORITY, self.plugin))
                break
            known = failed.get(job.key)
            if known is not None and job.time_limit >= known[0] and not could_preempt(job):
                if job.reason is not known[1].reason:
                    ctx.wait(job, known[1])
                searched += 1  # a blocked job passed over counts against the search budget
                continue
            status = ctx.admit(job)
            if not status.ok:
                ctx.wait(job, status)
                continue
            end = now + job.time_limit
            need = _whole_gpus(job)
            if need <= state.free_gpus and job.shape.gpus <= most_free:
                if unreserved and not self._ends_before(timeline, unreserved, end):
                    self._reserve(ctx, timeline, unreserved, horizon)
                    reserved += len(unreserved)
                    unreserved = []
                cap: Capacity | None = None
                if timeline.reservations:
                    cap = timeline.view(state.cap, end)
                alloc = ctx.place(job, cap)
                if alloc is not None:
                    ctx.start(job, alloc)
                    if timeline.reservations:
                        timeline.consume(alloc, end)
                    continue
            reason = Reason.PRIORITY if blocked else Reason.RESOURCES
            blocked = True
            if self.stop_at_blocked:
                ctx.wait(job, Status.wait(reason, self.plugin))
                ctx.wait_rest(pending, index + 1, Status.wait(Reason.PRIORITY, self.plugin))
                break
            victims = None
            if could_preempt(job) or searched < self.victim_depth:
                searched += 1
                victims = ctx.find_victims(job)
            if victims:
                ctx.preempt(victims, job)
                status = Status.wait(Reason.RESOURCES, "preempt")
                ctx.wait(job, status)
                # Reserved like any blocked job: what its victims give back, and what it needs
                # besides, must not go to lower jobs meanwhile (or it would preempt forever).
                if reserved + len(unreserved) < depth:
                    unreserved.append(job)
                continue
            if reserved + len(unreserved) < depth and now - job.submit >= self.min_age_reserve:
                ctx.wait(job, Status.wait(reason, self.plugin))
                unreserved.append(job)
                continue
            status = Status.wait(Reason.PRIORITY, self.plugin)
            failed[job.key] = (job.time_limit, status)
            ctx.wait(job, status)
        if unreserved:
            self._expect(ctx, timeline, unreserved, horizon, exact=reserved == 0)

    def _main(self, ctx: PassContext, backfill_at: Instant) -> None:
        """Slurm's main scheduler between backfill passes, over its first ``queue_depth``
        jobs (default_queue_depth): jobs in order start where they fit, or preempt where they
        may; after the first that does not start, the others wait for Priority (a job that
        already had a reason keeps it, and its expected start). A blocked job asks for a pass
        when the backfill is due."""
        state = ctx.state
        pending = ctx.pending()
        blocked = False
        for job in pending[: self.queue_depth]:
            if blocked:
                if job.reason is Reason.NONE:
                    ctx.wait(job, Status.wait(Reason.PRIORITY, self.plugin))
                continue
            status = ctx.admit(job)
            if not status.ok:
                ctx.wait(job, status)
                continue
            if _whole_gpus(job) <= state.free_gpus:
                alloc = ctx.place(job, None)
                if alloc is not None:
                    ctx.start(job, alloc)
                    continue
            blocked = True
            victims = ctx.find_victims(job) if ctx.could_preempt(job) else None
            if victims:
                ctx.preempt(victims, job)
                ctx.wait(job, Status.wait(Reason.RESOURCES, "preempt"))
            elif job.reason is not Reason.RESOURCES:
                ctx.wait(job, Status.wait(Reason.RESOURCES, self.plugin))
            ctx.wake_at(backfill_at)

    def _expect(
        self,
        ctx: PassContext,
        timeline: Timeline,
        jobs: list[Job],
        horizon: Instant | None,
        *,
        exact: bool,
    ) -> None:
        """Expected starts of blocked jobs nobody needed to reserve for this pass.

        For the first one, with nothing reserved before it, the counting bound is its
        reservation's start (whole GPUs, no switch limit); otherwise reserve for real."""
        first = jobs[0]
        shape = first.shape
        if exact and not (shape.milli or shape.exclusive or shape.switches):
            bound = timeline.lower_bound(first.id, shape)
            if horizon is not None and bound is not None and bound > horizon:
                bound = None
            ctx.wait(first, Status.wait(first.reason, first.reason_plugin), bound)
            jobs = jobs[1:]
        if jobs:
            self._reserve(ctx, timeline, jobs, horizon)

    @staticmethod
    def _ends_before(timeline: Timeline, jobs: list[Job], end: Instant) -> bool:
        """Whether a job ending at ``end`` surely delays none of ``jobs`` (not reserved yet):
        it ends before any of them could start. Saves computing reservations in most passes."""
        for job in jobs:
            bound = timeline.lower_bound(job.id, job.shape, exact=False)
            if bound is not None and end > bound:
                return False
        return True

    def _reserve(
        self, ctx: PassContext, timeline: Timeline, jobs: list[Job], horizon: Instant | None
    ) -> None:
        for job in jobs:
            res = timeline.earliest(
                job.id, job.shape, job.time_limit, partial(ctx.place, job), horizon
            )
            status = Status.wait(job.reason, job.reason_plugin)
            ctx.wait(job, status, res.start if res is not None else None)


class FifoScheduler(BackfillScheduler):
    plugin = "sched/builtin"

    def __init__(self, params: Mapping[str, object]) -> None:
        super().__init__({**params, "reserve": False, "stop_at_blocked": True})


class GreedyScheduler(BackfillScheduler):
    plugin = "sched/greedy"

    def __init__(self, params: Mapping[str, object]) -> None:
        super().__init__({**params, "reserve": False})
