"""Reserve for profiles that place a gang pod by pod: members held while the rest wait.

A held member's resources are taken in the occupancy (they sit idle: the gang cannot run
yet); ``unreserve`` gives them all back. The permit plugin decides when a gang may start and
when it must give up (``phalanx.sched.points.PermitPlugin``).
"""

from __future__ import annotations

from collections.abc import Callable

from mypy_extensions import mypyc_attr

from phalanx.domain.time import Instant
from phalanx.engine.decisions import Deadlocked, DecisionLog, Held, Unheld
from phalanx.sched.capacity import Allocation
from phalanx.sched.job import Job
from phalanx.sched.occupancy import Occupancy

__all__ = ["Holds"]


@mypyc_attr(allow_interpreted_subclasses=True)
class Holds:
    def __init__(
        self, state: Occupancy, decisions: DecisionLog, now: Callable[[], Instant]
    ) -> None:
        self._state = state
        self._decisions = decisions
        self._now = now
        self._held: dict[int, Job] = {}
        self.deadlocks = 0

    def hold(self, job: Job, alloc: Allocation) -> None:
        """Reserve one member: its resources leave the free capacity."""
        state, now = self._state, self._now()
        state.take(alloc)
        state.account_gpus[job.account] = state.account_gpus.get(job.account, 0.0) + alloc.gpus
        state.version += 1
        if not job.holds:
            job.hold_since = now
            self._held[job.id] = job
            if job.first_start is None:
                job.first_start = now
        job.holds.append(alloc)
        self._decisions.add(Held(now, job.id, alloc.nodes, alloc.gpus))

    def unreserve(self, job: Job) -> None:
        """Give back every member ``job`` holds (idempotent)."""
        state, now = self._state, self._now()
        for alloc in job.holds:
            state.give(alloc)
            state.account_gpus[job.account] -= alloc.gpus
            self._decisions.add(Unheld(now, job.id, alloc.nodes, alloc.gpus))
        state.version += 1
        job.holds = []
        job.hold_since = None
        self._held.pop(job.id, None)

    def waiting(self) -> list[Job]:
        return sorted(self._held.values(), key=lambda j: j.seq)

    def note_deadlock(self, jobs: list[Job]) -> None:
        self.deadlocks += 1
        self._decisions.add(Deadlocked(self._now(), jobs[0].id, tuple(j.id for j in jobs)))
