"""``batch.volcano.sh/v1alpha1`` Job: its first ``minAvailable`` pods one gang (one engine job
with a task per pod), the rest each an engine job of its own; its policies and its state.

Volcano's job controller, in what carries over: pods ``JOB-TASK-INDEX`` with the
``volcano.sh/*`` labels and annotations (``scheduling.k8s.io/group-name`` names the job's
PodGroup, ``JOB-UID``); the ``env`` plugin's VK_TASK_INDEX/VC_TASK_INDEX and the ``svc``
plugin's VC_<TASK>_HOSTS/VC_<TASK>_NUM (``ssh`` is recorded, no keys are made);
``policies`` (job's and tasks') for PodFailed (or a pod's ``exitCode``), PodEvicted (its node
failed, or it was deleted) and TaskCompleted, with actions RestartJob (RestartTask and
RestartPod restart the job too: the gang runs as one engine job), AbortJob, TerminateJob and
CompleteJob; ``maxRetry`` (the restart that brings ``retryCount`` to it fails the job);
``minSuccess``, tasks' ``minAvailable``; ``queue`` (the pods' labels and the engine job's
``volcano.sh/queue-name`` extra); ``ttlSecondsAfterFinished``. ``status.state.phase``: Pending
until ``minAvailable`` pods have started (running, succeeded or failed), then Running; once no
pod is left active Completed (``minSuccess``, else ``minAvailable``, pods succeeded and each
task's ``minAvailable``) or Failed; Aborted, Terminated, Completed by policy. ``conditions``
holds one ``{status: PHASE, lastTransitionTime}`` per change, as Volcano's.
What differs: the job's ``schedulerName`` is recorded (Phalanx schedules the pods); a pod
deleted with no policy for PodEvicted is made again (its gang with it).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from phalanx.domain.state import JobState
from phalanx.domain.time import SECOND, Instant
from phalanx.errors import InputError
from phalanx.workloads.events import creation_failed, event
from phalanx.workloads.plan import (
    ANNOTATION_KEY,
    ANNOTATION_LOG,
    ANNOTATION_RANK,
    ANNOTATION_RESTARTS,
    Context,
    EngineJob,
    NameSource,
    Plan,
    Submission,
)
from phalanx.workloads.pods import engine_id, is_active, new_pod, phase, refresh
from phalanx.workloads.podspec import PodTask, pod_task
from phalanx.workloads.specs import gang_spec, log_file, pod_spec, priority
from phalanx.workloads.timestamps import parse_time, rfc3339
from phalanx.workloads.volcano import (
    JOB_NAME,
    JOB_NAMESPACE,
    QUEUE_NAME,
    RETRY_COUNT,
    TASK_INDEX,
    TASK_SPEC,
    Member,
    VolcanoShape,
    action_for,
    environment,
    members,
    volcano_shape,
)

__all__ = ["CONTROLLER", "GROUP_NAME", "JOB_VERSION", "TERMINAL", "reconcile"]

CONTROLLER = "vc-controller-manager"
GROUP_NAME = "scheduling.k8s.io/group-name"
JOB_VERSION = "volcano.sh/job-version"
TERMINAL = frozenset({"Completed", "Failed", "Aborted", "Terminated"})
_KILLING = {"AbortJob": "Aborted", "TerminateJob": "Terminated", "CompleteJob": "Completed"}
_RESTARTS = frozenset({"RestartJob", "RestartTask", "RestartPod"})


def _meta(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    meta: Mapping[str, Any] = obj.get("metadata") or {}
    return meta


def _name(pod: Mapping[str, Any]) -> str:
    return str(_meta(pod).get("name"))


def _note(pod: Mapping[str, Any], key: str, default: str = "") -> str:
    return str((_meta(pod).get("annotations") or {}).get(key, default))


def _pod(
    obj: Mapping[str, Any],
    shape: VolcanoShape,
    m: Member,
    key: str,
    rank: int,
    retry: int,
    now: Instant,
    ctx: Context,
) -> dict[str, Any]:
    meta = _meta(obj)
    job, uid = str(meta.get("name", "")), str(meta.get("uid", ""))
    namespace = str(meta.get("namespace", "default"))
    labels = {
        JOB_NAME: job,
        JOB_NAMESPACE: namespace,
        QUEUE_NAME: shape.queue,
        TASK_SPEC: m.task.name,
        TASK_INDEX: str(m.index),
    }
    annotations = {
        JOB_NAME: job,
        TASK_SPEC: m.task.name,
        QUEUE_NAME: shape.queue,
        JOB_VERSION: str(retry),
        GROUP_NAME: f"{job}-{uid}",
        TASK_INDEX: str(m.index),
        RETRY_COUNT: str(retry),
        ANNOTATION_KEY: key,
        ANNOTATION_LOG: log_file(ctx, namespace, m.name),
        ANNOTATION_RANK: str(rank),
        ANNOTATION_RESTARTS: str(retry),
    }
    pod = new_pod(obj, m.name, m.task.template, labels=labels, annotations=annotations, now=now)
    pod["spec"]["hostname"] = m.name
    pod["spec"]["subdomain"] = job  # the svc plugin's headless Service
    env = environment(obj, shape, m)
    if env:
        container = pod["spec"].setdefault("containers", [{}])[0]
        container.setdefault("env", []).extend({"name": k, "value": v} for k, v in env)
    return pod


def _submission(
    obj: Mapping[str, Any],
    shape: VolcanoShape,
    pods: Sequence[Mapping[str, Any]],
    gang: bool,
    ctx: Context,
) -> Submission:
    """The engine job of ``pods`` (one submission key): a gang, or a pod of its own."""
    meta = _meta(obj)
    tasks: list[tuple[str, PodTask]] = []
    value = 0
    for pod in pods:
        task_name = str((_meta(pod).get("labels") or {}).get(TASK_SPEC, ""))
        i = next((n for n, t in enumerate(shape.tasks) if t.name == task_name), 0)
        where = f"spec.tasks[{i}].template"
        tasks.append((_name(pod), pod_task(pod, _meta(pod), where=where, refs=ctx)))
        value = max(value, priority(shape.tasks[i].template, ctx, where))
    if shape.priority_class is not None:
        value = max(
            value, priority({"spec": {"priorityClassName": shape.priority_class}}, ctx, "spec")
        )
    name = str(meta.get("name", "vcjob"))
    namespace = str(meta.get("namespace", "default"))
    owner = meta.get("labels") or {}
    if gang:
        spec = gang_spec(
            tasks, ctx=ctx, name=name, namespace=namespace, owner_labels=owner, value=value
        )
    else:
        spec = pod_spec(
            tasks[0][1],
            ctx=ctx,
            name=name,
            namespace=namespace,
            pod=tasks[0][0],
            owner_labels=owner,
            template=pods[0],
            value=value,
        )
    spec = replace(spec, extra=(*spec.extra, (QUEUE_NAME, shape.queue)))
    return Submission(
        key=_note(pods[0], ANNOTATION_KEY), spec=spec, pods=tuple(n for n, _ in tasks)
    )


def _launch(
    plan: Plan,
    obj: Mapping[str, Any],
    shape: VolcanoShape,
    group: Sequence[Member],
    gang: bool,
    replacing: Mapping[str, Mapping[str, Any]],
    retry: int,
    now: Instant,
    ctx: Context,
    names: NameSource,
) -> list[dict[str, Any]]:
    """New pods for ``group`` under one new key (a gang's, or each pod's own); those in
    ``replacing`` supersede the pods of their names (``plan.update``), the rest are created."""
    uid = str(_meta(obj).get("uid", ""))
    batches = [list(group)] if gang else [[m] for m in group]
    made: list[dict[str, Any]] = []
    for batch in batches:
        if not batch:
            continue
        key = f"kube/{uid}/{retry}/{names()}"
        fresh = [_pod(obj, shape, m, key, r, retry, now, ctx) for r, m in enumerate(batch)]
        try:
            plan.submit.append(_submission(obj, shape, fresh, gang, ctx))
        except InputError as e:
            plan.events.append(creation_failed(obj, str(e), now, len(plan.events), CONTROLLER))
            return made
        for pod in fresh:
            (plan.update if _name(pod) in replacing else plan.create).append(pod)
        made.extend(fresh)
    return made


def _kill(plan: Plan, pods: Sequence[Mapping[str, Any]], *, delete: bool) -> None:
    """Cancel the engine jobs of the active ``pods`` (once each); ``delete``: delete them."""
    for pod in pods:
        if not is_active(pod):
            continue
        job_id = engine_id(pod)
        if job_id is not None and job_id not in plan.cancel:
            plan.cancel.append(job_id)
        if delete and _name(pod) not in plan.delete:
            plan.delete.append(_name(pod))


def _exit_code(pod: Mapping[str, Any]) -> int | None:
    for cs in (pod.get("status") or {}).get("containerStatuses") or ():
        terminated = (cs.get("state") or {}).get("terminated")
        if terminated is not None:
            code = terminated.get("exitCode")
            return int(code) if isinstance(code, int) else None
    return None


def _trigger(
    shape: VolcanoShape,
    by_name: Mapping[str, Member],
    failed: Sequence[tuple[Mapping[str, Any], EngineJob | None]],
    missing: Sequence[Member],
    completed_tasks: Sequence[str],
) -> tuple[str, str] | None:
    """The first (action, event) the policies give for what happened in this pass."""
    for pod, job in failed:
        m = by_name.get(_name(pod))
        task = m.task if m is not None else None
        evicted = job is not None and job.state is JobState.NODE_FAIL
        kind = "PodEvicted" if evicted else "PodFailed"
        action = action_for(shape, task, kind, None if evicted else _exit_code(pod))
        if action is not None:
            return action, kind
    for m in missing:
        action = action_for(shape, m.task, "PodEvicted")
        if action is not None:
            return action, "PodEvicted"
    for name in completed_tasks:
        task = next(t for t in shape.tasks if t.name == name)
        action = action_for(shape, task, "TaskCompleted")
        if action is not None:
            return action, "TaskCompleted"
    return None


def reconcile(
    obj: Mapping[str, Any],
    pods: Sequence[Mapping[str, Any]],
    engine: Mapping[int, EngineJob],
    now: Instant,
    ctx: Context,
    names: NameSource,
) -> Plan:
    """One pass of Volcano's job controller over ``obj`` and its pods (module docstring)."""
    plan = Plan()
    status: dict[str, Any] = copy.deepcopy(dict(obj.get("status") or {}))
    try:
        shape = volcano_shape(obj)
    except InputError as e:
        plan.events.append(
            event(obj, "FailedValidation", str(e), now, warning=True, component=CONTROLLER)
        )
        return plan
    retry = int(status.get("retryCount", 0))
    state = dict(status.get("state") or {})
    before = str(state.get("phase", ""))
    everyone = members(obj, shape)
    by_name = {m.name: m for m in everyone}
    gang_names = {m.name for m in everyone[: shape.min_available]}

    # 1. the pods as their engine jobs leave them; a submission not taken yet, again
    current: dict[str, Mapping[str, Any]] = {}
    failed: list[tuple[Mapping[str, Any], EngineJob | None]] = []
    unsent: dict[str, list[Mapping[str, Any]]] = {}
    order = {m.name: m.order for m in everyone}
    for pod in sorted(pods, key=lambda p: (order.get(_name(p), len(order)), _name(p))):
        job_id = engine_id(pod)
        job = engine.get(job_id) if job_id is not None else None
        new, events = refresh(pod, job, now, seq=len(plan.events))
        if new is not None:
            plan.update.append(new)
            if is_active(pod) and phase(new) == "Failed":
                failed.append((new, job))
            pod = new
        plan.events.extend(events)
        current[_name(pod)] = pod
        if job_id is None and is_active(pod):
            unsent.setdefault(_note(pod, ANNOTATION_KEY), []).append(pod)
    for waiting in unsent.values():
        try:
            gang = _name(waiting[0]) in gang_names
            plan.submit.append(_submission(obj, shape, waiting, gang, ctx))
        except InputError as e:
            plan.events.append(creation_failed(obj, str(e), now, len(plan.events), CONTROLLER))

    phase_now = before or "Pending"
    reason = str(state.get("reason", ""))
    message = str(state.get("message", ""))
    started = bool(status.get("state"))
    if before not in TERMINAL:
        # 2. what happened, and what the policies make of it
        missing = [m for m in everyone if m.name not in current] if started and current else []
        counts_before = status.get("taskStatusCount") or {}
        completed_tasks = [
            t.name
            for t in shape.tasks
            if t.replicas
            and all(
                phase(current[f]) == "Succeeded"
                for f in _task_pods(obj, t.name, t.replicas)
                if f in current
            )
            and all(f in current for f in _task_pods(obj, t.name, t.replicas))
            and ((counts_before.get(t.name) or {}).get("phase") or {}).get("Succeeded", 0)
            < t.replicas
        ]
        trigger = _trigger(shape, by_name, failed, missing, completed_tasks)
        action = trigger[0] if trigger is not None else None
        if action is not None and action not in ("SyncJob", "ResumeJob", "EnqueueJob"):
            plan.events.append(
                event(
                    obj,
                    "ExecuteAction",
                    f"Start to execute action {action} ",
                    now,
                    seq=len(plan.events),
                    component=CONTROLLER,
                )
            )
        if action in _RESTARTS:
            retry += 1
            _kill(plan, list(current.values()), delete=False)
            if retry >= shape.max_retry:
                _kill(plan, list(current.values()), delete=True)
                phase_now, reason, message = "Failed", "", f"Job failed: retried {retry} times"
            else:
                _add_condition(status, "Restarting", now)
                replacing = dict(current)
                for pod in [p for p in plan.update if _name(p) in replacing]:
                    plan.update.remove(pod)  # fresh pods supersede their refreshed selves
                made = _start(plan, obj, shape, everyone, replacing, retry, now, ctx, names)
                current = {_name(p): p for p in made}
                phase_now, reason, message = "Pending", "", ""
        elif action in _KILLING:
            _kill(plan, list(current.values()), delete=True)
            phase_now = _KILLING[str(action)]
            reason, message = (trigger[1] if trigger else ""), ""
        else:
            # 3. pods to make: all of them at first, the missing ones after (a gang whole)
            if not current:
                made = _start(plan, obj, shape, everyone, {}, retry, now, ctx, names)
                current = {_name(p): p for p in made}
            elif missing:
                group = missing
                if any(m.name in gang_names for m in missing):
                    _kill(plan, [current[n] for n in gang_names if n in current], delete=False)
                    wanted = {m.name for m in missing} | gang_names
                    group = [m for m in everyone if m.name in wanted]
                for pod in [p for p in plan.update if _name(p) in {m.name for m in group}]:
                    plan.update.remove(pod)
                made = _start(plan, obj, shape, group, current, retry, now, ctx, names)
                current.update({_name(p): p for p in made})
            phase_now, reason, message = _phase(shape, obj, current, phase_now, plan)
    _count(status, shape, obj, current, plan)
    status["minAvailable"] = shape.min_available
    status["retryCount"] = retry
    status["version"] = retry
    if phase_now != before or not state:
        _add_condition(status, phase_now, now)
        status["state"] = {
            "phase": phase_now,
            "reason": reason,
            "message": message,
            "lastTransitionTime": rfc3339(now),
        }
        if phase_now in TERMINAL:
            plan.events.append(
                event(
                    obj,
                    phase_now,
                    f"Job {_meta(obj).get('name')} is {phase_now.lower()}",
                    now,
                    seq=len(plan.events),
                    warning=phase_now != "Completed",
                    component=CONTROLLER,
                )
            )
    _expire(plan, shape, status, now)
    if not status.get("conditions"):
        status.pop("conditions", None)
    if status != (obj.get("status") or {}):
        plan.status = status
    return plan


def _task_pods(obj: Mapping[str, Any], task: str, replicas: int) -> list[str]:
    job = str(_meta(obj).get("name", ""))
    return [f"{job}-{task}-{i}" for i in range(replicas)]


def _start(
    plan: Plan,
    obj: Mapping[str, Any],
    shape: VolcanoShape,
    group: Sequence[Member],
    replacing: Mapping[str, Mapping[str, Any]],
    retry: int,
    now: Instant,
    ctx: Context,
    names: NameSource,
) -> list[dict[str, Any]]:
    """``group``'s pods: its members among the first ``minAvailable`` as one gang, the others
    each on its own."""
    gang = [m for m in group if m.order < shape.min_available]
    rest = [m for m in group if m.order >= shape.min_available]
    made = _launch(plan, obj, shape, gang, True, replacing, retry, now, ctx, names)
    made += _launch(plan, obj, shape, rest, False, replacing, retry, now, ctx, names)
    return made


def _phase(
    shape: VolcanoShape,
    obj: Mapping[str, Any],
    current: Mapping[str, Mapping[str, Any]],
    before: str,
    plan: Plan,
) -> tuple[str, str, str]:
    """Pending, Running, or (no pod left active, or ``minSuccess`` reached) Completed or
    Failed, as Volcano's Pending and Running states decide; the survivors are killed."""
    pods = list(current.values())
    succeeded = sum(1 for p in pods if phase(p) == "Succeeded")
    failed = sum(1 for p in pods if phase(p) == "Failed")
    running = sum(1 for p in pods if phase(p) == "Running")
    if shape.min_success is not None and succeeded >= shape.min_success:
        _kill(plan, pods, delete=True)
        return "Completed", "", ""
    if pods and len(pods) >= shape.total and not any(is_active(p) for p in pods):
        ok = succeeded >= (shape.min_success or shape.min_available)
        for task in shape.tasks:
            if task.min_available is not None:
                done = sum(
                    1
                    for n in _task_pods(obj, task.name, task.replicas)
                    if n in current and phase(current[n]) == "Succeeded"
                )
                ok = ok and done >= task.min_available
        return ("Completed", "", "") if ok else ("Failed", "", "")
    if running + succeeded + failed >= max(1, shape.min_available):
        return "Running", "", ""
    return ("Pending" if before not in ("Running",) else "Running"), "", ""


def _add_condition(status: dict[str, Any], kind: str, now: Instant) -> None:
    conditions: list[dict[str, Any]] = status.setdefault("conditions", [])
    conditions.append({"status": kind, "lastTransitionTime": rfc3339(now)})


def _count(
    status: dict[str, Any],
    shape: VolcanoShape,
    obj: Mapping[str, Any],
    current: Mapping[str, Mapping[str, Any]],
    plan: Plan,
) -> None:
    """Volcano's counts over the pods left after ``plan``, and per task by phase."""
    gone = set(plan.delete)
    left = [p for n, p in current.items() if n not in gone]
    for key, want in (
        ("pending", "Pending"),
        ("running", "Running"),
        ("succeeded", "Succeeded"),
        ("failed", "Failed"),
    ):
        value = sum(1 for p in left if phase(p) == want)
        if value:
            status[key] = value
        else:
            status.pop(key, None)
    per_task: dict[str, Any] = {}
    for task in shape.tasks:
        phases: dict[str, int] = {}
        for n in _task_pods(obj, task.name, task.replicas):
            if n in current and n not in gone:
                p = phase(current[n])
                phases[p] = phases.get(p, 0) + 1
        if phases:
            per_task[task.name] = {"phase": phases}
    if per_task:
        status["taskStatusCount"] = per_task
    else:
        status.pop("taskStatusCount", None)


def _expire(plan: Plan, shape: VolcanoShape, status: Mapping[str, Any], now: Instant) -> None:
    """``ttlSecondsAfterFinished``: delete the finished job once it has passed."""
    state = status.get("state") or {}
    if shape.ttl_s is None or state.get("phase") not in TERMINAL:
        return
    ended = parse_time(state.get("lastTransitionTime"))
    if ended is None:
        return
    due = ended + shape.ttl_s * SECOND
    if now >= due:
        plan.delete_self = True
    else:
        plan.wake(due)
