"""``batch/v1`` Job: its pods, each its own engine job of one task, and its status.

Kubernetes 1.32's Job controller, in the parts that make sense here: ``parallelism``,
``completions`` (none: a work queue, done when a pod succeeded and none is left running),
``completionMode`` NonIndexed and Indexed (``JOB_COMPLETION_INDEX``, the index label and
annotation, hostname ``NAME-INDEX``), ``backoffLimit`` (failed pods counted),
``activeDeadlineSeconds``, ``suspend`` (Kueue admits a Job by unsuspending it),
``ttlSecondsAfterFinished``. A terminal condition comes with its interim one as 1.32 sets
them (SuccessCriteriaMet then Complete, FailureTarget then Failed), at once, since the pods
still active are cancelled and deleted in the same plan. ``restartPolicy: OnFailure`` is
treated as Never: a failed pod is replaced by a new one (and counts toward the backoff).
Status counts are those of the pods the Job has: ``active`` (Pending or Running),
``succeeded``, ``failed``; ``ready`` counts the Running ones.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from phalanx.domain.time import SECOND, Instant
from phalanx.errors import InputError
from phalanx.workloads.conditions import condition, is_true, set_condition
from phalanx.workloads.events import event
from phalanx.workloads.plan import (
    ANNOTATION_KEY,
    ANNOTATION_LOG,
    ANNOTATION_RANK,
    Context,
    EngineJob,
    NameSource,
    Plan,
    Submission,
)
from phalanx.workloads.pods import engine_id, is_active, json_copy, new_pod, phase, refresh
from phalanx.workloads.podspec import pod_task
from phalanx.workloads.specs import log_file, pod_spec, priority
from phalanx.workloads.timestamps import parse_time, rfc3339

__all__ = [
    "COMPLETION_INDEX",
    "CONTROLLER_UID",
    "JOB_NAME",
    "JobShape",
    "completed_indexes",
    "job_shape",
    "reconcile",
    "submission",
]

JOB_NAME = "batch.kubernetes.io/job-name"
CONTROLLER_UID = "batch.kubernetes.io/controller-uid"
COMPLETION_INDEX = "batch.kubernetes.io/job-completion-index"
_LEGACY = {"job-name": JOB_NAME, "controller-uid": CONTROLLER_UID}

_DONE = ("CompletionsReached", "Reached expected number of succeeded pods")
_BACKOFF = ("BackoffLimitExceeded", "Job has reached the specified backoff limit")
_DEADLINE = ("DeadlineExceeded", "Job was active longer than specified deadline")


@dataclass(frozen=True, slots=True)
class JobShape:
    """A Job's spec with Kubernetes' defaults filled in."""

    parallelism: int = 1
    completions: int | None = 1
    indexed: bool = False
    backoff_limit: int = 6
    deadline_s: int | None = None
    suspend: bool = False
    ttl_s: int | None = None


def _int(spec: Mapping[str, Any], name: str, default: int | None) -> int | None:
    value = spec.get(name, default)
    if value is None:
        return None
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise InputError("must be a non-negative integer", field=f"spec.{name}")
    return value


def job_shape(obj: Mapping[str, Any]) -> JobShape:
    """``obj``'s spec, defaulted as the API server defaults it; ``InputError`` naming the
    field for what it would refuse."""
    spec = obj.get("spec") or {}
    parallelism = _int(spec, "parallelism", 1)
    both_unset = spec.get("completions") is None and spec.get("parallelism") is None
    completions = _int(spec, "completions", 1 if both_unset else None)
    mode = spec.get("completionMode", "NonIndexed")
    if mode not in ("NonIndexed", "Indexed"):
        raise InputError(f"unsupported value: {mode!r}", field="spec.completionMode")
    if mode == "Indexed" and completions is None:
        raise InputError(
            "when completion mode is Indexed, completions is required", field="spec.completions"
        )
    deadline = _int(spec, "activeDeadlineSeconds", None)
    if deadline == 0:
        raise InputError("must be greater than 0", field="spec.activeDeadlineSeconds")
    return JobShape(
        parallelism=parallelism or 0,
        completions=completions,
        indexed=mode == "Indexed",
        backoff_limit=_int(spec, "backoffLimit", 6) or 0,
        deadline_s=deadline,
        suspend=bool(spec.get("suspend", False)),
        ttl_s=_int(spec, "ttlSecondsAfterFinished", None),
    )


def completed_indexes(indexes: set[int]) -> str:
    """``0-2,4``: Kubernetes' compressed list of the indexes that succeeded."""
    out: list[str] = []
    ordered = sorted(indexes)
    i = 0
    while i < len(ordered):
        j = i
        while j + 1 < len(ordered) and ordered[j + 1] == ordered[j] + 1:
            j += 1
        out.append(str(ordered[i]) if i == j else f"{ordered[i]}-{ordered[j]}")
        i = j + 1
    return ",".join(out)


def _index(pod: Mapping[str, Any]) -> int | None:
    value = ((pod.get("metadata") or {}).get("annotations") or {}).get(COMPLETION_INDEX)
    return int(value) if value is not None and str(value).isdecimal() else None


def submission(obj: Mapping[str, Any], pod: Mapping[str, Any], ctx: Context) -> Submission:
    """The engine job that runs ``pod`` of Job ``obj``; ``InputError`` for a pod template
    that cannot run (the field named under ``spec.template``)."""
    meta = obj.get("metadata") or {}
    pod_meta = pod.get("metadata") or {}
    task = pod_task(pod, pod_meta, where="spec.template", refs=ctx)
    spec = pod_spec(
        task,
        ctx=ctx,
        name=str(meta.get("name", "job")),
        namespace=str(meta.get("namespace", "default")),
        pod=str(pod_meta.get("name")),
        owner_labels=meta.get("labels") or {},
        template=pod,
        value=priority((obj.get("spec") or {}).get("template") or {}, ctx, "spec.template"),
    )
    key = str((pod_meta.get("annotations") or {}).get(ANNOTATION_KEY, ""))
    return Submission(key=key, spec=spec, pods=(str(pod_meta.get("name")),))


def reconcile(
    obj: Mapping[str, Any],
    pods: Sequence[Mapping[str, Any]],
    engine: Mapping[int, EngineJob],
    now: Instant,
    ctx: Context,
    names: NameSource,
) -> Plan:
    """One pass of the Job controller over ``obj`` and the pods it owns (module docstring)."""
    plan = Plan()
    status: dict[str, Any] = json_copy(obj.get("status") or {})
    conditions: list[dict[str, Any]] = list(status.get("conditions") or [])
    status["conditions"] = conditions
    try:
        shape = job_shape(obj)
    except InputError as e:
        plan.events.append(event(obj, "FailedCreate", str(e), now, warning=True))
        return plan

    # 1. the pods as their engine jobs leave them; a pod whose submission was not taken yet
    # is submitted again (under its key, so never twice)
    current: list[Mapping[str, Any]] = []
    for pod in sorted(pods, key=lambda p: str((p.get("metadata") or {}).get("name"))):
        job_id = engine_id(pod)
        new, events = refresh(
            pod, engine.get(job_id) if job_id is not None else None, now, seq=len(plan.events)
        )
        if new is not None:
            plan.update.append(new)
            pod = new
        plan.events.extend(events)
        current.append(pod)
        if job_id is None and is_active(pod):
            try:
                plan.submit.append(submission(obj, pod, ctx))
            except InputError as e:
                plan.events.append(event(obj, "FailedCreate", str(e), now, warning=True))

    finished = is_true(conditions, "Complete") or is_true(conditions, "Failed")
    active = [p for p in current if is_active(p)]
    if finished:
        _cancel(plan, active)
        active = []
        _expire(plan, shape, status, conditions, now)
    elif shape.suspend:
        # 2. suspended (or not yet admitted by Kueue): no pods
        _cancel(plan, active)
        active = []
        if not is_true(conditions, "Suspended"):
            set_condition(
                conditions, "Suspended", True, "JobSuspended", "Job suspended", now, probe_time=True
            )
            plan.events.append(event(obj, "Suspended", "Job suspended", now, seq=len(plan.events)))
        status.pop("startTime", None)
    else:
        active = _run(plan, obj, shape, current, active, status, conditions, now, ctx, names)

    _count(status, current, active, shape, plan)
    if status != (obj.get("status") or {}):
        plan.status = status
    return plan


def _run(
    plan: Plan,
    obj: Mapping[str, Any],
    shape: JobShape,
    current: list[Mapping[str, Any]],
    active: list[Mapping[str, Any]],
    status: dict[str, Any],
    conditions: list[dict[str, Any]],
    now: Instant,
    ctx: Context,
    names: NameSource,
) -> list[Mapping[str, Any]]:
    """Steps 3-6 for a Job that runs: start time and deadline, backoff, success, new pods.
    Returns the pods active after the plan."""
    if is_true(conditions, "Suspended"):
        set_condition(
            conditions, "Suspended", False, "JobResumed", "Job resumed", now, probe_time=True
        )
        plan.events.append(event(obj, "Resumed", "Job resumed", now, seq=len(plan.events)))
    started = parse_time(status.get("startTime"))
    if started is None:
        started = now
        status["startTime"] = rfc3339(now)
    failed = sum(1 for p in current if phase(p) == "Failed")
    succeeded_pods = [p for p in current if phase(p) == "Succeeded"]

    # 3. the deadline, then 4. the backoff limit
    why: tuple[str, str] | None = None
    if shape.deadline_s is not None:
        end = started + shape.deadline_s * SECOND
        if now >= end:
            why = _DEADLINE
        else:
            plan.wake(end)
    if why is None and failed > shape.backoff_limit:
        why = _BACKOFF
    if why is not None:
        _cancel(plan, active)
        for kind in ("FailureTarget", "Failed"):
            set_condition(conditions, kind, True, *why, now, probe_time=True)
        plan.events.append(event(obj, why[0], why[1], now, seq=len(plan.events), warning=True))
        _expire(plan, shape, status, conditions, now)
        return []

    # 5. success
    if shape.indexed:
        done = {i for p in succeeded_pods if (i := _index(p)) is not None}
        complete = len(done) >= (shape.completions or 0)
    elif shape.completions is None:
        done = set()
        complete = bool(succeeded_pods) and not active
    else:
        done = set()
        complete = len(succeeded_pods) >= shape.completions
    if complete:
        _cancel(plan, active)
        for kind in ("SuccessCriteriaMet", "Complete"):
            set_condition(conditions, kind, True, *_DONE, now, probe_time=True)
        status["completionTime"] = rfc3339(now)
        plan.events.append(event(obj, "Completed", "Job completed", now, seq=len(plan.events)))
        _expire(plan, shape, status, conditions, now)
        return []

    # 6. new pods, up to parallelism
    room = shape.parallelism - len(active)
    if shape.indexed:
        busy = {i for p in active if (i := _index(p)) is not None}
        wanted: Sequence[int | None] = [
            i for i in range(shape.completions or 0) if i not in done and i not in busy
        ][: max(0, room)]
    elif shape.completions is None:
        wanted = [] if succeeded_pods else [None] * max(0, room)
    else:
        left = shape.completions - len(succeeded_pods) - len(active)
        wanted = [None] * max(0, min(room, left))
    made = list(active)
    for index in wanted:
        pod = _new_pod(obj, index, now, ctx, names)
        try:
            sub = submission(obj, pod, ctx)
        except InputError as e:
            plan.events.append(
                event(obj, "FailedCreate", str(e), now, seq=len(plan.events), warning=True)
            )
            break
        plan.create.append(pod)
        plan.submit.append(sub)
        made.append(pod)
        plan.events.append(
            event(
                obj,
                "SuccessfulCreate",
                f"Created pod: {pod['metadata']['name']}",
                now,
                seq=len(plan.events),
            )
        )
    return made


def _new_pod(
    obj: Mapping[str, Any], index: int | None, now: Instant, ctx: Context, names: NameSource
) -> dict[str, Any]:
    meta = obj.get("metadata") or {}
    job, uid = str(meta.get("name", "")), str(meta.get("uid", ""))
    namespace = str(meta.get("namespace", "default"))
    template = (obj.get("spec") or {}).get("template") or {}
    name = f"{job}-{names()}" if index is None else f"{job}-{index}-{names()}"
    labels = {CONTROLLER_UID: uid, JOB_NAME: job, "controller-uid": uid, "job-name": job}
    annotations = {
        ANNOTATION_KEY: f"kube/{uid}/{name}",
        ANNOTATION_LOG: log_file(ctx, namespace, name),
        ANNOTATION_RANK: "0",
    }
    if index is not None:
        labels[COMPLETION_INDEX] = annotations[COMPLETION_INDEX] = str(index)
    pod = new_pod(
        obj,
        name,
        template,
        labels=labels,
        annotations=annotations,
        now=now,
        hostname=f"{job}-{index}" if index is not None else None,
    )
    if index is not None:
        # as the Job controller injects it: from the index annotation
        container = pod["spec"].setdefault("containers", [{}])[0]
        container.setdefault("env", []).append(
            {
                "name": "JOB_COMPLETION_INDEX",
                "valueFrom": {
                    "fieldRef": {"fieldPath": f"metadata.annotations['{COMPLETION_INDEX}']"}
                },
            }
        )
    return pod


def _cancel(plan: Plan, active: Sequence[Mapping[str, Any]]) -> None:
    """Stop the ``active`` pods: cancel their engine jobs, delete them."""
    for pod in active:
        job_id = engine_id(pod)
        if job_id is not None:
            plan.cancel.append(job_id)
        plan.delete.append(str((pod.get("metadata") or {}).get("name")))


def _expire(
    plan: Plan,
    shape: JobShape,
    status: Mapping[str, Any],
    conditions: Sequence[Mapping[str, Any]],
    now: Instant,
) -> None:
    """``ttlSecondsAfterFinished``: delete the finished Job once it has passed."""
    if shape.ttl_s is None:
        return
    ended = parse_time(status.get("completionTime"))
    if ended is None:
        failed = condition(conditions, "Failed")
        ended = parse_time(failed.get("lastTransitionTime")) if failed is not None else None
    if ended is None:
        return
    due = ended + shape.ttl_s * SECOND
    if now >= due:
        plan.delete_self = True
    else:
        plan.wake(due)


def _count(
    status: dict[str, Any],
    current: Sequence[Mapping[str, Any]],
    active: Sequence[Mapping[str, Any]],
    shape: JobShape,
    plan: Plan,
) -> None:
    """The counts of the pods the Job has after ``plan`` (zero counts left out, as the API
    leaves them out; ``ready`` always there)."""
    gone = set(plan.delete)
    left = [p for p in current if str((p.get("metadata") or {}).get("name")) not in gone]
    left_active = [p for p in active if str((p.get("metadata") or {}).get("name")) not in gone]
    counts = {
        "active": len(left_active),
        "succeeded": sum(1 for p in left if phase(p) == "Succeeded"),
        "failed": sum(1 for p in left if phase(p) == "Failed"),
    }
    for key, value in counts.items():
        if value:
            status[key] = value
        else:
            status.pop(key, None)
    status["ready"] = sum(1 for p in left_active if phase(p) == "Running")
    if shape.indexed:
        done = {i for p in left if phase(p) == "Succeeded" and (i := _index(p)) is not None}
        status["completedIndexes"] = completed_indexes(done)
    if "startTime" in status:
        status.setdefault("uncountedTerminatedPods", {})
    if not status.get("conditions"):
        status.pop("conditions", None)
