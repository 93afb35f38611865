"""The job-id filter that ``sacct -j`` and ``squeue -j`` share: ``N`` (a job, or every task
of the array whose id is N), ``N_M`` (one task of array N), comma-separated; a step suffix
(``N.batch``, ``N.0``) names its job."""

from __future__ import annotations

from phalanx.slurm.commandline import Usage

# typing costs milliseconds at every start of a shim: annotations only.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["JobId", "matches", "parse"]

JobId = tuple[int, "int | None"]
"""A job id, and an array task index when the id names one task (``N_M``)."""


def parse(value: str, prog: str) -> list[JobId]:
    """The ids in ``value``; ``Usage`` (``prog: error: Invalid job id: X``) for one that is
    not."""
    out: list[JobId] = []
    for item in (v.strip() for v in value.split(",")):
        if not item:
            continue
        base, under, task = item.split(".", 1)[0].partition("_")
        if not base.isdecimal() or (under and not task.isdecimal()):
            raise Usage(f"{prog}: error: Invalid job id: {item}")
        out.append((int(base), int(task) if task else None))
    return out


def matches(job: dict[str, Any], wanted: list[JobId]) -> bool:
    """Whether ``job`` (a ``JobInfo``) is one of ``wanted``."""
    array = job.get("array_job_id")
    for base, task in wanted:
        if task is None:
            if base == job["job_id"] or base == array:
                return True
        elif array == base and job.get("array_task_id") == task:
            return True
    return False
