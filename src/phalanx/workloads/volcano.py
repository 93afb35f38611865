"""A Volcano Job's (``batch.volcano.sh/v1alpha1``) spec as Volcano's webhook defaults and
validates it, its pods' names and labels, its policies, and what its ``env`` and ``svc``
plugins inject (``phalanx.workloads.vcjob`` runs it)."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from phalanx.errors import InputError

__all__ = [
    "ACTIONS",
    "EVENTS",
    "JOB_NAME",
    "JOB_NAMESPACE",
    "QUEUE_NAME",
    "RETRY_COUNT",
    "TASK_INDEX",
    "TASK_SPEC",
    "Member",
    "Policy",
    "Task",
    "VolcanoShape",
    "action_for",
    "environment",
    "members",
    "volcano_shape",
]

JOB_NAME = "volcano.sh/job-name"
JOB_NAMESPACE = "volcano.sh/job-namespace"
QUEUE_NAME = "volcano.sh/queue-name"
TASK_SPEC = "volcano.sh/task-spec"
TASK_INDEX = "volcano.sh/task-index"
RETRY_COUNT = "volcano.sh/job-retry-count"

EVENTS = frozenset(
    {
        "*",
        "PodFailed",
        "PodEvicted",
        "PodPending",
        "PodRunning",
        "Unknown",
        "TaskCompleted",
        "TaskFailed",
        "OutOfSync",
        "CommandIssued",
        "JobUpdated",
    }
)
"""Volcano's ``busv1alpha1.Event`` values (``*`` is AnyEvent)."""
ACTIONS = frozenset(
    {
        "AbortJob",
        "RestartJob",
        "RestartTask",
        "RestartPod",
        "TerminateJob",
        "CompleteJob",
        "ResumeJob",
        "SyncJob",
        "EnqueueJob",
        "SyncQueue",
        "OpenQueue",
        "CloseQueue",
    }
)
"""Volcano's ``busv1alpha1.Action`` values."""
_DNS1123 = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")


@dataclass(frozen=True, slots=True)
class Policy:
    """One ``policies`` entry: ``events`` (or an ``exit_code``) -> ``action``."""

    events: tuple[str, ...]
    action: str
    exit_code: int | None = None


@dataclass(frozen=True, slots=True)
class Task:
    name: str
    replicas: int
    template: Mapping[str, Any]
    policies: tuple[Policy, ...] = ()
    min_available: int | None = None


@dataclass(frozen=True, slots=True)
class VolcanoShape:
    """A Volcano Job's spec, defaulted as Volcano's admission webhook defaults it."""

    tasks: tuple[Task, ...]
    min_available: int
    min_success: int | None = None
    max_retry: int = 3
    queue: str = "default"
    scheduler: str = "volcano"
    policies: tuple[Policy, ...] = ()
    plugins: tuple[str, ...] = ()
    ttl_s: int | None = None
    priority_class: str | None = None

    @property
    def total(self) -> int:
        return sum(t.replicas for t in self.tasks)


def _count(value: object, where: str, default: int | None) -> int | None:
    if value is None:
        return default
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise InputError("must be a non-negative integer", field=where)
    return value


def _policies(raw: object, where: str) -> tuple[Policy, ...]:
    if raw is None:
        return ()
    if not isinstance(raw, list):
        raise InputError("must be a list", field=where)
    out = []
    for i, entry in enumerate(raw):
        at = f"{where}[{i}]"
        if not isinstance(entry, Mapping):
            raise InputError("must be an object", field=at)
        events = [entry["event"]] if entry.get("event") else list(entry.get("events") or ())
        code = entry.get("exitCode")
        if events and code is not None:
            raise InputError("must not specify event and exitCode simultaneously", field=at)
        if not events and code is None:
            raise InputError("either event and exitCode should be specified", field=at)
        for e in events:
            if e not in EVENTS:
                raise InputError(f"invalid policy event {e!r}", field=f"{at}.event")
        if code is not None and (not isinstance(code, int) or code == 0):
            raise InputError("0 is not a valid error code", field=f"{at}.exitCode")
        action = entry.get("action")
        if action not in ACTIONS:
            raise InputError(f"invalid policy action {action!r}", field=f"{at}.action")
        out.append(Policy(tuple(str(e) for e in events), str(action), code))
    return tuple(out)


def volcano_shape(obj: Mapping[str, Any]) -> VolcanoShape:
    """``InputError`` naming the field for what Volcano's webhook refuses."""
    spec = obj.get("spec") or {}
    raw_tasks = spec.get("tasks")
    if not isinstance(raw_tasks, list) or not raw_tasks:
        raise InputError("No task specified in job spec", field="spec.tasks")
    tasks: list[Task] = []
    for i, body in enumerate(raw_tasks):
        where = f"spec.tasks[{i}]"
        if not isinstance(body, Mapping):
            raise InputError("must be an object", field=where)
        # the webhook names an unnamed task ``default<i>``
        name = str(body.get("name") or f"default{i}")
        if not _DNS1123.match(name):
            raise InputError(f"task name {name!r} must be a DNS-1123 label", field=f"{where}.name")
        if any(t.name == name for t in tasks):
            raise InputError(f"duplicated task name {name}", field=f"{where}.name")
        replicas = _count(body.get("replicas"), f"{where}.replicas", 1) or 0
        low = _count(body.get("minAvailable"), f"{where}.minAvailable", None)
        if low is not None and low > replicas:
            raise InputError(
                "'minAvailable' is greater than 'replicas' in task", field=f"{where}.minAvailable"
            )
        template = body.get("template")
        if not isinstance(template, Mapping):
            raise InputError("must be an object", field=f"{where}.template")
        policies = _policies(body.get("policies"), f"{where}.policies")
        tasks.append(Task(name, replicas, template, policies, low))
    total = sum(t.replicas for t in tasks)
    # the webhook defaults minAvailable to the sum of the tasks' (each defaulting to replicas)
    default_min = sum(t.min_available if t.min_available is not None else t.replicas for t in tasks)
    low = _count(spec.get("minAvailable"), "spec.minAvailable", default_min) or 0
    if low > total:
        raise InputError(
            "job 'minAvailable' should not be greater than total replicas in tasks",
            field="spec.minAvailable",
        )
    success = _count(spec.get("minSuccess"), "spec.minSuccess", None)
    if success is not None and (success < 1 or success > total):
        raise InputError(
            "job 'minSuccess' should be in [1, total replicas]", field="spec.minSuccess"
        )
    plugins = spec.get("plugins") or {}
    if not isinstance(plugins, Mapping):
        raise InputError("must be an object", field="spec.plugins")
    for plugin in plugins:
        if plugin not in ("env", "svc", "ssh"):
            raise InputError(f"unable to find job plugin: {plugin}", field="spec.plugins")
    return VolcanoShape(
        tasks=tuple(tasks),
        min_available=low,
        min_success=success,
        max_retry=_count(spec.get("maxRetry"), "spec.maxRetry", 3) or 0,
        queue=str(spec.get("queue") or "default"),
        scheduler=str(spec.get("schedulerName") or "volcano"),
        policies=_policies(spec.get("policies"), "spec.policies"),
        plugins=tuple(str(p) for p in plugins),
        ttl_s=_count(spec.get("ttlSecondsAfterFinished"), "spec.ttlSecondsAfterFinished", None),
        priority_class=spec.get("priorityClassName"),
    )


@dataclass(frozen=True, slots=True)
class Member:
    """One pod of the job: ``JOB-TASK-INDEX``; ``order`` its place over all tasks."""

    name: str
    task: Task
    index: int
    order: int


def members(obj: Mapping[str, Any], shape: VolcanoShape) -> list[Member]:
    job = str((obj.get("metadata") or {}).get("name", ""))
    out: list[Member] = []
    for task in shape.tasks:
        for index in range(task.replicas):
            out.append(Member(f"{job}-{task.name}-{index}", task, index, len(out)))
    return out


def _env_name(task: str) -> str:
    return task.upper().replace("-", "_")


def environment(obj: Mapping[str, Any], shape: VolcanoShape, m: Member) -> list[tuple[str, str]]:
    """The ``env`` plugin's VK_TASK_INDEX and VC_TASK_INDEX; the ``svc`` plugin's
    VC_<TASK>_HOSTS and VC_<TASK>_NUM for every task (its hosts ``POD.JOB``, the names its
    headless Service would give; there is no DNS here, so they are names, not addresses)."""
    env: list[tuple[str, str]] = []
    if "env" in shape.plugins:
        env += [("VK_TASK_INDEX", str(m.index)), ("VC_TASK_INDEX", str(m.index))]
    if "svc" in shape.plugins:
        job = str((obj.get("metadata") or {}).get("name", ""))
        for task in shape.tasks:
            hosts = ",".join(f"{job}-{task.name}-{i}.{job}" for i in range(task.replicas))
            env += [
                (f"VC_{_env_name(task.name)}_HOSTS", hosts),
                (f"VC_{_env_name(task.name)}_NUM", str(task.replicas)),
            ]
    return env


def action_for(
    shape: VolcanoShape, task: Task | None, event: str, exit_code: int | None = None
) -> str | None:
    """The action for ``event`` (or, for PodFailed, the pod's ``exit_code``) on a pod of
    ``task``: the task's policies first, then the job's, as Volcano's ``applyPolicies``."""
    groups: Sequence[tuple[Policy, ...]] = (task.policies if task else (), shape.policies)
    for policies in groups:
        for p in policies:
            if event in p.events or "*" in p.events:
                return p.action
            if p.exit_code is not None and exit_code is not None and p.exit_code == exit_code:
                return p.action
    return None
