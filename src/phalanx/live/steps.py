"""Steps: ``srun`` inside an allocation, tasks over some of a job's nodes.

Agents know runs by (job, run); a step's processes use run ``STEP_RUNS x (step + 1) + run``,
so that agents need not know what a step is.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

from phalanx.domain.jobstep import StepRecord
from phalanx.domain.rusage import RunUsage
from phalanx.domain.time import Instant
from phalanx.protocol.agent import AgentCommand

__all__ = ["STEP_JOBS_KEPT", "STEP_RUNS", "Step", "StepError", "step_run"]

STEP_RUNS = 1_000_000
"""Agents know runs by (job, run); a step's processes use run STEP_RUNS x (step + 1) + run,
so that agents need not know what a step is."""


STEP_JOBS_KEPT = 1000
"""Ended jobs whose steps stay readable (an srun reads its step's end after the job's)."""


def step_run(run: int, step: int) -> int:
    return STEP_RUNS * (step + 1) + run


class StepError(Exception):
    """A step that cannot be started in this allocation: ``str()`` says why."""


@dataclass
class Step:
    """A step (``srun`` in an allocation): tasks over some of the job's nodes."""

    job_id: int
    run: int
    step: int
    tasks: int
    nodes: dict[str, AgentCommand]
    waiting: set[str]
    exit_code: int = 0
    signal: int = 0
    failure: str = ""
    killed: bool = False
    usage: RunUsage | None = None
    name: str = ""
    """The base name of the program it runs (Slurm's step name)."""
    nodelist: str = ""
    cpus: int = 0
    """Over all its nodes."""
    gpus: float = 0.0
    """Over all its nodes."""
    mem_mb: int = 0
    """Per node."""
    start: Instant = 0
    end: Instant | None = None
    done: asyncio.Event = field(default_factory=asyncio.Event)

    @property
    def state(self) -> str:
        if self.waiting:
            return "RUNNING"
        if self.failure:
            return "FAILED"
        if self.killed:
            return "CANCELLED"
        return "COMPLETED" if self.exit_code == 0 and self.signal == 0 else "FAILED"

    def record(self, run_ended: Instant | None = None) -> StepRecord:
        """The step as accounting shows it; with ``run_ended``, as the run's end leaves it:
        a step still running then is CANCELLED at that instant (its job kills it)."""
        state, end = self.state, self.end
        if self.waiting and run_ended is not None:
            state, end = "CANCELLED", run_ended
        return StepRecord(
            self.job_id,
            self.step,
            self.name,
            self.nodelist,
            self.tasks,
            self.cpus,
            self.gpus,
            self.mem_mb,
            self.start,
            end,
            state,
            self.exit_code,
            self.signal,
            self.failure,
            None if self.waiting else self.usage,
        )
