"""What a job asks of a ClusterQueue's quota, and what a running job holds, per resource.

Resources are Kubernetes' names: ``nvidia.com/gpu`` (whole GPUs, a share as its fraction),
``cpu``, ``memory`` (bytes) and ``pods`` (one per task, counted only where a ClusterQueue
covers it, as Kueue does). Amounts are thousandths of the unit; zero amounts are left out.
"""

from __future__ import annotations

from phalanx.domain.jobspec import MILLI
from phalanx.domain.quantity import GPU, MILLI_UNITS, format_quantity
from phalanx.sched.capacity import Allocation
from phalanx.sched.job import Job

__all__ = ["PODS", "held", "label", "requested"]

PODS = "pods"
_MIB = 2**20


def _amounts(gpu_milli: int, cpus: int, mem_mb: int, pods: int) -> dict[str, int]:
    out = {GPU: gpu_milli, "cpu": cpus * MILLI_UNITS, "memory": mem_mb * _MIB * MILLI_UNITS}
    out[PODS] = pods * MILLI_UNITS
    return {r: a for r, a in out.items() if a}


def requested(job: Job, nodes: int) -> dict[str, int]:
    """The job's request at ``nodes`` nodes."""
    shape = job.shape
    gpus = nodes * shape.gpus * MILLI_UNITS + shape.milli * MILLI_UNITS // MILLI
    pods = nodes * job.spec.tasks_per_node
    return _amounts(gpus, nodes * shape.cpus, nodes * shape.mem_mb, pods)


def held(job: Job, alloc: Allocation) -> dict[str, int]:
    """What ``alloc`` holds (an exclusive job holds its nodes' CPUs, not only those asked)."""
    count = len(alloc.nodes)
    if alloc.milli:
        gpus = alloc.milli * MILLI_UNITS // MILLI
    else:
        gpus = sum(len(d) for d in alloc.devices) * MILLI_UNITS
    pods = count * job.spec.tasks_per_node
    return _amounts(gpus, count * alloc.cpus, count * alloc.mem_mb, pods)


def label(amount: int, resource: str) -> str:
    """``64 GPUs``, ``9 CPUs``, ``36Gi memory``, ``5 pods``: an amount as a message says it."""
    text = format_quantity(amount, resource)
    names = {GPU: "GPUs", "cpu": "CPUs", "memory": "memory", PODS: "pods"}
    return f"{text} {names.get(resource, resource)}"
