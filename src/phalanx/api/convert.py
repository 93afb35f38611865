"""Between the wire and the domain: requests to ``JobSpec``, jobs to ``JobInfo`` rows."""

from __future__ import annotations

import os
from typing import Any

from phalanx.api.wire import AcctRecord, JobRequest
from phalanx.domain.caller import Caller
from phalanx.domain.cluster import Cluster
from phalanx.domain.hostlist import compress
from phalanx.domain.job import JobSpec
from phalanx.domain.request import (
    parse_array,
    parse_dependency,
    parse_memory_mb,
    parse_nodes,
    parse_signal,
)
from phalanx.domain.state import JobState
from phalanx.domain.time import parse_duration
from phalanx.engine.engine import DEFAULT_TIME_LIMIT
from phalanx.sched.job import Job

__all__ = ["acct_record", "job_info", "to_spec"]


def to_spec(req: JobRequest, caller: Caller, home: str | None = None) -> JobSpec:
    """The domain request; ``SpecError`` names the field that is wrong."""
    lo, hi = parse_nodes(req.nodes)
    signal, lead = parse_signal(req.signal) if req.signal else (15, 0)
    workdir = req.workdir or home or "/"
    if not os.path.isabs(workdir):
        from phalanx.errors import SpecError

        raise SpecError(f"the working directory must be absolute, not {workdir!r}", field="workdir")
    extra: list[tuple[str, str]] = []
    if req.open_mode == "append":
        extra.append(("open_mode", "append"))
    name = req.name or os.path.basename(req.command[0]) or "job"
    return JobSpec(
        name=name,
        user=caller.name,
        account=req.account or "root",
        partition=req.partition,
        qos=req.qos or "normal",
        nodes_min=lo,
        nodes_max=hi,
        tasks_per_node=req.ntasks_per_node,
        gpus_per_task=req.gpus_per_task,
        cpus_per_task=req.cpus_per_task,
        mem_per_node_mb=parse_memory_mb(req.mem) if req.mem else 0,
        gpu_models=frozenset({req.gpu_model}) if req.gpu_model else frozenset(),
        features=frozenset(req.constraint),
        time_limit=parse_duration(req.time) if req.time else None,
        switches=req.switches,
        switches_wait=(parse_duration(req.switches_wait, field="switches") or 0)
        if req.switches_wait
        else 0,
        exclusive=req.exclusive,
        requeue=req.requeue,
        checkpoint_interval=parse_duration(req.checkpoint_interval, field="checkpoint_interval")
        if req.checkpoint_interval
        else None,
        signal=signal,
        signal_lead=lead,
        dependencies=parse_dependency(req.dependency) if req.dependency else (),
        array=parse_array(req.array) if req.array else None,
        begin=req.begin,
        hold=req.hold,
        batch=req.batch,
        nice=req.nice,
        comment=req.comment,
        command=tuple(req.command),
        workdir=workdir,
        output=req.output,
        error=req.error,
        environment=tuple(sorted(req.environment.items())),
        extra=tuple(extra),
    )


def _nodelist(job: Job, cluster: Cluster) -> str:
    if job.alloc is None:
        return ""
    return compress([cluster.nodes[i].name for i in job.alloc.nodes])


def job_info(job: Job, cluster: Cluster) -> dict[str, Any]:
    """A ``JobInfo`` as a plain dict: lists of many jobs skip model validation."""
    spec = job.spec
    pending = job.state is JobState.PENDING
    alloc = job.alloc
    nodes = len(alloc.nodes) if alloc is not None else spec.nodes_min
    return {
        "job_id": job.id,
        "array_job_id": job.array_job_id,
        "array_task_id": job.array_task_id,
        "name": spec.name,
        "user": spec.user,
        "account": spec.account,
        "partition": job.partition,
        "qos": spec.qos,
        "state": job.state.value,
        "reason": str(job.reason) if pending else "None",
        "priority": float(job.priority),
        "nodes_requested": spec.nodes_min,
        "tasks": spec.tasks_per_node * nodes,
        "gpus": alloc.gpus if alloc is not None else spec.gpu_equivalent,
        "cpus": alloc.cpus * len(alloc.nodes) if alloc is not None else spec.cpus_per_node * nodes,
        "time_limit_ms": job.time_limit,
        "submit": job.submit,
        "start": job.start if job.start is not None else job.first_start,
        "end": job.end if job.state.is_final else None,
        "expected_start": job.expected_start if pending else None,
        "nodelist": _nodelist(job, cluster),
        "exit_code": job.exit_code or 0,
        "signal": job.exit_signal,
        "restarts": job.restarts,
        "command": list(spec.command),
        "workdir": spec.workdir,
        "comment": spec.comment,
        "mem_mb": spec.mem_per_node_mb,
        "ntasks_per_node": spec.tasks_per_node,
        "cpus_per_task": spec.cpus_per_task,
        "gpus_per_task": spec.gpus_per_task,
        "gpu_model": next(iter(sorted(spec.gpu_models)), None),
        "array_throttle": spec.array.throttle if spec.array is not None else None,
        "begin": spec.begin,
        "dependency": ",".join(
            d.kind.value + "".join(f":{i}" for i in d.job_ids) for d in spec.dependencies
        ),
        "unlimited": spec.time_limit is None and job.time_limit >= DEFAULT_TIME_LIMIT,
        "features": sorted(spec.features),
        "exclusive": spec.exclusive,
        "requeue": spec.requeue,
        "output": spec.output,
        "error": spec.error,
    }


_ACCT = tuple(AcctRecord.model_fields)


def acct_record(job: Job, cluster: Cluster) -> dict[str, Any]:
    info = job_info(job, cluster)
    return {k: info[k] for k in _ACCT}
