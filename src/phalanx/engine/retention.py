"""How long ended jobs stay in the engine: until a ``Forget`` input says (Slurm's MinJobAge,
decided by the controller, journaled so that a replay forgets the same jobs)."""

from __future__ import annotations

from collections.abc import MutableMapping

from phalanx.domain.time import Instant
from phalanx.sched.job import Job

__all__ = ["forget"]


def forget(jobs: MutableMapping[int, Job], before: Instant) -> list[Job]:
    """Drop from ``jobs`` those that ended at or before ``before``; return them."""
    old = [j for j in jobs.values() if j.state.is_final and (j.end or 0) <= before]
    for job in old:
        del jobs[job.id]
    return old
