"""A job step (``srun`` in an allocation) as accounting keeps it: what ``sacct`` prints as the
``N.0``, ``N.1``, ... rows.

The live controller makes these from the steps it runs; those of a run that ended travel
with its ``TasksExited`` into the journal, so they outlive a controller restart. The engine
keeps them on the job and never decides anything by them.
"""

from __future__ import annotations

from dataclasses import dataclass

from phalanx.domain.rusage import RunUsage
from phalanx.domain.time import Instant

__all__ = ["StepRecord", "StepSpec", "step_name"]


@dataclass(frozen=True, slots=True)
class StepRecord:
    """One step of a job's run. ``cpus`` and ``gpus`` are the step's, over all its nodes;
    ``mem_mb`` is per node (as a job's). ``state`` is a Slurm state name (``RUNNING``,
    ``COMPLETED``, ``FAILED``, ``CANCELLED``); ``exit_code`` the highest of its tasks,
    ``signal`` the highest signal that ended one. ``end`` is None while it runs; ``usage``
    None until every task has ended and been measured."""

    job_id: int
    step: int
    name: str
    nodelist: str
    tasks: int
    cpus: int
    gpus: float
    mem_mb: int
    start: Instant
    end: Instant | None = None
    state: str = "RUNNING"
    exit_code: int = 0
    signal: int = 0
    reason: str = ""
    usage: RunUsage | None = None


@dataclass(frozen=True, slots=True)
class StepSpec:
    """What ``srun`` in an allocation asks for: ``command`` run as ``ntasks`` tasks over
    ``nodes`` of the job's nodes (``ntasks_per_node`` each). None (and an empty
    ``environment``) leaves a field to the job's: all its nodes, its tasks per node, its
    environment, working directory and output pattern; ``output`` and ``error`` are per-task
    patterns (``%t``)."""

    command: tuple[str, ...]
    ntasks: int | None = None
    nodes: int | None = None
    ntasks_per_node: int | None = None
    environment: tuple[tuple[str, str], ...] | None = None
    workdir: str | None = None
    output: str | None = None
    error: str | None = None


def step_name(command: tuple[str, ...] | list[str]) -> str:
    """A step's name, as srun gives it: the base name of the program it runs."""
    return command[0].rsplit("/", 1)[-1] if command else ""
