"""Timer keys: what a ``WakeAt`` asks for and the ``TimerFired`` it comes back as.

One small record (``engine.records``) per kind of timer, so the engine dispatches on the type
(``match``), and a timer of a job's run names that run: a timer of an earlier run is
recognised as stale.
Timers are never journaled: a replay of the inputs sets them again.
"""

from __future__ import annotations

from collections.abc import Mapping

from phalanx.domain.state import JobState
from phalanx.domain.time import SECOND, Duration
from phalanx.engine.records import Record
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


class PassTimer(Record):
    """Run a scheduling pass; drivers run it after the other events of the same instant."""

    __slots__ = ()


class WakeTimer(Record):
    """A plugin asked for a pass at this instant (a timeout it waits for)."""

    __slots__ = ()


class RecalcTimer(Record):
    """Recompute the priorities of the queue (``PriorityCalcPeriod``)."""

    __slots__ = ()


class LimitTimer(Record):
    """Run ``run`` of the job reaches its time limit, or the early ``--signal`` before it."""

    __match_args__ = ("job_id", "run")
    __slots__ = ("job_id", "run")

    def __init__(self, job_id: int, run: int) -> None:
        self.job_id = job_id
        self.run = run


class KillTimer(Record):
    """The grace after a SIGTERM to run ``run`` of the job is over: SIGKILL it."""

    __match_args__ = ("job_id", "run")
    __slots__ = ("job_id", "run")

    def __init__(self, job_id: int, run: int) -> None:
        self.job_id = job_id
        self.run = run


class ReleaseTimer(Record):
    """The grace after a SIGTERM to the tasks an elastic run gave up on ``nodes`` is over:
    SIGKILL those still there."""

    __match_args__ = ("job_id", "run", "nodes")
    __slots__ = ("job_id", "nodes", "run")

    def __init__(self, job_id: int, run: int, nodes: tuple[int, ...]) -> None:
        self.job_id = job_id
        self.run = run
        self.nodes = nodes


class BeginTimer(Record):
    """The job's ``--begin`` time has come: look at the jobs waiting again."""

    __match_args__ = ("job_id",)
    __slots__ = ("job_id",)

    def __init__(self, job_id: int) -> None:
        self.job_id = job_id


TimerKey = PassTimer | WakeTimer | RecalcTimer | LimitTimer | KillTimer | ReleaseTimer | BeginTimer

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
