"""Outputs of the engine: side effects for the driver to carry out, in order."""

from __future__ import annotations

from dataclasses import dataclass

from phalanx.domain.jobspec import JobSpec
from phalanx.domain.time import Instant
from phalanx.engine.timers import PASS, RECALC, WAKE, TimerKey
from phalanx.sched.capacity import Allocation

__all__ = [
    "PASS",
    "RECALC",
    "WAKE",
    "Cleanup",
    "Command",
    "Kill",
    "Launch",
    "Resize",
    "Signal",
    "WakeAt",
]


@dataclass(frozen=True, slots=True)
class Launch:
    """Start run ``run`` of the job on ``alloc``. The engine already assumed the allocation;
    the driver reports ``LaunchFailed`` if it cannot."""

    job_id: int
    run: int
    alloc: Allocation
    spec: JobSpec
    time_limit: int
    array_job_id: int | None = None
    array_task_id: int | None = None


@dataclass(frozen=True, slots=True)
class Resize:
    """Run ``run`` of an elastic job now holds ``alloc`` (its nodes in rank order): start
    its tasks on the ``added`` nodes (ranks from the launch's rules over ``alloc``) and end
    those on the ``removed`` ones: SIGTERM (they may save and leave), then, ``kill``, SIGKILL
    to those still there once the grace is over. The run goes on, and ends when the tasks of
    the nodes it holds have ended; the end of a removed node's tasks counts for nothing.
    The engine already changed the allocation (the removed nodes are free at once)."""

    job_id: int
    run: int
    alloc: Allocation
    added: tuple[int, ...]
    removed: tuple[int, ...]
    spec: JobSpec
    time_limit: int
    array_job_id: int | None = None
    array_task_id: int | None = None
    kill: bool = False

    def launch(self) -> Launch:
        """The run's launch as if it had started on ``alloc`` (what the new ranks see)."""
        return Launch(
            self.job_id,
            self.run,
            self.alloc,
            self.spec,
            self.time_limit,
            self.array_job_id,
            self.array_task_id,
        )


@dataclass(frozen=True, slots=True)
class Signal:
    job_id: int
    run: int
    signal: int


@dataclass(frozen=True, slots=True)
class Kill:
    job_id: int
    run: int


@dataclass(frozen=True, slots=True)
class Cleanup:
    """Run the epilog on the job's nodes; the driver answers ``CleanupDone``."""

    job_id: int
    run: int


@dataclass(frozen=True, slots=True)
class WakeAt:
    """Deliver ``TimerFired(at, key)`` back to the engine at ``at``."""

    at: Instant
    key: TimerKey


Command = Launch | Resize | Signal | Kill | Cleanup | WakeAt
