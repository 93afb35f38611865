"""Outputs of the engine: side effects for the driver to carry out, in order (records:
``engine.records``)."""

from __future__ import annotations

from phalanx.domain.jobspec import JobSpec
from phalanx.domain.time import Instant
from phalanx.engine.records import Record
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


class Launch(Record):
    """Start run ``run`` of the job on ``alloc``. The engine already assumed the allocation;
    the driver reports ``LaunchFailed`` if it cannot."""

    __match_args__ = (
        "job_id",
        "run",
        "alloc",
        "spec",
        "time_limit",
        "array_job_id",
        "array_task_id",
    )
    __slots__ = ("alloc", "array_job_id", "array_task_id", "job_id", "run", "spec", "time_limit")

    def __init__(
        self,
        job_id: int,
        run: int,
        alloc: Allocation,
        spec: JobSpec,
        time_limit: int,
        array_job_id: int | None = None,
        array_task_id: int | None = None,
    ) -> None:
        self.job_id = job_id
        self.run = run
        self.alloc = alloc
        self.spec = spec
        self.time_limit = time_limit
        self.array_job_id = array_job_id
        self.array_task_id = array_task_id


class Resize(Record):
    """Run ``run`` of an elastic job now holds ``alloc`` (its nodes in rank order): start
    its tasks on the ``added`` nodes (ranks from the launch's rules over ``alloc``) and end
    those on the ``removed`` ones: SIGTERM (they may save and leave), then, ``kill``, SIGKILL
    to those still there once the grace is over. The run goes on, and ends when the tasks of
    the nodes it holds have ended; the end of a removed node's tasks counts for nothing.
    The engine already changed the allocation (the removed nodes are free at once)."""

    __match_args__ = (
        "job_id",
        "run",
        "alloc",
        "added",
        "removed",
        "spec",
        "time_limit",
        "array_job_id",
        "array_task_id",
        "kill",
    )
    __slots__ = (
        "added",
        "alloc",
        "array_job_id",
        "array_task_id",
        "job_id",
        "kill",
        "removed",
        "run",
        "spec",
        "time_limit",
    )

    def __init__(
        self,
        job_id: int,
        run: int,
        alloc: Allocation,
        added: tuple[int, ...],
        removed: tuple[int, ...],
        spec: JobSpec,
        time_limit: int,
        array_job_id: int | None = None,
        array_task_id: int | None = None,
        kill: bool = False,
    ) -> None:
        self.job_id = job_id
        self.run = run
        self.alloc = alloc
        self.added = added
        self.removed = removed
        self.spec = spec
        self.time_limit = time_limit
        self.array_job_id = array_job_id
        self.array_task_id = array_task_id
        self.kill = kill

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


class Signal(Record):
    __match_args__ = ("job_id", "run", "signal")
    __slots__ = ("job_id", "run", "signal")

    def __init__(self, job_id: int, run: int, signal: int) -> None:
        self.job_id = job_id
        self.run = run
        self.signal = signal


class Kill(Record):
    __match_args__ = ("job_id", "run")
    __slots__ = ("job_id", "run")

    def __init__(self, job_id: int, run: int) -> None:
        self.job_id = job_id
        self.run = run


class Cleanup(Record):
    """Run the epilog on the job's nodes; the driver answers ``CleanupDone``."""

    __match_args__ = ("job_id", "run")
    __slots__ = ("job_id", "run")

    def __init__(self, job_id: int, run: int) -> None:
        self.job_id = job_id
        self.run = run


class WakeAt(Record):
    """Deliver ``TimerFired(at, key)`` back to the engine at ``at``."""

    __match_args__ = ("at", "key")
    __slots__ = ("at", "key")

    def __init__(self, at: Instant, key: TimerKey) -> None:
        self.at = at
        self.key = key


Command = Launch | Resize | Signal | Kill | Cleanup | WakeAt
