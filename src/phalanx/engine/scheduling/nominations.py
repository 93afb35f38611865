"""Capacity kept for the jobs that preempted: nominations (kube-scheduler's
``status.nominatedNodeName``; Slurm keeps a preemptor's reservation on the freed nodes; Volcano
pipelines the preemptor onto its victims' nodes).

A job that preempted victims, or that waits for victims already on their way out (a
post-filter's ``[]``), is nominated for the placement it was found to have once they are gone:
its *nominated allocation*, chosen where every job leaving gives its resources back and every
other nomination has taken its own. While it is nominated:

- each pass looks at it before any other job (the queue sort's order among nominees);
- the part of its nominated allocation that is free at the pass's start, or at its nomination,
  is its *hold*: every placement of another job in that pass is made without the holds
  (``without``), so no job takes what a preemption freed for another (the preemptor would
  preempt again: a livelock);
- a quota plugin counts its quota as held (``PassContext.nominated``).

A nomination ends when the job leaves the queue (it started, was cancelled or held), or once it
was looked at in a pass, did not start, and nothing it waits for is still leaving: the freed
resources were kept for it for as long as it could use them.

Holds exist only during a pass and are never taken from the occupancy, so the timeline, the
early end of a full pass and everything outside a pass see the cluster as it is. Nominations
are made from the pass's decisions alone (deterministic, journaled inputs only), and live in
the engine, so a snapshot carries them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator

import numpy as np
from mypy_extensions import mypyc_attr

from phalanx.domain.jobspec import MILLI
from phalanx.sched.capacity import Allocation, Capacity
from phalanx.sched.job import Job
from phalanx.sched.occupancy import Occupancy

__all__ = ["Nominations", "free_part", "subtract"]


def free_part(alloc: Allocation, cap: Capacity) -> list[Allocation]:
    """The part of ``alloc`` that is free in ``cap``: per node, its devices with at least its
    share free, and as many of its CPUs and as much memory as are free there (one allocation
    per node that has any of it; none if nothing of it is free)."""
    amount = alloc.milli or MILLI
    parts: list[Allocation] = []
    for node, devices in zip(alloc.nodes, alloc.devices, strict=True):
        free = tuple(d for d in devices if cap.dev[node, d] >= amount)
        cpus = max(0, min(alloc.cpus, int(cap.cpus[node])))
        mem = max(0, min(alloc.mem_mb, int(cap.mem[node])))
        if free or cpus or mem:
            parts.append(Allocation((node,), (free,), alloc.milli, cpus, mem))
    return parts


def subtract(cap: Capacity, parts: Iterable[Allocation]) -> None:
    """Take ``parts`` out of ``cap`` in place, never below nothing (a part a what-if took
    already is not taken twice)."""
    touched: set[int] = set()
    for part in parts:
        amount = part.milli or MILLI
        for node, devices in zip(part.nodes, part.devices, strict=True):
            for d in devices:
                if cap.dev[node, d] >= 0:
                    cap.dev[node, d] = max(0, int(cap.dev[node, d]) - amount)
            cap.cpus[node] = max(0, int(cap.cpus[node]) - part.cpus)
            cap.mem[node] = max(0, int(cap.mem[node]) - part.mem_mb)
            touched.add(node)
    if touched:
        nodes = np.fromiter(sorted(touched), np.int64, len(touched))
        cap.gpus[nodes] = (cap.dev[nodes] == MILLI).sum(axis=1)


@mypyc_attr(allow_interpreted_subclasses=True)
class Nominations:
    """The engine's nominations (module docstring) and, during a pass, their holds."""

    def __init__(self, state: Occupancy) -> None:
        self._state = state
        self.nominated: dict[int, tuple[Job, Allocation | None]] = {}
        """Nominee id -> the job and its nominated allocation (None: no placement known, as
        when a post-filter frees quota only), in the order they were nominated."""
        self._holds: dict[int, list[Allocation]] = {}
        """This pass: each nominee's hold."""
        self._version = 0
        """Bumped whenever a hold is made or given up (``without``'s cache)."""
        self._cached: tuple[int, int, Capacity] | None = None
        """(occupancy version, holds version, the free capacity without every hold)."""
        self._current: tuple[Job, Callable[[Job], None]] | None = None
        """The nominee a pass is looking at (``first``), not settled yet."""

    def __bool__(self) -> bool:
        return bool(self.nominated)

    def __contains__(self, job_id: int) -> bool:
        return job_id in self.nominated

    def jobs(self) -> list[Job]:
        """The nominees, in the order they were nominated."""
        return [job for job, _ in self.nominated.values()]

    # -- between passes ------------------------------------------------------------------
    def nominate(self, job: Job, alloc: Allocation | None) -> None:
        """``job`` waits for resources leaving: it is nominated for ``alloc`` (again, if it
        was), and its hold is made at once, so later jobs of the pass do not take it."""
        self.drop(job.id)
        self.nominated[job.id] = (job, alloc)
        if alloc is not None:
            self._hold(job.id, alloc)

    def drop(self, job_id: int) -> None:
        """``job_id`` is no longer nominated (idempotent); its hold is given up."""
        if self.nominated.pop(job_id, None) is None:
            return
        if self._holds.pop(job_id, None) is not None:
            self._version += 1

    # -- during a pass -------------------------------------------------------------------
    def begin(self) -> None:
        """A pass starts: each nominee holds what is free now of its nominated allocation,
        in the order they were nominated (nominated allocations do not overlap, but what a
        node lost since may make them)."""
        self._holds.clear()
        self._version += 1
        for job_id, (_, alloc) in self.nominated.items():
            if alloc is not None:
                self._hold(job_id, alloc)

    def end(self) -> None:
        """The pass is over: holds are given up (nominations stay)."""
        if self._holds:
            self._holds.clear()
            self._version += 1
        self._cached = None

    def _hold(self, job_id: int, alloc: Allocation) -> None:
        free = self.without(self._state.cap, job_id)
        parts = free_part(alloc, free)
        if parts:
            self._holds[job_id] = parts
            self._version += 1

    def without(self, cap: Capacity, job_id: int) -> Capacity:
        """``cap`` without the holds of nominees other than ``job_id``: ``cap`` itself when
        there are none, else a copy (cached for the free capacity itself)."""
        holds = self._holds
        if not holds or (len(holds) == 1 and job_id in holds):
            return cap
        state = self._state
        mine = job_id in holds
        if cap is state.cap and not mine:
            cached = self._cached
            if cached is not None and cached[0] == state.version and cached[1] == self._version:
                return cached[2]
        out = cap.copy()
        for holder, parts in holds.items():
            if holder != job_id:
                subtract(out, parts)
        if cap is state.cap and not mine:
            self._cached = (state.version, self._version, out)
        return out

    def future(self, job_id: int, leaving: Iterable[Allocation]) -> Capacity:
        """Where a new nomination of ``job_id`` is chosen: the free capacity with what is
        ``leaving`` given back and every other nominee's nominated allocation taken."""
        state = self._state
        cap = state.cap.copy()
        cap.give_many(list(leaving))
        others = [
            alloc
            for holder, (_, alloc) in self.nominated.items()
            if holder != job_id and alloc is not None
        ]
        for alloc in others:
            subtract(cap, free_part(alloc, cap))
        return cap

    def first(
        self, pending: list[Job], order: Iterable[Job], settle: Callable[[Job], None]
    ) -> Iterator[Job]:
        """``order`` (the queue sort's order of ``pending``, maybe lazy) with the nominees
        first, in ``pending``'s order. Each nominee is ``settle``d once the pass is done with
        it (when the next job is asked for, by whoever asks), so a nomination that ends gives
        up its hold for the rest of the pass; ``finish`` settles one the pass ended on."""
        nominated = self.nominated
        if not nominated:
            yield from order
            return
        ahead = [j for j in pending if j.id in nominated]
        for job in ahead:
            self._current = (job, settle)
            yield job
            self._current = None
            settle(job)
        seen = {j.id for j in ahead}
        for job in order:
            if job.id not in seen:
                yield job

    def finish(self) -> None:
        """The pass ended: settle the nominee it ended on, if any."""
        current, self._current = self._current, None
        if current is not None:
            current[1](current[0])
