"""Tests on a request that change nothing: could it ever run, and when and where could it
start (Slurm's will-run test, ``sbatch --test-only``)."""

from __future__ import annotations

from phalanx.domain.cluster import Cluster
from phalanx.domain.time import Instant
from phalanx.sched.capacity import Allocation
from phalanx.sched.context import PassContext
from phalanx.sched.job import Job
from phalanx.sched.occupancy import Occupancy
from phalanx.sched.shape import Shape

__all__ = ["earliest_fit", "never_fits"]


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


def never_fits(cluster: Cluster, state: Occupancy, job: Job) -> str | None:
    """Why ``job`` could never run here (Slurm refuses such a submission), or None."""
    part = cluster.partitions.get(job.partition)
    if part is None:
        return "InvalidPartition"
    shape = job.shape
    if shape.nodes_min > len(part.nodes) and not cluster.enforce_part_limits:
        return None  # Slurm queues it without EnforcePartLimits: see ``Engine._blocker``
    mask = state.static_mask(shape)
    fits = mask & (state.node_gpus >= shape.gpus) & (state.node_cpus >= shape.cpus)
    fits &= state.node_mem >= shape.mem_mb
    if shape.milli:
        fits &= state.node_gpus >= 1
    if int(fits.sum()) < shape.nodes_min:
        return "Requested node configuration is not available"
    return None
