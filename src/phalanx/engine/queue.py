"""The pending queue: eligible jobs in scheduling order, kept sorted as jobs come and go.

Order: higher partition tier first, then higher priority, then submit sequence (unique, so the
order is total and deterministic). Priorities change only when the engine recalculates them,
after which ``resort`` restores the order.
"""

from __future__ import annotations

import bisect
from collections.abc import Collection, Iterator, Mapping

from phalanx.sched.job import Job

__all__ = ["PendingQueue"]

Key = tuple[int, float, int]


def _key(job: Job) -> Key:
    return (-job.tier, -job.priority, job.seq)


class PendingQueue:
    __slots__ = ("_jobs", "_keys")

    def __init__(self) -> None:
        self._keys: list[Key] = []
        self._jobs: list[Job] = []

    def insert(self, job: Job) -> None:
        key = _key(job)
        i = bisect.bisect_left(self._keys, key)
        self._keys.insert(i, key)
        self._jobs.insert(i, job)

    def remove(self, job: Job) -> bool:
        """Take ``job`` out; False if it was not queued (its priority must be unchanged
        since it was inserted or last resorted)."""
        i = bisect.bisect_left(self._keys, _key(job))
        if i < len(self._keys) and self._jobs[i] is job:
            del self._keys[i]
            del self._jobs[i]
            return True
        return False

    def resort(self) -> bool:
        """Restore the order after priorities changed; True if it changed."""
        jobs = self._jobs
        keys = [(-j.tier, -j.priority, j.seq) for j in jobs]  # _key, inlined: every job
        order = sorted(range(len(keys)), key=keys.__getitem__)
        if order == list(range(len(keys))):
            self._keys = keys
            return False
        self._keys = [keys[i] for i in order]
        self._jobs = [jobs[i] for i in order]
        return True

    def with_first(self, ids: Collection[int], by_id: Mapping[int, Job]) -> list[Job]:
        """A copy of the queue with the queued jobs among ``ids`` moved to the front, both
        parts in queue order. Costs a lookup per id, not a walk over a long queue."""
        jobs = list(self._jobs)
        if not ids:
            return jobs
        keys = self._keys
        at: list[int] = []
        for job_id in ids:
            job = by_id.get(job_id)
            if job is None:
                continue
            i = bisect.bisect_left(keys, _key(job))
            if i < len(jobs) and jobs[i] is job:
                at.append(i)
        at.sort()
        front = [jobs[i] for i in at]
        for i in reversed(at):
            del jobs[i]
        return front + jobs

    def jobs(self) -> list[Job]:
        """The queued jobs in order (the queue's own list: do not change it)."""
        return self._jobs

    def __len__(self) -> int:
        return len(self._jobs)

    def __iter__(self) -> Iterator[Job]:
        return iter(self._jobs)
