"""Future availability for backfill and will-run questions.

Running jobs release their resources at their time limits at the latest; a reservation holds
specific nodes and devices for a blocked job from its earliest start. A lower-priority job may
start now only on what every reservation overlapping its run leaves over ("extra" at each
reservation's start): availability only drops at reservation starts, so checking those
instants is exact.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from mypy_extensions import mypyc_attr

from phalanx.domain.time import Duration, Instant
from phalanx.sched.capacity import Allocation, Capacity
from phalanx.sched.occupancy import Occupancy
from phalanx.sched.ready import ReadyIndex
from phalanx.sched.shape import Shape

__all__ = ["Reservation", "Timeline"]

PlaceFn = Callable[[Capacity], Allocation | None]


def ready_index(state: Occupancy) -> ReadyIndex:
    """The occupancy's ``ReadyIndex`` (made on first use, kept with it)."""
    index = state.ready
    if not isinstance(index, ReadyIndex):
        index = state.ready = ReadyIndex(state)
    return index


@mypyc_attr(allow_interpreted_subclasses=True)
class Reservation:
    __slots__ = ("alloc", "end", "extra", "job_id", "start")

    def __init__(
        self, job_id: int, start: Instant, end: Instant, alloc: Allocation, extra: Capacity
    ) -> None:
        self.job_id = job_id
        self.start = start
        self.end = end
        self.alloc = alloc
        self.extra = extra
        """Free at ``start`` after every reservation active then: what others may still use."""


@mypyc_attr(allow_interpreted_subclasses=True)
class Timeline:
    """The reservations of one pass, over the running jobs of ``state``."""

    def __init__(self, state: Occupancy, now: Instant, resolution: Duration = 0) -> None:
        self.state = state
        self.now = now
        self.resolution = resolution
        """Running jobs' ends are rounded up to a multiple of this (Slurm's bf_resolution:
        coarser times, fewer distinct instants to try); 0 keeps them exact."""
        self.reservations: list[Reservation] = []
        self._bounds: dict[tuple[int, int], Instant | None] = {}
        self._changes = 0
        """Bumped whenever a reservation's ``extra`` changes (or one is added)."""
        self._views: dict[int, Capacity] = {}
        """``view``'s answers by the set of reservations it took in (a bit each), while
        ``_views_at`` holds: the pass tries many jobs between two starts."""
        self._views_at: tuple[Capacity | None, int, int] = (None, -1, -1)

    def earliest(
        self,
        job_id: int,
        shape: Shape,
        duration: Duration,
        place: PlaceFn,
        horizon: Instant | None = None,
    ) -> Reservation | None:
        """Reserve the earliest start for a blocked job, or None if not within ``horizon``.

        Walks running jobs by time limit, releasing their resources, until ``place`` finds
        room that no overlapping reservation needs. The walk counts, in plain integers, the
        nodes that could hold one node's share of the job and calls ``place`` (numpy, exact)
        only once enough of them are free.
        """
        state = self.state
        # With no reservation yet, the answer depends only on the running jobs: between two
        # passes where none started or ended (arrivals only), it is the same.
        memo_key = (job_id, duration, horizon, self.resolution) if not self.reservations else None
        if memo_key is not None:
            hit = state.memo().get(memo_key)
            if isinstance(hit, tuple):
                t, alloc, at_start = hit
                return self._add(job_id, t, t + duration, alloc, at_start)
            if hit is False:
                return None
        found = self._walk(job_id, shape, duration, place, horizon)
        if memo_key is not None:
            state.memo()[memo_key] = found if found is not None else False
        if found is None:
            return None
        t, alloc, at_start = found
        return self._add(job_id, t, t + duration, alloc, at_start)

    def lower_bound(self, job_id: int, shape: Shape, *, exact: bool = True) -> Instant | None:
        """A time before which the job cannot start, whatever else happens (cheap: counts
        only). A job that ends by then cannot delay it. None: it cannot start at all.

        ``exact``: the first instant the counts allow now, which with nothing reserved before
        is the reservation's start. Otherwise possibly an earlier instant, computed before
        later starts: still a bound, since starts only push a blocked job later."""
        key = (job_id, len(self.reservations))
        if key in self._bounds:
            return self._bounds[key]
        state = self.state
        if not exact and not self.reservations:
            cached = state.bounds.get(job_id)
            if cached is not None and cached[0] == state.gives:
                return cached[1]
        memo = state.memo()
        mkey = (job_id, "bound", len(self.reservations), self.resolution)
        if mkey in memo:
            hit = memo[mkey]
            bound = hit if isinstance(hit, int) else None
        elif not self.reservations:
            # The same instant as the walk's first, from the nodes' ready instants kept
            # across passes (``ReadyIndex``): only the nodes that changed are looked at.
            bound = memo[mkey] = ready_index(state).lower_bound(
                shape, self.resolution, self.now + 1
            )
        else:
            bound = next((t for t, _ in self._candidates(shape)), None)
            memo[mkey] = bound
        self._bounds[key] = bound
        if not self.reservations:
            state.bounds[job_id] = (state.gives, bound)
        return bound

    def _candidates(self, shape: Shape) -> Iterator[tuple[Instant, list[Allocation]]]:
        """Instants, soonest first, at which enough nodes could hold the job by counts alone,
        with the allocations released by then (the list grows as the walk goes on)."""
        state = self.state
        cap = state.cap
        gl: list[int] = cap.gpus.tolist()
        cl: list[int] = cap.cpus.tolist()
        ml: list[int] = cap.mem.tolist()
        base = state.base_mask(shape)
        ok_node: list[bool] = base.tolist()
        g, c, m = shape.gpus, shape.cpus, shape.mem_mb
        # Shares and exclusive nodes are not counted exactly here: for them every release is
        # worth a try with ``place``.
        approximate = bool(shape.milli or shape.exclusive)
        fitting = 0
        for node, ok in enumerate(ok_node):
            if ok and gl[node] >= g and cl[node] >= c and ml[node] >= m:
                fitting += 1
        ends = state.ends()
        res = self.resolution
        if res > 1:
            # Rounding up keeps the order; ties merge into one instant, as in Slurm's map.
            ends = [(-(-e // res) * res, j) for e, j in ends]
        running = state.running
        released: list[Allocation] = []
        first = self.now + 1
        # Besides running jobs' ends, an earlier reservation's end frees what it held.
        points = sorted({r.end for r in self.reservations if r.end >= first}, reverse=True)
        i, n = 0, len(ends)
        while i < n or points:
            t_end = (ends[i][0] if ends[i][0] > first else first) if i < n else None
            if points and (t_end is None or points[-1] < t_end):
                t = points.pop()
            else:
                assert t_end is not None
                t = t_end
                while i < n:
                    end, job_id = ends[i]
                    if (end if end > first else first) != t:
                        break
                    alloc = running[job_id].alloc
                    released.append(alloc)
                    whole = 0 if alloc.milli else 1
                    cpus, mem = alloc.cpus, alloc.mem_mb
                    for node, devices in zip(alloc.nodes, alloc.devices, strict=True):
                        if not ok_node[node]:
                            continue  # never counted: what it has free does not matter
                        gn, cn, mn = gl[node], cl[node], ml[node]
                        before = gn >= g and cn >= c and mn >= m
                        gn += len(devices) * whole
                        cn += cpus
                        mn += mem
                        gl[node], cl[node], ml[node] = gn, cn, mn
                        if not before and gn >= g and cn >= c and mn >= m:
                            fitting += 1
                    i += 1
                if points and points[-1] == t:
                    points.pop()
            if fitting >= shape.nodes_min or approximate:
                yield t, released

    def _walk(
        self,
        job_id: int,
        shape: Shape,
        duration: Duration,
        place: PlaceFn,
        horizon: Instant | None,
    ) -> tuple[Instant, Allocation, Capacity] | None:
        tmp: Capacity | None = None
        given = 0
        tried = -1
        state = self.state
        if not self.reservations and not (shape.milli or shape.exclusive):
            # The walk's first instant is the ready index's bound (kept across passes), and
            # there ``place`` nearly always succeeds: try it without counting node by node.
            first = ready_index(state).lower_bound(shape, self.resolution, self.now + 1)
            if first is None or (horizon is not None and first > horizon):
                return None
            early = self._released(first)
            tmp = state.cap.copy()
            tmp.give_many(early)
            found = place(tmp)
            if found is not None:
                return first, found, tmp
            # On from the next instant (the walk's first releases the same, in order).
            given = len(early)
            tried = first
        for t, released in self._candidates(shape):
            if horizon is not None and t > horizon:
                return None
            if t <= tried:
                continue
            if tmp is None:
                tmp = self.state.cap.copy()
            tmp.give_many(released[given:])
            given = len(released)
            view = self._without_reservations(tmp, t, t + duration)
            found = place(view)
            if found is not None:
                return t, found, tmp
        return None

    def _released(self, t: Instant) -> list[Allocation]:
        """The running jobs' allocations the walk has released by its instant ``t`` (ends
        rounded up to the resolution), in the walk's order."""
        state = self.state
        running = state.running
        res = self.resolution
        released: list[Allocation] = []
        for end, job_id in state.ends():
            if res > 1:
                end = -(-end // res) * res
            if end > t:  # (``t`` is never before ``now + 1``, where earlier ends count)
                break
            released.append(running[job_id].alloc)
        return released

    def _without_reservations(self, cap: Capacity, start: Instant, end: Instant) -> Capacity:
        overlapping = [r for r in self.reservations if r.start < end and r.end > start]
        if not overlapping:
            return cap
        view = cap.copy()
        for r in overlapping:
            view.take(r.alloc)
        return view

    def _add(
        self, job_id: int, start: Instant, end: Instant, alloc: Allocation, at_start: Capacity
    ) -> Reservation:
        extra = at_start.copy()
        for r in self.reservations:
            if r.start <= start < r.end:
                extra.take(r.alloc)
            if start <= r.start < end:
                r.extra.take(alloc)
        extra.take(alloc)
        res = Reservation(job_id, start, end, alloc, extra)
        self.reservations.append(res)
        self._changes += 1
        return res

    def view(self, cur: Capacity, end: Instant) -> Capacity:
        """What a job running from now until ``end`` may use without delaying a reservation
        (``cur`` itself if none starts before; else a capacity the caller must not change:
        on the free capacity, kept until it or a reservation changes)."""
        included = 0
        bit = 1
        for r in self.reservations:
            if r.start < end:
                included |= bit
            bit <<= 1
        if not included:
            return cur
        state = self.state
        if cur is not state.cap:
            return self._view(cur, end)
        at = (cur, state.version, self._changes)
        if self._views_at != at:
            self._views = {}
            self._views_at = at
        hit = self._views.get(included)
        if hit is None:
            hit = self._views[included] = self._view(cur, end)
        return hit

    def _view(self, cur: Capacity, end: Instant) -> Capacity:
        view = cur
        for r in self.reservations:
            if r.start < end:
                view = view.minimum(r.extra)
        return view

    def consume(self, alloc: Allocation, end: Instant) -> None:
        """A job was started now until ``end``: it is no longer extra at later reservations."""
        self._changes += 1
        for r in self.reservations:
            if r.start < end:
                r.extra.take(alloc)
