"""What the workload reconcilers see of the engine's jobs (``EngineJob``), their containers'
reports from the agents included, and where a pod's output is."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from phalanx.domain.cluster import Cluster
from phalanx.kube.containerstatus import container_view
from phalanx.protocol.agent import ContainerReport
from phalanx.sched.job import Job
from phalanx.workloads.plan import ANNOTATION_LOG, ContainerView, EngineJob

__all__ = ["Containers", "engine_job", "log_path"]

Containers = Callable[[int, int], ContainerReport | None]
"""(job_id, rank) -> the latest report of that task's container from its node's agent."""


def log_path(pod: Mapping[str, Any]) -> Path | None:
    """The file a pod's container output goes to (``kubectl logs``), None for a pod that no
    workload of Phalanx made. The file exists once the pod's task has started."""
    value = ((pod.get("metadata") or {}).get("annotations") or {}).get(ANNOTATION_LOG)
    return Path(value) if isinstance(value, str) and value else None


def engine_job(
    job: Job,
    cluster: Cluster,
    address: Callable[[str], str],
    containers: Containers | None = None,
) -> EngineJob:
    """What the reconcilers see of the engine's ``job`` (with its containers' reports)."""
    nodes: tuple[str, ...] = ()
    if job.alloc is not None and job.start is not None:
        names = [cluster.nodes[i].name for i in job.alloc.nodes]
        per_node = job.spec.tasks_per_node  # ranks go node by node (block distribution)
        nodes = tuple(names[rank // per_node] for rank in range(len(names) * per_node))
    return EngineJob(
        id=job.id,
        state=job.state,
        reason=str(job.reason),
        message=job.reason_message,
        expected_start=job.expected_start,
        start=job.start,
        end=job.end,
        exit_code=job.exit_code,
        signal=job.exit_signal,
        nodes=nodes,
        addresses=tuple(address(n) for n in nodes),
        restarts=job.restarts,
        containers=_views(job.id, len(nodes), containers),
    )


def _views(
    job_id: int, tasks: int, containers: Containers | None
) -> tuple[ContainerView | None, ...]:
    if containers is None:
        return ()
    reports = [containers(job_id, rank) for rank in range(tasks)]
    return tuple(None if r is None else container_view(r) for r in reports)
