"""``sched/backfill``, ``sched/builtin`` and ``sched/greedy``: the reservation step.

- ``sched/builtin`` (strict FIFO with gangs): the first job that does not fit ends the pass.
- ``sched/backfill``: the first ``depth`` blocked jobs get a reservation on the timeline
  (``depth`` 1 is EASY, more is conservative up to that depth); a lower job starts only where
  it delays no reservation. With ``min_age_reserve_ms`` (Slurm's bf_min_age_reserve) only
  jobs pending that long are reserved for. With ``class_reserve`` (Phalanx's own: upper GPU
  bounds of size classes, e.g. ``[1, 4, 8, 64]``), the first blocked job of each size class
  also gets a reservation beyond ``depth``: a stream of higher-priority jobs of one size can
  then not starve every job of another (a gang's turn comes however many small jobs arrive).
  A blocked job that may preempt (by QOS or partition tier), and up to
  ``victim_search_depth`` other blocked jobs a pass (``"all"``: every one), ask the post-filter
  for victims before they are reserved.
- ``sched/greedy``: start whatever fits, skip what does not, reserve nothing (Kueue's
  BestEffortFIFO, Volcano's allocate, Tiresias). With ``reason: "Resources"`` every blocked
  job waits for Resources (not the first for Resources and the rest for Priority, Slurm's
  way); ``rest`` is the reason of the jobs a pass ended before (``"none"``: they keep theirs).

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

from collections.abc import Callable, Iterator, Mapping
from functools import partial

from mypy_extensions import mypyc_attr

from phalanx.domain.state import Reason
from phalanx.domain.time import Instant
from phalanx.errors import ConfigError
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


def _bounds(value: object) -> tuple[float, ...]:
    if value is None:
        return ()
    if (
        not isinstance(value, list | tuple)
        or not value
        or not all(isinstance(v, int | float) and not isinstance(v, bool) for v in value)
        or any(not 0 <= a < b for a, b in zip((0, *value), value, strict=False))
    ):
        raise ConfigError(
            f"sched/backfill: class_reserve must be increasing positive GPU counts, not {value!r}"
        )
    return tuple(float(v) for v in value)


def _positive(params: Mapping[str, object], key: str) -> int | None:
    value = params.get(key)
    if value is None:
        return None
    if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
        raise ConfigError(f"sched/backfill: {key} must be a positive integer, not {value!r}")
    return value


@mypyc_attr(allow_interpreted_subclasses=True)
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
        self.class_bounds = _bounds(params.get("class_reserve"))
        """Upper GPU bounds of the size classes whose first blocked job is reserved for
        (beyond ``depth``); empty: none."""
        reason = str(params.get("reason", "Slurm"))
        self.all_resources = reason == Reason.RESOURCES
        rest = str(params.get("rest", Reason.PRIORITY))
        self.rest = None if rest == "none" else Status.wait(rest, self.plugin)
        # Made once: a pass gives one of these to every blocked job.
        self.resources = Status.wait(Reason.RESOURCES, self.plugin)
        self.priority = (
            self.resources if self.all_resources else Status.wait(Reason.PRIORITY, self.plugin)
        )

        self.max_job_test = _positive(params, "max_job_test")
        self.resolution = _positive(params, "resolution_ms") or 0
        self.interval = _positive(params, "interval_ms")
        self.queue_depth = _positive(params, "queue_depth") or 100
        """Slurm's default_queue_depth: jobs a pass between backfill passes looks at."""
        self._next_backfill: Instant | None = None
        """With ``interval``: when the next backfill pass is due (the passes before it are
        main-scheduler passes)."""

    def begin(
        self, ctx: PassContext, *, could_preempt: Callable[[Job], bool] | None
    ) -> BackfillStep | MainStep:
        if self.interval is not None:
            due = self._next_backfill
            if due is not None and ctx.now < due:
                return MainStep(self, ctx, could_preempt, due)
            self._next_backfill = ctx.now + self.interval
        return BackfillStep(self, ctx, could_preempt)


def _never(job: Job) -> bool:
    return False


_NO_KEY = object()
"""No job's ``key``: what ``pass_over`` starts comparing keys with."""


@mypyc_attr(allow_interpreted_subclasses=True)
class BackfillStep:
    """One pass of ``BackfillScheduler`` (``phalanx.sched.points.ReservationStep``)."""

    views_kept = True
    """``view`` gives the same object for the same capacity while the occupancy's version
    stays, and nobody writes into it: the recipe may remember where a placement failed."""

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
        self.timeline = Timeline(ctx.state, now, conf.resolution)
        self.rest = conf.rest
        self.rest_new_only = False
        self.stop_at_blocked = conf.stop_at_blocked
        self.max_jobs = conf.max_job_test
        self.depth = conf.depth if conf.reserve else 0
        self.horizon: Instant | None = now + conf.window if conf.window is not None else None
        self.only_whole = not ctx.more_than_whole_gpus_pending()
        self.preemptors = could_preempt is not None
        self.could_preempt = could_preempt or _never
        # Shape -> the shortest time limit that failed: a job of the same shape that runs at
        # least as long fails too (views only shrink with the end of the run and the pass),
        # and waits for Priority as that one did (``conf.priority``, the one status ``settle``
        # gives them). Without reservations a placement does not depend on the time limit.
        # (A plain int, not a (limit, status) tuple: compiled, reading it unboxes nothing.)
        self.failed: dict[object, int] = {}
        self.reserved = 0
        self.by_class = 0
        """Jobs reserved for as their size class's first, beyond ``depth``."""
        self.classes: set[int] = set()
        """Size classes (indexes into ``class_bounds``) with a reservation this pass."""
        self.n_classes = len(conf.class_bounds) + 1 if conf.class_bounds else 0
        self.blocked_any = False
        self.searched = 0
        # The top blocked jobs' reservations are computed lazily: only once a lower job could
        # start on free resources is it worth knowing what it must not delay.
        self.unreserved: list[Job] = []
        self._bounds: list[Instant | None] = []
        """``_ends_before``'s lower bounds of the first ``unreserved`` jobs, as the timeline
        gave them at ``_bounds_at`` (its reservations, the occupancy's ``gives``)."""
        self._bounds_at = (0, ctx.state.gives)
        self._views: dict[tuple[int, int], Capacity] = {}
        """``view``'s answers at ``_views_at`` (the occupancy's version), by the number of
        reservations and which of them start before the job would end."""
        self._views_at = -1

    def exhausted(self, job: Job) -> bool:
        # Nothing more can start, be reserved or preempt this pass.
        return (
            self.only_whole
            and not self.preemptors
            and self.state.free_gpus == 0
            and self.reserved + len(self.unreserved) - self.by_class >= self.depth
            and len(self.classes) >= self.n_classes
            and self.searched >= self.conf.victim_depth
            and not job.holds
        )

    def known(self, job: Job) -> Status | None:
        limit = self.failed.get(job.key)
        if limit is None or job.time_limit < limit or (self.preemptors and self.could_preempt(job)):
            return None
        self.searched += 1  # a blocked job passed over counts against the search budget
        return self.conf.priority

    def pass_over(
        self, jobs: Iterator[Job], wait: Callable[[Job, Status], None], bound: int = -1
    ) -> tuple[int, Job | None]:
        # ``known`` for each job in turn, inlined (the tail of a deep queue is mostly this);
        # ``searched`` counts the jobs passed over once at the end (nothing here reads it).
        # (``failed.get`` called on the dict, not a bound ``get`` kept aside: compiled, that
        # is a direct lookup instead of a Python call.) Nothing is added to ``failed`` during
        # the loop, so a job whose key is the very object the last job's was has the same
        # limit: jobs of one shape often come in runs, and ``is`` costs no hash and lookup.
        failed = self.failed
        status = self.conf.priority
        reason = status.reason
        could = self.could_preempt if self.preemptors else None
        passed = 0
        after: Job | None = None
        last: object = _NO_KEY
        limit = 0
        for job in jobs:
            if passed == bound:
                after = job  # beyond the bound (bf_max_job_test): not looked at
                break
            key = job.key
            if key is not last:
                found = failed.get(key)
                if found is None:
                    after = job
                    break
                last = key
                limit = found
            if job.time_limit < limit or (could is not None and could(job)):
                after = job
                break
            passed += 1
            if job.reason is not reason:
                wait(job, status)
        self.searched += passed
        return passed, after

    def view(self, job: Job) -> Capacity | None:
        timeline = self.timeline
        end = self.now + job.time_limit
        if self.unreserved and not self._ends_before(end):
            self._reserve(self.unreserved)
            self.reserved += len(self.unreserved)
            self.unreserved = []
            self._bounds = []
        reservations = timeline.reservations
        if not reservations:
            return None
        # The view depends only on the free capacity and on which reservations start before
        # ``end``: jobs of other time limits often share it, and a failed placement changes
        # nothing (a start, or a reservation made, does: the version, or their number). Nobody
        # writes into a view (placement reads it; what-ifs copy it).
        state = self.state
        if self._views_at != state.version:
            self._views = {}
            self._views_at = state.version
        before = 0
        for i, r in enumerate(reservations):
            if r.start < end:
                before |= 1 << i
        key = (len(reservations), before)
        cap = self._views.get(key)
        if cap is None:
            cap = self._views[key] = timeline.view(state.cap, end)
        return cap

    def started(self, job: Job, alloc: Allocation) -> None:
        if self.timeline.reservations:
            self.timeline.consume(alloc, self.now + job.time_limit)

    def blocked(self, job: Job) -> Status:
        if self.blocked_any:
            return self.conf.priority
        self.blocked_any = True
        return self.conf.resources

    def search(self, job: Job) -> bool:
        # (``could_preempt`` is ``_never`` without preemptors: not called then, a Python call
        # for every blocked job.)
        if (self.preemptors and self.could_preempt(job)) or self.searched < self.conf.victim_depth:
            self.searched += 1
            return True
        return False

    def preempting(self, job: Job) -> None:
        # Reserved like any blocked job: what its victims give back, and what it needs
        # besides, must not go to lower jobs meanwhile (or it would preempt forever).
        if self.reserved + len(self.unreserved) - self.by_class < self.depth:
            self._take(job, by_class=False)
        elif self._class_free(job):
            self._take(job, by_class=True)

    def settle(self, job: Job, status: Status | None) -> Status | None:
        if self.now - job.submit >= self.conf.min_age_reserve:
            if self.reserved + len(self.unreserved) - self.by_class < self.depth:
                self._take(job, by_class=False)
                return status
            if self.n_classes and self._class_free(job):
                self._take(job, by_class=True)
                return status
        self.failed[job.key] = job.time_limit if self.depth else 0
        return self.conf.priority

    def _size_class(self, job: Job) -> int:
        gpus = job.gpus
        for i, bound in enumerate(self.conf.class_bounds):
            if gpus <= bound:
                return i
        return len(self.conf.class_bounds)

    def _class_free(self, job: Job) -> bool:
        """Whether ``job``'s size class has no reservation yet this pass (with classes)."""
        return bool(self.n_classes) and self._size_class(job) not in self.classes

    def _take(self, job: Job, *, by_class: bool) -> None:
        self.unreserved.append(job)
        self.by_class += by_class
        if self.n_classes:
            self.classes.add(self._size_class(job))

    def finish(self) -> None:
        if self.unreserved:
            self._expect(self.unreserved, exact=self.reserved == 0)

    def _expect(self, jobs: list[Job], *, exact: bool) -> None:
        """Expected starts of blocked jobs nobody needed to reserve for this pass.

        For the first one, with nothing reserved before it, the counting bound is its
        reservation's start (whole GPUs, no leaf limit in force); otherwise reserve for
        real."""
        first = jobs[0]
        shape = first.shape
        if exact and not (shape.milli or shape.exclusive or self.ctx.leaf_limit(first) is not None):
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
        # Each job's bound is asked of the timeline once while its reservations and the
        # resources given back (``gives``) stay as they are: it would answer the same.
        timeline = self.timeline
        at = (len(timeline.reservations), self.state.gives)
        if at != self._bounds_at:
            self._bounds = []
            self._bounds_at = at
        bounds = self._bounds
        for i, job in enumerate(self.unreserved):
            if i < len(bounds):
                bound = bounds[i]
            else:
                bound = timeline.lower_bound(job.id, job.shape, exact=False)
                bounds.append(bound)
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


@mypyc_attr(allow_interpreted_subclasses=True)
class MainStep:
    """Slurm's main scheduler between backfill passes, over its first ``queue_depth`` jobs
    (default_queue_depth): jobs in order start where they fit, or preempt where they may;
    after the first that does not start, the others wait for Priority (a job that already
    had a reason keeps it, and its expected start). A blocked job asks for a pass when the
    backfill is due. No reservations, no memo."""

    views_kept = True
    """``view`` is always None (all that is free): see ``BackfillStep.views_kept``."""

    def __init__(
        self,
        conf: BackfillScheduler,
        ctx: PassContext,
        could_preempt: Callable[[Job], bool] | None,
        backfill_at: Instant,
    ) -> None:
        self.ctx = ctx
        self.conf = conf
        self.backfill_at = backfill_at
        self.could_preempt = could_preempt or _never
        self.rest: Status | None = conf.priority
        self.rest_new_only = True
        self.stop_at_blocked = True
        self.max_jobs: int | None = conf.queue_depth
        self.failed: dict[object, object] = {}

    def exhausted(self, job: Job) -> bool:
        return False

    def known(self, job: Job) -> Status | None:
        return None

    def pass_over(
        self, jobs: Iterator[Job], wait: Callable[[Job, Status], None], bound: int = -1
    ) -> tuple[int, Job | None]:
        return 0, next(jobs, None)

    def view(self, job: Job) -> Capacity | None:
        return None

    def started(self, job: Job, alloc: Allocation) -> None:
        pass

    def blocked(self, job: Job) -> Status | None:
        self.ctx.wake_at(self.backfill_at)
        return None if job.reason is Reason.RESOURCES else self.conf.resources

    def search(self, job: Job) -> bool:
        return self.could_preempt(job)

    def preempting(self, job: Job) -> None:
        pass

    def settle(self, job: Job, status: Status | None) -> Status | None:
        return status

    def finish(self) -> None:
        pass


@mypyc_attr(allow_interpreted_subclasses=True)
class FifoScheduler(BackfillScheduler):
    plugin = "sched/builtin"

    def __init__(self, params: Mapping[str, object]) -> None:
        super().__init__({**params, "reserve": False, "stop_at_blocked": True})


@mypyc_attr(allow_interpreted_subclasses=True)
class GreedyScheduler(BackfillScheduler):
    plugin = "sched/greedy"

    def __init__(self, params: Mapping[str, object]) -> None:
        super().__init__({**params, "reserve": False})
