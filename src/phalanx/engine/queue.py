"""The pending queue: eligible jobs in scheduling order, kept sorted as jobs come and go.

Order: higher partition tier first, then higher priority, then queue sequence (unique, so the
order is total and deterministic): the submit sequence, which the queue hands out, or a later one
for a job sent to the back (``to_back``). Priorities change only when the engine recalculates
them, after which ``resort`` restores the order.

A deep queue (tens of thousands of jobs, recalculated every ``calc_period``) costs what a
recalculation does per queued job: the jobs' sequences are read into arrays once per
recalculation (two attribute reads per job), for the queue sort and the re-sort. They are not
kept beside the list: a submission and a pass come far more often than a recalculation, and
numpy columns kept in step with the list cost a few numpy calls at each.

A pass walks the list ``jobs`` hands out while the jobs it starts leave the queue: the queue
then copies the list before it changes it. After the pass (``release``) it changes its own
list in place again: a job gone is a shift of pointers, not a copy of the queue.
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
from phalanx.sched.points import FloatArray, QueueSortPlugin, Reprioritizes

__all__ = ["PendingQueue"]

Key = tuple[int, float, int]

_SETTLE_BY_BISECT = 64
"""Up to this many gone jobs are found by bisection (each by the key it was queued under);
more are dropped by one walk over the list."""

_priority = attrgetter("priority")
_tier = attrgetter("tier")


def _key(job: Job) -> Key:
    return (-job.tier, -job.priority, job.queue_seq)


def _place(jobs: list[Job], tier: int, priority: float, queue_seq: int) -> int:
    """``bisect.bisect_left(jobs, (-tier, -priority, queue_seq), key=_key)``, comparing the
    fields themselves: no key tuple (nor a float object) is made per probe. The same answer
    for every value, NaN included: a tuple compares two fresh floats by ``==``, then ``<``,
    both false with a NaN, as ``>`` and ``==`` below are."""
    lo = 0
    hi = len(jobs)
    while lo < hi:
        mid = (lo + hi) // 2
        other = jobs[mid]
        t = other.tier
        if t > tier:
            lo = mid + 1
        elif t == tier:
            p = other.priority
            if p > priority or (p == priority and other.queue_seq < queue_seq):
                lo = mid + 1
            else:
                hi = mid
        else:
            hi = mid
    return lo


def _find(jobs: list[Job], job: Job) -> int:
    """Where ``job`` is in ``jobs`` (in the order of its current key), or -1."""
    i = _place(jobs, job.tier, job.priority, job.queue_seq)
    return i if i < len(jobs) and jobs[i] is job else -1


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

    A removal only marks the job gone (``_gone``, with the key it was queued under); the list
    drops the gone jobs at its next use (``_settle``), all at once: a pass that starts
    thousands of jobs removes each in constant time, not by a bisection and a shift of the
    list each."""

    __slots__ = ("_fixed", "_gone", "_jobs", "_lent", "_queued", "_seq")

    def __init__(self) -> None:
        self._jobs: list[Job] = []
        """The queued jobs in order, and the gone ones not yet dropped."""
        self._queued: set[Job] = set()
        """The queued jobs (not the gone ones)."""
        self._gone: dict[Job, Key] = {}
        """Jobs removed but still in ``_jobs``, with the key they are placed by there."""
        self._fixed: set[Job] = set()
        """Queued jobs with a fixed priority (an admin's): a recalculation leaves theirs."""
        self._seq = 0
        """The last sequence handed out (``next_seq``) or seen (``insert``)."""
        self._lent: list[Job] | None = None
        """The list last handed out (``jobs``, ``with_first``) and not given back
        (``release``): the queue copies it before changing it, so that a holder (a pass
        walking the queue) sees it as it was."""

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
        self._gone = {}
        self._lent = None
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
        """``_jobs`` without the gone jobs (dropped now). A list handed out (``_lent``) is
        replaced, not changed."""
        gone = self._gone
        if not gone:
            return self._jobs
        jobs = self._jobs
        at = self._gone_at(jobs) if len(gone) <= _SETTLE_BY_BISECT else None
        if at is None:
            self._jobs = [job for job in jobs if job not in gone]
        elif jobs is self._lent:
            n = len(jobs)
            parts: list[Job] = jobs[: at[0]]
            for j, i in enumerate(at):
                parts += jobs[i + 1 : at[j + 1] if j + 1 < len(at) else n]
            self._jobs = parts
        else:
            for i in reversed(at):
                del jobs[i]  # a shift of the pointers after it, nothing else touched
        gone.clear()
        return self._jobs

    def _gone_at(self, jobs: list[Job]) -> list[int] | None:
        """The gone jobs' places in ``jobs``, ascending, each found by bisection under the
        key it was queued by (the list is in the order of those keys, gone jobs' keys being
        the ones they had when removed); None if one is not where its key says."""
        gone = self._gone

        def placed(job: Job) -> Key:
            key = gone.get(job)
            return key if key is not None else _key(job)

        at: list[int] = []
        for job, key in gone.items():
            # First by every job's current key, as a list of jobs none of which changed
            # since it was queued is ordered: where that finds the job, it is there.
            i = _place(jobs, -key[0], -key[1], key[2])
            if i >= len(jobs) or jobs[i] is not job:
                i = bisect.bisect_left(jobs, key, key=placed)
                if i >= len(jobs) or jobs[i] is not job:
                    return None
            at.append(i)
        at.sort()
        return at

    def insert(self, job: Job) -> None:
        jobs = self._settle()
        if jobs is self._lent:
            jobs = self._jobs = list(jobs)
            self._lent = None
        jobs.insert(_place(jobs, job.tier, job.priority, job.queue_seq), job)
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
        self._gone[job] = _key(job)
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
        quick = (
            sort.priorities(jobs, ctx, now, np.array([job.seq for job in jobs], np.int64))
            if _reprioritizes(sort)
            else None
        )
        if quick is None:
            results = sort.compute_many(jobs, ctx, now)
            prio = np.array([priority for priority, _ in results], np.float64)
            for job, (_, factors) in zip(jobs, results, strict=True):
                job.factors = factors
        else:
            prio = np.asarray(quick, np.float64)
        for job in self._fixed:
            # Found by the key it is still queued under (no priority is written yet).
            assert job.fixed_priority is not None
            prio[_place(jobs, job.tier, job.priority, job.queue_seq)] = job.fixed_priority
        for job, priority in zip(jobs, prio.tolist(), strict=True):
            job.priority = priority
        return self.resort(prio)

    def resort(self, priorities: FloatArray | None = None) -> bool:
        """Restore the order after priorities changed (``priorities``: the queued jobs'
        own, in queue order, if the caller has them); True if it changed."""
        jobs = self._settle()
        n = len(jobs)
        if not n:
            return False
        prio = (
            priorities
            if priorities is not None
            else np.fromiter(map(_priority, jobs), np.float64, n)
        )
        # _key's order, over columns: lexsort sorts by the last key first. Float negation is
        # exact and sequences are unique, so the order is the one sorting the tuples gives.
        # The queue is still in tier order (a job's tier never changes): with its first and
        # last job of one tier, every job is, and the tier column orders nothing.
        seqs = np.array([job.queue_seq for job in jobs], np.int64)
        if jobs[0].tier == jobs[-1].tier:
            order = np.lexsort((seqs, -prio))
        else:
            order = np.lexsort((seqs, -prio, -np.fromiter(map(_tier, jobs), np.int64, n)))
        if not np.logical_or.reduce(order[1:] < order[:-1]):  # not ``.any()``'s wrapper
            return False  # ascending: already in order
        self._jobs = [jobs[i] for i in order.tolist()]
        return True

    def with_first(self, ids: Collection[int], by_id: Mapping[int, Job]) -> list[Job]:
        """The queue with the queued jobs among ``ids`` moved to the front, both parts in
        queue order: a list no later change to the queue changes (without ``ids``, the
        queue's own, which the queue copies before it changes it; do not change it). Costs
        a lookup per id, not a walk over a long queue."""
        if not ids:
            return self.jobs()
        jobs = list(self._settle())
        at: list[int] = []
        for job_id in ids:
            job = by_id.get(job_id)
            if job is None:
                continue
            i = _find(jobs, job)
            if i >= 0:
                at.append(i)
        at.sort()
        front = [jobs[i] for i in at]
        for i in reversed(at):
            del jobs[i]
        return front + jobs

    def jobs(self) -> list[Job]:
        """The queued jobs in order (the queue's own list: do not change it; the queue
        copies it before it changes it, so it stays as it was handed out)."""
        jobs = self._lent = self._settle()
        return jobs

    def release(self) -> None:
        """The list handed out is held no more (a pass is over): the queue changes it in
        place again."""
        self._lent = None

    def __len__(self) -> int:
        return len(self._queued)

    def __iter__(self) -> Iterator[Job]:
        return iter(self._settle())
