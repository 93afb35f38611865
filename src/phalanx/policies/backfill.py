"""``sched/backfill``, ``sched/builtin`` and ``sched/greedy``: the reservation step.

- ``sched/builtin`` (strict FIFO with gangs): the first job that does not fit ends the pass.
- ``sched/backfill``: the first ``depth`` blocked jobs get a reservation on the timeline
  (``depth`` 1 is EASY, more is conservative up to that depth); a lower job starts only where
  it delays no reservation. With ``min_age_reserve_ms`` (Slurm's bf_min_age_reserve) only
  jobs pending that long are reserved for. A blocked job that may preempt (by QOS or partition
  tier), and up to ``victim_search_depth`` other blocked jobs a pass (``"all"``: every one),
  ask the post-filter for victims before they are reserved.
- ``sched/greedy``: start whatever fits, skip what does not, reserve nothing (Kueue's
  BestEffortFIFO, Volcano's allocate, Tiresias). With ``reason: "Resources"`` every blocked
  job waits for Resources (not the first for Resources and the rest for Priority, Slurm's
  way); ``rest`` is the reason of the jobs a pass ended before (``"none"``: they keep theirs).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from functools import partial

from phalanx.domain.state import Reason
from phalanx.domain.time import Instant
from phalanx.sched.capacity import Allocation, Capacity
from phalanx.sched.context import PassContext
from phalanx.sched.job import Job
from phalanx.sched.status import Status
from phalanx.sched.timeline import Timeline

__all__ = ["BackfillScheduler", "BackfillStep", "FifoScheduler", "GreedyScheduler"]

_ALL = 1 << 62


def _int(params: Mapping[str, object], key: str, default: int) -> int:
    value = params.get(key, default)
    if value == "all":
        return _ALL
    if not isinstance(value, int) or isinstance(value, bool):
        raise TypeError(f"{key} must be an integer")
    return value


class BackfillScheduler:
    plugin = "sched/backfill"

    def __init__(self, params: Mapping[str, object]) -> None:
        self.depth = _int(params, "depth", 1)
        window = params.get("window_ms")
        self.window = int(window) if isinstance(window, int) else None
        self.reserve = bool(params.get("reserve", True))
        self.stop_at_blocked = bool(params.get("stop_at_blocked", False))
        self.victim_depth = _int(params, "victim_search_depth", 0)
        """Blocked jobs per pass that may look for victims although their QOS and partition
        preempt nothing (the post-filter decides which victims are cheap enough)."""
        self.min_age_reserve = _int(params, "min_age_reserve_ms", 0)
        """Slurm's bf_min_age_reserve: reserve only for jobs pending at least this long."""
        reason = str(params.get("reason", "Slurm"))
        self.all_resources = reason == Reason.RESOURCES
        rest = str(params.get("rest", Reason.PRIORITY))
        self.rest = None if rest == "none" else Status.wait(rest, self.plugin)
        # Made once: a pass gives one of these to every blocked job.
        self.resources = Status.wait(Reason.RESOURCES, self.plugin)
        self.priority = (
            self.resources if self.all_resources else Status.wait(Reason.PRIORITY, self.plugin)
        )

    def begin(
        self, ctx: PassContext, *, could_preempt: Callable[[Job], bool] | None
    ) -> BackfillStep:
        return BackfillStep(self, ctx, could_preempt)


def _never(job: Job) -> bool:
    return False


class BackfillStep:
    """One pass of ``BackfillScheduler`` (``phalanx.sched.points.ReservationStep``)."""

    def __init__(
        self,
        conf: BackfillScheduler,
        ctx: PassContext,
        could_preempt: Callable[[Job], bool] | None,
    ) -> None:
        self.conf = conf
        self.ctx = ctx
        self.now = now = ctx.now
        self.state = ctx.state
        self.timeline = Timeline(ctx.state, now)
        self.rest = conf.rest
        self.stop_at_blocked = conf.stop_at_blocked
        self.depth = conf.depth if conf.reserve else 0
        self.horizon: Instant | None = now + conf.window if conf.window is not None else None
        self.only_whole = not ctx.more_than_whole_gpus_pending()
        self.preemptors = could_preempt is not None
        self.could_preempt = could_preempt or _never
        # Shape -> the shortest time limit that failed: a job of the same shape that runs at
        # least as long fails too (views only shrink with the end of the run and the pass).
        # Without reservations a placement does not depend on the time limit at all.
        self.failed: dict[object, tuple[int, Status]] = {}
        self.reserved = 0
        self.blocked_any = False
        self.searched = 0
        # The top blocked jobs' reservations are computed lazily: only once a lower job could
        # start on free resources is it worth knowing what it must not delay.
        self.unreserved: list[Job] = []

    def exhausted(self, job: Job) -> bool:
        # Nothing more can start, be reserved or preempt this pass.
        return (
            self.only_whole
            and not self.preemptors
            and self.state.free_gpus == 0
            and self.reserved + len(self.unreserved) >= self.depth
            and self.searched >= self.conf.victim_depth
            and not job.holds
        )

    def known(self, job: Job) -> Status | None:
        known = self.failed.get(job.key)
        if known is None or job.time_limit < known[0] or self.could_preempt(job):
            return None
        self.searched += 1  # a blocked job passed over counts against the search budget
        return known[1]

    def view(self, job: Job) -> Capacity | None:
        timeline = self.timeline
        end = self.now + job.time_limit
        if self.unreserved and not self._ends_before(end):
            self._reserve(self.unreserved)
            self.reserved += len(self.unreserved)
            self.unreserved = []
        if timeline.reservations:
            return timeline.view(self.state.cap, end)
        return None

    def started(self, job: Job, alloc: Allocation) -> None:
        if self.timeline.reservations:
            self.timeline.consume(alloc, self.now + job.time_limit)

    def blocked(self, job: Job) -> Status:
        if self.blocked_any:
            return self.conf.priority
        self.blocked_any = True
        return self.conf.resources

    def search(self, job: Job) -> bool:
        if self.could_preempt(job) or self.searched < self.conf.victim_depth:
            self.searched += 1
            return True
        return False

    def preempting(self, job: Job) -> None:
        # Reserved like any blocked job: what its victims give back, and what it needs
        # besides, must not go to lower jobs meanwhile (or it would preempt forever).
        if self.reserved + len(self.unreserved) < self.depth:
            self.unreserved.append(job)

    def settle(self, job: Job, status: Status) -> Status:
        if (
            self.reserved + len(self.unreserved) < self.depth
            and self.now - job.submit >= self.conf.min_age_reserve
        ):
            self.unreserved.append(job)
            return status
        status = self.conf.priority
        self.failed[job.key] = (job.time_limit if self.depth else 0, status)
        return status

    def finish(self) -> None:
        if self.unreserved:
            self._expect(self.unreserved, exact=self.reserved == 0)

    def _expect(self, jobs: list[Job], *, exact: bool) -> None:
        """Expected starts of blocked jobs nobody needed to reserve for this pass.

        For the first one, with nothing reserved before it, the counting bound is its
        reservation's start (whole GPUs, no switch limit); otherwise reserve for real."""
        first = jobs[0]
        shape = first.shape
        if exact and not (shape.milli or shape.exclusive or shape.switches):
            bound = self.timeline.lower_bound(first.id, shape)
            if self.horizon is not None and bound is not None and bound > self.horizon:
                bound = None
            self.ctx.expect(first, bound)
            jobs = jobs[1:]
        if jobs:
            self._reserve(jobs)

    def _ends_before(self, end: Instant) -> bool:
        """Whether a job ending at ``end`` surely delays none of the blocked jobs not reserved
        yet: it ends before any of them could start. Saves computing reservations in most
        passes."""
        for job in self.unreserved:
            bound = self.timeline.lower_bound(job.id, job.shape, exact=False)
            if bound is not None and end > bound:
                return False
        return True

    def _reserve(self, jobs: list[Job]) -> None:
        ctx = self.ctx
        for job in jobs:
            res = self.timeline.earliest(
                job.id, job.shape, job.time_limit, partial(ctx.place, job), self.horizon
            )
            ctx.expect(job, res.start if res is not None else None)


class FifoScheduler(BackfillScheduler):
    plugin = "sched/builtin"

    def __init__(self, params: Mapping[str, object]) -> None:
        super().__init__({**params, "reserve": False, "stop_at_blocked": True})


class GreedyScheduler(BackfillScheduler):
    plugin = "sched/greedy"

    def __init__(self, params: Mapping[str, object]) -> None:
        super().__init__({**params, "reserve": False})
