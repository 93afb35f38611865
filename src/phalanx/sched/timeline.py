"""Future availability for backfill and will-run questions.

Running jobs release their resources at their time limits at the latest; a reservation holds
specific nodes and devices for a blocked job from its earliest start. A lower-priority job may
start now only on what every reservation overlapping its run leaves over ("extra" at each
reservation's start): availability only drops at reservation starts, so checking those
instants is exact.
"""

from __future__ import annotations

from collections.abc import Callable

from phalanx.domain.time import Duration, Instant
from phalanx.sched.capacity import Allocation, Capacity
from phalanx.sched.snapshot import ClusterState

__all__ = ["Reservation", "Timeline"]

PlaceFn = Callable[[Capacity], Allocation | None]


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


class Timeline:
    """The reservations of one pass, over the running jobs of ``state``."""

    def __init__(self, state: ClusterState, now: Instant) -> None:
        self.state = state
        self.now = now
        self.reservations: list[Reservation] = []

    def earliest(
        self,
        job_id: int,
        need_gpus: int,
        duration: Duration,
        place: PlaceFn,
        horizon: Instant | None = None,
    ) -> Reservation | None:
        """Reserve the earliest start for a blocked job, or None if not within ``horizon``.

        Walks running jobs by time limit, releasing their resources, until ``place`` finds
        room that no overlapping reservation needs.
        """
        state = self.state
        tmp = state.cap.copy()
        free = state.free_gpus
        ends = state.ends()
        running = state.running
        i, n = 0, len(ends)
        while i < n:
            t = max(ends[i][0], self.now + 1)
            if horizon is not None and t > horizon:
                return None
            while i < n and max(ends[i][0], self.now + 1) == t:
                alloc = running[ends[i][1]].alloc
                tmp.give(alloc)
                if not alloc.milli:
                    free += sum(len(d) for d in alloc.devices)
                i += 1
            if free < need_gpus:
                continue
            view = self._without_reservations(tmp, t, t + duration)
            alloc = place(view)
            if alloc is not None:
                return self._add(job_id, t, t + duration, alloc, tmp)
        return None

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
        return res

    def view(self, cur: Capacity, end: Instant) -> Capacity:
        """What a job running from now until ``end`` may use without delaying a reservation."""
        view = cur
        for r in self.reservations:
            if r.start < end:
                view = view.minimum(r.extra)
        return view

    def consume(self, alloc: Allocation, end: Instant) -> None:
        """A job was started now until ``end``: it is no longer extra at later reservations."""
        for r in self.reservations:
            if r.start < end:
                r.extra.take(alloc)
