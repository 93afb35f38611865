"""Between the wire and the domain: requests to ``JobSpec`` and ``StepSpec``, jobs to
``JobInfo`` rows, jobs to ``JobTable`` rows (chosen ``JobInfo`` fields, as lists), and the
fair-share tree to ``ShareInfo``."""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from operator import attrgetter
from typing import Any

from phalanx.api.wire import AcctRecord, JobRequest, ShareInfo, StepRequest
from phalanx.domain.caller import Caller
from phalanx.domain.cluster import Cluster
from phalanx.domain.fairshare import ShareRow
from phalanx.domain.hostlist import compress, expand
from phalanx.domain.jobspec import JobSpec
from phalanx.domain.jobstep import StepRecord, StepSpec
from phalanx.domain.request import (
    parse_array,
    parse_dependency,
    parse_memory_mb,
    parse_nodes,
    parse_signal,
)
from phalanx.domain.rusage import RunUsage
from phalanx.domain.state import JobState
from phalanx.domain.time import parse_duration
from phalanx.engine.timers import DEFAULT_TIME_LIMIT
from phalanx.errors import InputError
from phalanx.sched.job import Job

__all__ = [
    "JOB_FIELDS",
    "acct_record",
    "job_info",
    "job_table",
    "share_info",
    "step_info",
    "step_spec",
    "to_spec",
    "usage_info",
]


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
        elastic=req.elastic,
        requeue=req.requeue,
        checkpoint_interval=parse_duration(req.checkpoint_interval, field="checkpoint_interval")
        if req.checkpoint_interval
        else None,
        checkpoint_on_signal=req.checkpoint_on_signal,
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
        "reason_message": job.reason_message if pending else "",
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
        "elastic": spec.elastic,
        "requeue": spec.requeue,
        "output": spec.output,
        "error": spec.error,
        "usage": usage_info(job.usage),
        "steps_usage": usage_info(job.steps_usage),
        "steps": [step_info(s) for s in job.steps],
    }


def usage_info(usage: RunUsage | None) -> dict[str, int] | None:
    """A ``Usage`` as a plain dict; None where nothing was measured."""
    if usage is None:
        return None
    return {
        "user_ms": usage.user_ms,
        "system_ms": usage.system_ms,
        "max_rss_kb": usage.max_rss_kb,
    }


def step_info(step: StepRecord) -> dict[str, Any]:
    """A ``StepRecord`` as a ``StepInfo``."""
    return {
        "job_id": step.job_id,
        "step_id": step.step,
        "state": step.state,
        "tasks": step.tasks,
        "nodes": sorted(expand(step.nodelist)) if step.nodelist else [],
        "exit_code": step.exit_code,
        "signal": step.signal,
        "reason": step.reason,
        "usage": usage_info(step.usage),
        "name": step.name,
        "nodelist": step.nodelist,
        "cpus": step.cpus,
        "gpus": step.gpus,
        "mem_mb": step.mem_mb,
        "start": step.start,
        "end": step.end,
    }


def step_spec(req: StepRequest) -> StepSpec:
    """A ``StepRequest`` as the ``StepSpec`` the service starts."""
    return StepSpec(
        command=tuple(req.command),
        ntasks=req.ntasks,
        nodes=req.nodes,
        ntasks_per_node=req.ntasks_per_node,
        environment=tuple(req.environment.items()) if req.environment else None,
        workdir=req.workdir,
        output=req.output,
        error=req.error,
    )


def share_info(row: ShareRow) -> ShareInfo:
    """An account of the fair-share tree as ``sshare`` reads it."""
    return ShareInfo(
        account=row.account,
        parent=row.parent,
        raw_shares=row.raw_shares,
        norm_shares=row.norm_shares,
        raw_usage=row.raw_usage,
        effective_usage=row.effective_usage,
        fairshare=row.fairshare,
    )


_ACCT = tuple(AcctRecord.model_fields)


def acct_record(job: Job, cluster: Cluster) -> dict[str, Any]:
    info = job_info(job, cluster)
    return {k: info[k] for k in _ACCT}


# ------------------------------------------------------------------------------ job tables
# Each JobInfo field once more, on its own: a listing of 10,000 jobs for ``squeue`` computes
# only the fields it prints. A string is an attribute path (read by ``attrgetter``, in C);
# the rest are functions of the job. ``tests/api/test_convert.py`` holds every field equal
# to ``job_info``'s.
_Getter = Callable[[Job], Any]
_PENDING = JobState.PENDING


def _nodes(job: Job) -> int:
    return len(job.alloc.nodes) if job.alloc is not None else job.spec.nodes_min


_FIELDS: dict[str, str | _Getter | None] = {
    "job_id": "id",
    "array_job_id": "array_job_id",
    "array_task_id": "array_task_id",
    "name": "spec.name",
    "user": "spec.user",
    "account": "spec.account",
    "partition": "partition",
    "qos": "spec.qos",
    "state": "state._value_",  # the enum's value; `.value` is a slower descriptor
    "reason": lambda j: str(j.reason) if j.state is _PENDING else "None",
    "reason_message": lambda j: j.reason_message if j.state is _PENDING else "",
    "priority": lambda j: float(j.priority),
    "nodes_requested": "spec.nodes_min",
    "tasks": lambda j: j.spec.tasks_per_node * _nodes(j),
    "gpus": lambda j: j.alloc.gpus if j.alloc is not None else j.spec.gpu_equivalent,
    "cpus": lambda j: (
        j.alloc.cpus * len(j.alloc.nodes)
        if j.alloc is not None
        else j.spec.cpus_per_node * _nodes(j)
    ),
    "time_limit_ms": "time_limit",
    "submit": "submit",
    "start": lambda j: j.start if j.start is not None else j.first_start,
    "end": lambda j: j.end if j.end is not None and j.state.is_final else None,
    "expected_start": lambda j: j.expected_start if j.state is _PENDING else None,
    "nodelist": None,  # needs the cluster: job_table binds it
    "exit_code": lambda j: j.exit_code or 0,
    "signal": "exit_signal",
    "restarts": "restarts",
    "command": lambda j: list(j.spec.command),
    "workdir": "spec.workdir",
    "comment": "spec.comment",
    "mem_mb": "spec.mem_per_node_mb",
    "ntasks_per_node": "spec.tasks_per_node",
    "cpus_per_task": "spec.cpus_per_task",
    "gpus_per_task": "spec.gpus_per_task",
    "gpu_model": lambda j: next(iter(sorted(j.spec.gpu_models)), None),
    "array_throttle": lambda j: j.spec.array.throttle if j.spec.array is not None else None,
    "begin": "spec.begin",
    "dependency": lambda j: ",".join(
        d.kind.value + "".join(f":{i}" for i in d.job_ids) for d in j.spec.dependencies
    ),
    "unlimited": lambda j: j.spec.time_limit is None and j.time_limit >= DEFAULT_TIME_LIMIT,
    "features": lambda j: sorted(j.spec.features),
    "exclusive": "spec.exclusive",
    "elastic": "spec.elastic",
    "requeue": "spec.requeue",
    "output": "spec.output",
    "error": "spec.error",
    "usage": lambda j: usage_info(j.usage),
    "steps_usage": lambda j: usage_info(j.steps_usage),
    "steps": lambda j: [step_info(s) for s in j.steps],
}

JOB_FIELDS = tuple(_FIELDS)
"""The fields a ``JobTable`` may hold: those of ``JobInfo``, in its order."""


def job_table(
    jobs: Sequence[Job], fields: Sequence[str], cluster: Cluster
) -> list[tuple[Any, ...]]:
    """One row per job: its values of ``fields`` (names from ``JOB_FIELDS``), in that order,
    each as ``job_info`` gives it. ``InputError`` (field ``fields``) names one not known."""
    unknown = [name for name in fields if name not in _FIELDS]
    if unknown:
        raise InputError(f"no job field {unknown[0]!r}", field="fields")
    # Column by column: the loops over the jobs run in C (map, zip, attrgetter), and only a
    # computed field costs a Python call per job.
    columns = [map(_getter(_FIELDS[name], cluster), jobs) for name in fields]
    if not columns:
        return [()] * len(jobs)
    return list(zip(*columns, strict=True))


def _getter(how: str | _Getter | None, cluster: Cluster) -> _Getter:
    if isinstance(how, str):
        return attrgetter(how)
    return how or (lambda job: _nodelist(job, cluster))
