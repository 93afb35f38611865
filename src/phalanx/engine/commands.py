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


Command = Launch | Signal | Kill | Cleanup | WakeAt
