"""The scheduling pass as one numbered recipe (ARCHITECTURE.md, "Scheduling pass").

1. Snapshot: the occupancy as it is now; the reservation step's timeline over it; the holds
   of the jobs nominated after a preemption (``nominations``).
2. Queue sort: the queue plugin's order of the eligible pending jobs, nominated jobs first.
3. For each job: pre-filter (cluster limits, ``admit/*``) -> filter and score (``place``) ->
   reserve -> permit -> start. A gang is placed whole; with ``members="pods"`` pod by pod,
   each pod reserved while the permit plugin keeps the gang waiting for the rest.
4. A job that cannot start: the reservation step (``sched/*``) reserves for it on the timeline
   if it is among those that get one; later jobs start only where they delay no reservation.
5. Post-filter: elastic jobs shrunk first (``elastic``), then preemption, for blocked jobs the
   reservation step lets search, and for jobs whose pre-filter refusal is ``resolvable``
   (quota that reclaim may give back). A job that preempted, or waits for jobs already
   leaving, is nominated for what they free.
6. Every job that did not start carries a ``Status`` and, where known, its expected start;
   then elastic jobs grow onto nodes that no waiting job could use.

Plugin lists are resolved once (``Points``); a point with no plugin costs no call.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator

from mypy_extensions import mypyc_attr

from phalanx.domain.state import Reason
from phalanx.engine.scheduling.context import PassView
from phalanx.engine.scheduling.elastic import Elastic
from phalanx.engine.scheduling.limits import ClusterLimits
from phalanx.engine.scheduling.members import Holds
from phalanx.engine.scheduling.points import Points
from phalanx.engine.scheduling.preemption import Preemption
from phalanx.engine.scheduling.statuses import Statuses
from phalanx.policies.backfill import BackfillStep
from phalanx.sched.capacity import Allocation, Capacity
from phalanx.sched.job import Job
from phalanx.sched.members import member_count, merge, pod_shape
from phalanx.sched.points import Idle, PreFilterPlugin, ReservationStep, ReservePlugin
from phalanx.sched.shape import Shape
from phalanx.sched.status import OK, Status

__all__ = ["Recipe"]


def _most_free(cap: Capacity) -> int:
    """The most whole GPUs free on one node (0 with no node)."""
    free: list[int] = cap.gpus.tolist()
    return max(free, default=0)


@mypyc_attr(allow_interpreted_subclasses=True)
class Recipe:
    """Runs one pass over the engine's eligible queue (``run``), calling the profile's
    plugins at their points. Owns nothing between passes but a cache of pod shapes."""

    _may_idle: tuple[Idle, ...] | None = None
    """The pre-filter and reserve plugins that may be ``Idle`` (found on the first pass;
    a class default, so a recipe pickled before it existed finds them too)."""

    _most_free_at = -1
    """The occupancy's version ``_most_free_now`` was found at (a pass after submissions
    only finds it as the last left it; class defaults, as ``_may_idle``)."""
    _most_free_now = 0

    def __init__(
        self,
        points: Points,
        view: PassView,
        statuses: Statuses,
        holds: Holds,
        preemption: Preemption,
        elastic: Elastic | None = None,
    ) -> None:
        self.points = points
        self.elastic = elastic
        self.view = view
        self.statuses = statuses
        self.holds = holds
        self.preemption = preemption
        self._pods: dict[tuple[object, int], Shape] = {}
        self._pre: tuple[PreFilterPlugin, ...] = points.pre_filter
        self._res: tuple[ReservePlugin, ...] = points.reserve
        """This pass's pre-filter and reserve plugins: the profile's but the ``Idle``."""

    def connect(
        self,
        limits: ClusterLimits,
        pending: Callable[[], list[Job]],
        start: Callable[[Job, Allocation], None],
    ) -> None:
        """The engine's side: its limits, its eligible queue and how it starts a job."""
        self.limits = limits
        self._pending = pending
        self._engine_start = start

    # A bound method, not a closure: the engine is pickled (snapshots) with its recipe.
    def _start(self, job: Job, alloc: Allocation) -> None:
        self._engine_start(job, alloc)
        if self.elastic is not None:
            self.elastic.track(job)

    def pre_filter(self, job: Job) -> Status:
        """Step 3a: the cluster's limits, then the profile's pre-filter plugins."""
        if job.spec.array is not None or self.limits.any_rules:
            status = self.limits.check(job)
            if not status.ok:
                return status
        for plugin in self._pre:
            status = plugin.pre_filter(job, self.view)
            if not status.ok:
                return status
        return OK

    def reserve(self, job: Job, alloc: Allocation) -> Status:
        """Step 3d: the reserve plugins, in order; on a refusal, those that had reserved are
        told to unreserve, in reverse order."""
        plugins = self._res
        for i, plugin in enumerate(plugins):
            status = plugin.reserve(job, alloc, self.view)
            if not status.ok:
                for done in reversed(plugins[:i]):
                    done.unreserve(job, self.view)
                return status
        return OK

    def run(self) -> None:
        view, statuses, points = self.view, self.statuses, self.points
        statuses.passes += 1
        # 1. Snapshot.
        view.begin()
        state = view.state
        preemption = self.preemption
        nominations = preemption.nominations
        nominations.begin()
        could = preemption.could_preempt if preemption.preemptors > 0 else None
        step = points.reservation.begin(view, could_preempt=could)
        # The usual step, typed as its class: compiled, its methods are then direct calls
        # (through the protocol each is a Python method call, a few per job of a deep queue).
        bf = step if isinstance(step, BackfillStep) else None
        self._pre, self._res = points.pre_filter, points.reserve
        may_idle = self._may_idle
        if may_idle is None:
            may_idle = self._may_idle = tuple(
                p for p in (*points.pre_filter, *points.reserve) if isinstance(p, Idle)
            )
        if may_idle:
            idle = {id(p) for p in may_idle if p.idle(view)}
            if idle:
                self._pre = tuple(p for p in self._pre if id(p) not in idle)
                self._res = tuple(p for p in self._res if id(p) not in idle)
        reserve, permit, post_filter = self._res, points.permit, points.post_filter
        if permit is not None:
            permit.begin(view)
        # 2. Queue sort.
        pending = self._pending()
        order = points.queue_sort.order(pending, view)
        if nominations:
            order = nominations.first(pending, order, self._settle)
        # 3-5. Each job in order.
        # ``statuses.wait`` and ``self._start`` called on their objects, not bound methods
        # kept aside: compiled, those are direct calls instead of Python calls. (``wait`` is
        # handed to ``pass_over``, which calls it only for a job whose reason changes.)
        wait = statuses.wait
        checks = bool(self._pre) or self.limits.any_rules
        pods = points.pods
        # No node has more free GPUs than this (starts only lower it): a cheap test before
        # a placement is tried. (A list's max: numpy's costs more on a row of nodes.)
        if self._most_free_at != state.version:
            self._most_free_now = _most_free(state.cap)
            self._most_free_at = state.version
        most_free = self._most_free_now
        full: set[Shape] = set()
        # Placements that found no room, by the capacity tried and the shape key, while
        # nothing starts: the same placement again would find none either. Only where the
        # step's views are kept objects nobody writes into (``views_kept``), and for jobs
        # whose placement is theirs alone in nothing else (``PassView.plain``, no nominees).
        no_room: dict[tuple[int, object], Capacity] = {}
        no_room_at = state.version
        kept = getattr(step, "views_kept", False) is True
        failed = {} if pods else step.failed  # pod by pod, ``full`` is the memo
        max_jobs = step.max_jobs if step.max_jobs is not None else -1
        jobs = iter(order)
        index = -1
        after: Job | None = None  # the job a run of passed-over jobs ended at
        while True:
            if after is None:
                after = next(jobs, None)
                if after is None:
                    break
            job, after = after, None
            index += 1
            if index == max_jobs:
                break  # a bound on the jobs a pass looks at: the rest keep what they had
            if state.free_gpus == 0 and (step.exhausted(job) if bf is None else bf.exhausted(job)):
                self._rest(step, itertools.chain((job,), jobs), max_jobs - index)
                break
            if job.key not in failed:
                known = None
            else:
                known = step.known(job) if bf is None else bf.known(job)
            if known is not None:
                if job.reason is not known.reason:
                    statuses.wait(job, known)
                if state.free_gpus > 0:
                    # A long queue behind a failed shape: the step passes over the jobs that
                    # fail as it did in one tight loop (nothing starts meanwhile, so no
                    # ``exhausted`` to ask), within the pass's bound, and hands back the
                    # next job, which the bound check above then ends at if it is past it.
                    bound = max_jobs - index - 1
                    if bf is None:
                        passed, after = step.pass_over(jobs, wait, bound)
                    else:
                        passed, after = bf.pass_over(jobs, wait, bound)
                    index += passed
                continue
            if (checks or job.spec.array is not None) and not job.holds:
                status = self.pre_filter(job)
                if not status.ok:
                    # Short of quota that preemption may give back (a ClusterQueue below
                    # its nominal quota reclaiming what others borrowed): victims now.
                    if status.resolvable and post_filter is not None:
                        victims = preemption.victims(job, view)
                        if victims is not None:
                            self._nominate(job, victims)
                            if victims:
                                step.preempting(job)
                    statuses.wait(job, status)
                    continue
            if pods:
                self._members(job, full, step)
                continue
            # 3b-e. Filter and score the whole gang, reserve, permit (every member is placed
            # at once, so nothing waits there), start.
            if job.shape.nodes_min * job.shape.gpus <= state.free_gpus and (
                job.shape.gpus <= most_free
            ):
                cap = step.view(job) if bf is None else bf.view(job)
                if kept and not nominations and view.plain(job):
                    if no_room_at != state.version:
                        no_room.clear()
                        no_room_at = state.version
                    tried = state.cap if cap is None else cap
                    key = (id(tried), job.key)
                    if no_room.get(key) is tried:
                        alloc = None
                    else:
                        alloc = view.place(job, cap)
                        if alloc is None:
                            no_room[key] = tried
                else:
                    alloc = view.place(job, cap)
                if alloc is not None:
                    status = self.reserve(job, alloc) if reserve else OK
                    if status.ok:
                        self._start(job, alloc)
                        if bf is None:
                            step.started(job, alloc)
                        else:
                            bf.started(job, alloc)
                    else:
                        statuses.wait(job, status)
                    continue
            # 5, first resort: elastic jobs give nodes back (they go on running).
            elastic = self.elastic
            if (
                post_filter is not None
                and elastic is not None
                and elastic.jobs
                and self._shrink(job, step)
            ):
                most_free = _most_free(state.cap)
                continue
            # 4-5. Blocked: the reservation step names the status; the post-filter looks for
            # victims first (preemption), else the step reserves or remembers the failure.
            blocked = step.blocked(job) if bf is None else bf.blocked(job)
            if post_filter is not None and (step.search(job) if bf is None else bf.search(job)):
                victims = preemption.victims(job, view)
                if victims is not None:
                    self._nominate(job, victims)
                if victims:
                    statuses.wait(job, Status.wait(Reason.RESOURCES, points.post_filter_id))
                    step.preempting(job)
                    if step.stop_at_blocked:
                        self._rest(step, jobs, max_jobs - index - 1)
                        break
                    continue
            if step.stop_at_blocked if bf is None else bf.stop_at_blocked:
                if blocked is not None:
                    statuses.wait(job, blocked)
                self._rest(step, jobs, max_jobs - index - 1)
                break
            settled = step.settle(job, blocked) if bf is None else bf.settle(job, blocked)
            if settled is not None:
                statuses.wait(job, settled)
        # 6. Statuses and expected starts of the blocked jobs the step reserved for.
        nominations.finish()
        step.finish()
        if permit is not None:
            permit.end(view)
        nominations.end()
        if self.elastic is not None and self.elastic.jobs:
            self.elastic.grow(view, self._pending(), self._place_nodes)

    def _place_nodes(self, job: Job, nodes: int, cap: Capacity) -> Allocation | None:
        return self.view.place_shape(job.shape, nodes, cap)

    def _shrink(self, job: Job, step: ReservationStep) -> bool:
        """Shrink elastic jobs for a blocked ``job`` and start it; True if they were."""
        assert self.elastic is not None
        view = self.view
        if not self.elastic.shrink_for(job, view, step.view(job), view.place):
            return False
        alloc = view.place(job, step.view(job))
        if alloc is None:
            return False  # cannot happen: shrinking checked the placement
        status = self.reserve(job, alloc) if self._res else OK
        if not status.ok:
            self.statuses.wait(job, status)
            return True
        self._start(job, alloc)
        step.started(job, alloc)
        return True

    def _nominate(self, job: Job, victims: list[Job]) -> None:
        """Step 5's answer carried out: ``victims`` preempted for ``job`` (none: it waits for
        those already leaving), and ``job`` nominated for the placement it has once every
        job leaving is gone, beside the other nominations."""
        preemption, view = self.preemption, self.view
        if victims:
            preemption.preempt(victims, job, view.now)
        else:
            preemption.wait_for_leaving(job)
        nominations = preemption.nominations
        future = nominations.future(job.id, preemption.leaving())
        nominations.nominate(job, view.place_in(job, future))

    def _settle(self, job: Job) -> None:
        """A pass is done with nominated ``job``: if it did not start and nothing it waits
        for is still leaving, what was kept for it goes back to every job."""
        if job.id in self.preemption.nominations and not self.preemption.victims_leaving(job):
            self.preemption.nominations.drop(job.id)

    def _rest(self, step: ReservationStep, jobs: Iterator[Job], bound: int) -> None:
        """The jobs a pass ended before (at most ``bound`` if it is not negative) get the
        step's ``rest`` status (only those with none yet, with ``rest_new_only``)."""
        status = step.rest
        if status is None:
            return
        if bound >= 0:
            jobs = itertools.islice(jobs, bound)
        if step.rest_new_only:
            for job in jobs:
                if job.reason is Reason.NONE:
                    self.statuses.wait(job, status)
        elif status.reason is Reason.PRIORITY:
            self.statuses.wait_rest_priority(status)  # all not looked at, bound or not
        else:
            for job in jobs:
                self.statuses.wait(job, status)

    def _members(self, job: Job, full: set[Shape], step: ReservationStep) -> None:
        """Steps 3b-e pod by pod: each pod filtered, scored and reserved (held) on its own.
        A gang with every pod reserved starts; one with some waits, as its permit plugin
        says (nothing partial ever starts)."""
        view, state = self.view, self.view.state
        key = (job.key, job.spec.tasks_per_node)
        shape = self._pods.get(key)
        if shape is None:
            shape = self._pods[key] = pod_shape(job)
        total = member_count(job)
        while len(job.holds) < total:
            if shape in full or (shape.gpus and shape.gpus > state.free_gpus):
                break
            if total == 1:
                alloc = view.place(job, None)
            else:
                free = self.preemption.nominations.without(state.cap, job.id)
                alloc = view.place_shape(shape, 1, free)
            if alloc is None:
                full.add(shape)
                break
            if self._res:
                refused = self.reserve(job, alloc)
                if not refused.ok:
                    if not job.holds:
                        self.statuses.wait(job, refused)
                        return
                    break
            if total == 1:
                self._start(job, alloc)
                return
            self.holds.hold(job, alloc)
        if job.holds:
            permit = self.points.permit
            status = OK if permit is None else permit.permit(job, total, view)
            if status.ok and len(job.holds) == total:
                parts = list(job.holds)
                self.holds.unreserve(job)
                self._start(job, merge(parts))
                return
            self.statuses.wait(
                job, status if not status.ok else Status.wait(Reason.GANG_WAIT, "permit")
            )
            return
        blocked = step.blocked(job)
        if blocked is not None and job.reason is not blocked.reason:
            self.statuses.wait(job, blocked)
