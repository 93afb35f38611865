"""Slurm's will-run test (``sbatch --test-only``): when and where a request could start."""

from __future__ import annotations

from phalanx.domain.time import Instant
from phalanx.sched.capacity import Allocation
from phalanx.sched.context import PassContext
from phalanx.sched.occupancy import Occupancy
from phalanx.sched.shape import Shape

__all__ = ["earliest_fit"]


def earliest_fit(
    ctx: PassContext, state: Occupancy, shape: Shape, now: Instant
) -> tuple[Instant, Allocation] | None:
    """Now if ``shape`` fits, else the first expected end of the running jobs after which it
    fits, with the placement; None if it never does. Pending jobs are not counted in front of
    it: an estimate, as Slurm's is. Works on a copy: nothing changes."""
    cap = state.cap.copy()
    alloc = ctx.place_shape(shape, shape.nodes_max, cap)
    if alloc is not None:
        return now, alloc
    for run in sorted(state.running.values(), key=lambda r: (r.end, r.job_id)):
        cap.give(run.alloc)
        for nodes in range(shape.nodes_max, shape.nodes_min - 1, -1):
            alloc = ctx.place_shape(shape, nodes, cap)
            if alloc is not None:
                return max(now, run.end), alloc
    return None
