"""The members of a gang: one pod per task, for profiles that place them one at a time."""

from __future__ import annotations

from phalanx.sched.capacity import Allocation
from phalanx.sched.job import Job
from phalanx.sched.shape import Shape

__all__ = ["member_count", "merge", "pod_shape"]


def member_count(job: Job) -> int:
    """Pods of the gang: tasks per node times nodes."""
    return job.shape.nodes_min * job.spec.tasks_per_node


def pod_shape(job: Job) -> Shape:
    """One task of the job as a single-node request."""
    s = job.shape
    tasks = job.spec.tasks_per_node
    return Shape(
        partition=s.partition,
        nodes_min=1,
        nodes_max=1,
        gpus=job.spec.gpus_per_task,
        milli=s.milli,
        cpus=job.spec.cpus_per_task,
        mem_mb=s.mem_mb // tasks,
        models=s.models,
        features=s.features,
        exclusive=False,
        switches=None,
    )


def merge(parts: list[Allocation]) -> Allocation:
    """The pods' allocations as one (a node appears once per pod placed on it)."""
    first = parts[0]
    return Allocation(
        nodes=tuple(n for a in parts for n in a.nodes),
        devices=tuple(d for a in parts for d in a.devices),
        milli=first.milli,
        cpus=first.cpus,
        mem_mb=first.mem_mb,
    )
