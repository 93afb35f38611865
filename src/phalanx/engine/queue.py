"""The pending queue: eligible jobs in scheduling order, kept sorted as jobs come and go.

Order: higher partition tier first, then higher priority, then queue sequence (unique, so the
order is total and deterministic): the submit sequence, which the queue hands out, or a later one
for a job sent to the back (``to_back``). Priorities change only when the engine recalculates
them, after which ``resort`` restores the order.
"""

from __future__ import annotations

import bisect
from collections.abc import Collection, Iterator, Mapping
from operator import attrgetter
from typing import TypeGuard

import numpy as np
from mypy_extensions import mypyc_attr

from phalanx.domain.time import Instant
from phalanx.sched.context import PassContext
from phalanx.sched.job import Job
from phalanx.sched.points import QueueSortPlugin, Reprioritizes

__all__ = ["PendingQueue"]

Key = tuple[int, float, int]

_priority = attrgetter("priority")
_tier = attrgetter("tier")
_seq = attrgetter("queue_seq")


def _key(job: Job) -> Key:
    return (-job.tier, -job.priority, job.queue_seq)


_FEW_GONE = 32
"""``_settle`` finds up to this many gone jobs by bisection, more by a walk over the queue."""


def _positions(jobs: list[Job], gone: Collection[Job]) -> list[int] | None:
    """Where each of ``gone`` is in ``jobs``, by bisection on ``_key``; None if one is not
    where its key says (priorities written and the order not restored yet: ``recalc``)."""
    at: list[int] = []
    n = len(jobs)
    for job in gone:
        i = bisect.bisect_left(jobs, _key(job), key=_key)
        if i >= n or jobs[i] is not job:
            return None
        at.append(i)
    return at


_REPRIORITIZES: dict[type, bool] = {}
"""Whether a queue sort's class is ``Reprioritizes``: a runtime protocol check walks the
protocol's members (a recalculation's largest fixed cost), and a class's answer never changes."""


def _reprioritizes(sort: QueueSortPlugin) -> TypeGuard[Reprioritizes]:
    cls = type(sort)
    known = _REPRIORITIZES.get(cls)
    if known is None:
        known = _REPRIORITIZES[cls] = isinstance(sort, Reprioritizes)
    return known


@mypyc_attr(allow_interpreted_subclasses=True)
class PendingQueue:
    """The jobs in order of ``_key``. The keys are read from the jobs themselves when a
    bisection needs them (a few per insert), not kept beside them: a recalculation would
    otherwise rebuild a tuple per queued job.

    A removal only marks the job gone (``_gone``); the list drops the gone jobs at its next
    use (``_settle``), all at once: a pass that starts thousands of jobs removes each in
    constant time, not by a bisection and a shift of the list each."""

    __slots__ = ("_fixed", "_gone", "_jobs", "_queued", "_seq")

    def __init__(self) -> None:
        self._jobs: list[Job] = []
        """The queued jobs in order, and the gone ones not yet dropped."""
        self._queued: set[Job] = set()
        """The queued jobs (not the gone ones)."""
        self._gone: set[Job] = set()
        """Jobs removed but still in ``_jobs``."""
        self._fixed: set[Job] = set()
        """Queued jobs with a fixed priority (an admin's): a recalculation leaves theirs."""
        self._seq = 0
        """The last sequence handed out (``next_seq``) or seen (``insert``)."""

    def __getstate__(self) -> tuple[None, dict[str, object]]:
        # The jobs, settled, as before the gone set existed (snapshots keep their format).
        return None, {"_jobs": self._settle(), "_fixed": self._fixed, "_seq": self._seq}

    def __setstate__(self, state: tuple[None, dict[str, object]]) -> None:
        # A snapshot saved before ``_fixed`` existed holds the jobs only: derived from them.
        slots = state[1]
        jobs = slots["_jobs"]
        assert isinstance(jobs, list)
        self._jobs = jobs
        self._queued = set(jobs)
        self._gone = set()
        fixed = slots.get("_fixed")
        self._fixed = (
            fixed if isinstance(fixed, set) else {j for j in jobs if j.fixed_priority is not None}
        )
        # Engine snapshots without it are of an older FORMAT and never loaded; a queue
        # pickled alone goes on after its own jobs.
        seq = slots.get("_seq")
        self._seq = seq if isinstance(seq, int) else max((j.queue_seq for j in jobs), default=0)

    def next_seq(self) -> int:
        """A new sequence, after every one handed out or queued: a new job's submit
        sequence."""
        self._seq += 1
        return self._seq

    def _settle(self) -> list[Job]:
        """``_jobs`` without the gone jobs (dropped now), as a new list: whoever holds the
        old one (a pass walking it) sees it unchanged."""
        gone = self._gone
        if gone:
            jobs = self._jobs
            at = _positions(jobs, gone) if len(gone) <= _FEW_GONE else None
            if at is None:
                self._jobs = [job for job in jobs if job not in gone]
            else:
                # A few gone in a long queue: found by bisection, cut out of a copy (a copy
                # costs far less than a membership test per queued job).
                jobs = jobs[:]
                for i in sorted(at, reverse=True):
                    del jobs[i]
                self._jobs = jobs
            gone.clear()
        return self._jobs

    def insert(self, job: Job) -> None:
        bisect.insort_left(self._settle(), job, key=_key)
        self._queued.add(job)
        if job.queue_seq > self._seq:  # a job numbered elsewhere (tests, probes)
            self._seq = job.queue_seq
        if job.fixed_priority is not None:
            self._fixed.add(job)

    def remove(self, job: Job) -> bool:
        """Take ``job`` out; False if it was not queued."""
        queued = self._queued
        if job not in queued:
            return False
        queued.remove(job)
        self._gone.add(job)
        self._fixed.discard(job)
        return True

    def to_back(self, job: Job) -> None:
        """Queue ``job`` again behind every job of its tier and priority queued so far (and
        ahead of those queued later): a new queue sequence, its submit sequence kept. Nothing
        if it is not queued."""
        if self.remove(job):
            job.queue_seq = self.next_seq()
            self.insert(job)

    def recalc(self, sort: QueueSortPlugin, ctx: PassContext, now: Instant) -> bool:
        """New priorities for every queued job (``sort``'s, or a job's fixed one), then the
        order restored; True if it changed."""
        jobs = self._settle()
        quick = sort.priorities(jobs, ctx, now) if _reprioritizes(sort) else None
        if quick is None:
            results = sort.compute_many(jobs, ctx, now)
            quick = [priority for priority, _ in results]
            for job, (_, factors) in zip(jobs, results, strict=True):
                job.factors = factors
        for job in self._fixed:
            # Found by the key it is still queued under (no priority is written yet).
            assert job.fixed_priority is not None
            quick[bisect.bisect_left(jobs, _key(job), key=_key)] = job.fixed_priority
        for job, priority in zip(jobs, quick, strict=True):
            job.priority = priority
        return self.resort(quick)

    def resort(self, priorities: list[float] | None = None) -> bool:
        """Restore the order after priorities changed (``priorities``: the queued jobs'
        own, in queue order, if the caller has them); True if it changed."""
        jobs = self._settle()
        n = len(jobs)
        if not n:
            return False
        prio = (
            np.array(priorities, np.float64)
            if priorities is not None
            else np.fromiter(map(_priority, jobs), np.float64, n)
        )
        # _key's order, over columns: lexsort sorts by the last key first. Float negation is
        # exact and sequences are unique, so the order is the one sorting the tuples gives.
        # The queue is still in tier order (a job's tier never changes): with its first and
        # last job of one tier, every job is, and the tier column orders nothing.
        seqs = np.fromiter(map(_seq, jobs), np.int64, n)
        if jobs[0].tier == jobs[-1].tier:
            order = np.lexsort((seqs, -prio))
        else:
            order = np.lexsort((seqs, -prio, -np.fromiter(map(_tier, jobs), np.int64, n)))
        if not (order[1:] < order[:-1]).any():
            return False  # ascending: already in order
        self._jobs = [jobs[i] for i in order.tolist()]
        return True

    def with_first(self, ids: Collection[int], by_id: Mapping[int, Job]) -> list[Job]:
        """A copy of the queue with the queued jobs among ``ids`` moved to the front, both
        parts in queue order. Costs a lookup per id, not a walk over a long queue."""
        jobs = list(self._settle())
        if not ids:
            return jobs
        at: list[int] = []
        for job_id in ids:
            job = by_id.get(job_id)
            if job is None:
                continue
            i = bisect.bisect_left(jobs, _key(job), key=_key)
            if i < len(jobs) and jobs[i] is job:
                at.append(i)
        at.sort()
        front = [jobs[i] for i in at]
        for i in reversed(at):
            del jobs[i]
        return front + jobs

    def jobs(self) -> list[Job]:
        """The queued jobs in order (the queue's own list: do not change it)."""
        return self._settle()

    def __len__(self) -> int:
        return len(self._queued)

    def __iter__(self) -> Iterator[Job]:
        return iter(self._settle())
