"""Timer keys: what a ``WakeAt`` asks for and the ``TimerFired`` it comes back as.

One small frozen type per kind of timer, so the engine dispatches on the type (``match``), and
a timer of a job's run names that run: a timer of an earlier run is recognised as stale.
Timers are never journaled: a replay of the inputs sets them again.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from phalanx.domain.state import JobState
from phalanx.domain.time import SECOND, Duration
from phalanx.sched.job import Job

__all__ = [
    "DEFAULT_TIME_LIMIT",
    "KILL_WAIT",
    "PASS",
    "RECALC",
    "WAKE",
    "BeginTimer",
    "KillTimer",
    "LimitTimer",
    "PassTimer",
    "RecalcTimer",
    "ReleaseTimer",
    "TimerKey",
    "WakeTimer",
    "is_stale",
]

DEFAULT_TIME_LIMIT: Duration = 365 * 24 * 3600 * SECOND
"""A job with no limit and no partition default runs at most a year (for the timeline)."""
KILL_WAIT: Duration = 30 * SECOND
"""Slurm's KillWait: from the time-limit signal to SIGKILL."""


@dataclass(frozen=True, slots=True)
class PassTimer:
    """Run a scheduling pass; drivers run it after the other events of the same instant."""


@dataclass(frozen=True, slots=True)
class WakeTimer:
    """A plugin asked for a pass at this instant (a timeout it waits for)."""


@dataclass(frozen=True, slots=True)
class RecalcTimer:
    """Recompute the priorities of the queue (``PriorityCalcPeriod``)."""


@dataclass(frozen=True, slots=True)
class LimitTimer:
    """Run ``run`` of the job reaches its time limit, or the early ``--signal`` before it."""

    job_id: int
    run: int


@dataclass(frozen=True, slots=True)
class KillTimer:
    """The grace after a SIGTERM to run ``run`` of the job is over: SIGKILL it."""

    job_id: int
    run: int


@dataclass(frozen=True, slots=True)
class ReleaseTimer:
    """The grace after a SIGTERM to the tasks an elastic run gave up on ``nodes`` is over:
    SIGKILL those still there."""

    job_id: int
    run: int
    nodes: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class BeginTimer:
    """The job's ``--begin`` time has come: look at the jobs waiting again."""

    job_id: int


TimerKey = (
    PassTimer | WakeTimer | RecalcTimer | LimitTimer | KillTimer | ReleaseTimer | BeginTimer
)

PASS = PassTimer()
WAKE = WakeTimer()
RECALC = RecalcTimer()


_ALIVE = (JobState.RUNNING, JobState.SUSPENDED)


def is_stale(key: TimerKey, jobs: Mapping[int, Job]) -> bool:
    """Whether the timer, whenever it fires, can change nothing: a limit or kill timer of a
    run that is over. A run never comes back: a job becomes RUNNING only by a new start,
    which takes the next run number (SUSPENDED resumes the same run, so it is not over)."""
    if type(key) is LimitTimer or type(key) is KillTimer or type(key) is ReleaseTimer:
        job = jobs.get(key.job_id)
        return job is None or job.run != key.run or job.state not in _ALIVE
    return False
