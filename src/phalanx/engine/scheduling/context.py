"""The narrow view plugins get of a pass (``phalanx.sched.context``), not the engine itself.

Placement lives here because every point that asks "where could this go" (the gang step, the
reservation step, the post-filter) must get the same answer: filter, then score.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

from mypy_extensions import mypyc_attr

from phalanx.domain.cluster import Cluster
from phalanx.domain.time import Instant
from phalanx.engine.scheduling.members import Holds
from phalanx.engine.scheduling.points import Points
from phalanx.engine.scheduling.preemption import Preemption
from phalanx.engine.scheduling.statuses import Statuses
from phalanx.sched.capacity import Allocation, Capacity
from phalanx.sched.job import Job
from phalanx.sched.occupancy import BoolArray, Occupancy
from phalanx.sched.shape import Shape
from phalanx.sched.usage import Usage

__all__ = ["PassView"]


@mypyc_attr(allow_interpreted_subclasses=True)
class PassView:
    """Implements ``GangContext`` (and so ``PassContext``) over the engine's state."""

    _listed: list[Job] | None = None
    """``running``'s last list, handed out again while the running jobs are the same (a class
    default: a view pickled before it starts without one)."""
    _listed_at: tuple[int, int] = (-1, -1)
    """The occupancy's ``starts`` and the count of running jobs when ``_listed`` was made."""

    def __init__(
        self,
        cluster: Cluster,
        state: Occupancy,
        usage: Usage,
        running: dict[int, Job],
        wake_at: Callable[[Instant], None],
        points: Points,
        statuses: Statuses,
        holds: Holds,
        preemption: Preemption,
        to_back: Callable[[Job], None],
    ) -> None:
        self.cluster = cluster
        self.state = state
        self.usage = usage
        self.now: Instant = 0
        """The ``at`` of the event being handled (the engine keeps it current)."""
        self._running = running
        self.wake_at = wake_at
        self._statuses = statuses
        self._holds = holds
        self._preemption = preemption
        self._to_back = to_back
        self._filters = points.filter
        self._score = points.score
        self._reserve = points.reserve
        self.params = points.params
        self.scratch: dict[object, object] = {}
        self._narrowed: dict[int, BoolArray] = {}
        """Job id -> the nodes a pre-filter let it be placed on this pass."""
        wait = points.params(points.score_id).get("gang_switches_wait_ms", 0)
        self._gang_wait = int(wait) if isinstance(wait, int | float) else 0
        """The profile's default ``--switches=fewest@wait`` for multi-node jobs that ask for
        no switch count: wait up to this long for the fewest leaves that hold them."""
        self._fewest_leaves = cluster.fewest_leaves() if self._gang_wait else ()

    def begin(self) -> None:
        """Step 1 of a pass: an empty scratch cache for the plugins."""
        self.scratch.clear()
        self._narrowed.clear()

    def narrow(self, job: Job, nodes: BoolArray) -> None:
        held = self._narrowed.get(job.id)
        self._narrowed[job.id] = nodes if held is None else held & nodes

    def running(self) -> Iterable[Job]:
        """The running jobs in the order they started (a list the caller must not change).

        The same list while no job started (``Occupancy.starts``: the engine starts a job
        there as it adds it to its running jobs) and none left (their count)."""
        running = self._running
        at = (self.state.starts, len(running))
        listed = self._listed
        if listed is None or at != self._listed_at:
            listed = self._listed = list(running.values())
            self._listed_at = at
        return listed

    def _mask(self, cap: Capacity, shape: Shape) -> BoolArray:
        filters = self._filters
        mask = filters[0].filter(self.state, cap, shape)
        if len(filters) > 1:
            for more in filters[1:]:
                mask = mask & more.filter(self.state, cap, shape)
        return mask

    def _leaf_limit(self, job: Job) -> tuple[int | None, int]:
        """The leaf limit in force for ``job`` and how long it holds from submission."""
        shape = job.shape
        max_leaves = shape.switches
        switches_wait = job.spec.switches_wait
        if (
            max_leaves is None
            and self._gang_wait
            and 1 < shape.nodes_min < len(self._fewest_leaves)
        ):
            max_leaves, switches_wait = self._fewest_leaves[shape.nodes_min], self._gang_wait
        if max_leaves is not None and self.now - job.submit >= switches_wait:
            max_leaves = None  # waited long enough: relax, as Slurm does after max-time
        return max_leaves, switches_wait

    def leaf_limit(self, job: Job) -> int | None:
        return self._leaf_limit(job)[0]

    def plain(self, job: Job) -> bool:
        """Whether ``place`` of ``job`` depends on nothing of the job's own but its shape: no
        nodes narrowed for it this pass, no leaf limit in force (whose failure asks for a
        wake-up). Nominees' holds, which depend on the job too, are the caller's to check."""
        if self._narrowed and job.id in self._narrowed:
            return False
        return self._leaf_limit(job)[0] is None

    def place(self, job: Job, cap: Capacity | None = None) -> Allocation | None:
        state = self.state
        cap = state.cap if cap is None else cap
        nominations = self._preemption.nominations
        if nominations:
            cap = nominations.without(cap, job.id)  # what is kept for others is not free
        return self.place_in(job, cap)

    def place_in(self, job: Job, cap: Capacity) -> Allocation | None:
        """``place`` in ``cap`` as it is, holds of nominees left in (``nominations``)."""
        shape = job.shape
        max_leaves, switches_wait = self._leaf_limit(job)
        state = self.state
        nodes = shape.nodes_max
        narrowed = self._narrowed.get(job.id) if self._narrowed else None
        while nodes >= shape.nodes_min:
            chosen = self._choose(cap, shape, nodes, max_leaves, narrowed)
            if chosen is not None:
                return state.allocation(cap, shape, chosen)
            nodes = shape.nodes_min if nodes > shape.nodes_min else nodes - 1
        if max_leaves is not None:
            self.wake_at(job.submit + switches_wait)  # when the limit relaxes
        return None

    def place_shape(
        self, shape: Shape, nodes: int, cap: Capacity | None = None
    ) -> Allocation | None:
        state = self.state
        cap = state.cap if cap is None else cap
        chosen = self._choose(cap, shape, nodes, None)
        return None if chosen is None else state.allocation(cap, shape, chosen)

    def _choose(
        self,
        cap: Capacity,
        shape: Shape,
        nodes: int,
        max_leaves: int | None,
        narrowed: BoolArray | None = None,
    ) -> list[int] | None:
        """Filter (within ``narrowed`` if a pre-filter narrowed the job), then score."""
        mask = self._mask(cap, shape)
        if narrowed is not None:
            mask = mask & narrowed
        return self._score.place(self.state, cap, shape, mask, nodes, max_leaves)

    def is_preempting(self, job: Job) -> bool:
        return self._preemption.is_preempting(job)

    def victims_leaving(self, job: Job) -> bool:
        return self._preemption.victims_leaving(job)

    def nominated(self) -> Sequence[Job]:
        return self._preemption.nominations.jobs()

    def expect(self, job: Job, start: Instant | None) -> None:
        self._statuses.expect(job, start)

    def more_than_whole_gpus_pending(self) -> bool:
        return self._statuses.nonwhole > 0

    # -- GangContext ------------------------------------------------------------------------
    def waiting(self) -> Sequence[Job]:
        return self._holds.waiting()

    def unreserve(self, job: Job) -> None:
        self._holds.unreserve(job)
        for plugin in self._reserve:
            plugin.unreserve(job, self)

    def requeue(self, job: Job) -> None:
        self.unreserve(job)
        self._to_back(job)

    def note_deadlock(self, jobs: Sequence[Job]) -> None:
        self._holds.note_deadlock(list(jobs))
