"""``kubeflow.org/v1`` PyTorchJob: all its pods one gang, one engine job with a task per pod.

Kubeflow's training operator v1.9, in what carries over: pods ``NAME-master-0`` and
``NAME-worker-I`` with the ``training.kubeflow.org/*`` labels; the environment it injects
(PYTHONUNBUFFERED, MASTER_PORT from the port named ``pytorchjob-port`` or 23456, WORLD_SIZE,
RANK with the master 0 and workers from 1, PET_NODE_RANK, PET_NPROC_PER_NODE, PET_NNODES, and
for an ``elasticPolicy`` the PET_RDZV_* variables); conditions Created, Running, Restarting,
Succeeded, Failed and Suspended with its reasons and messages; ``runPolicy`` (backoffLimit,
activeDeadlineSeconds, cleanPodPolicy, ttlSecondsAfterFinished, suspend). What differs:
- The gang starts whole or not at all (``schedulingPolicy.minAvailable`` is recorded; every
  pod is needed). Every task gets the most any replica asks for.
- MASTER_ADDR is not a Service name (there is no DNS): the launch sets it to the address of
  the node rank 0 was placed on, so it is not in the pod's env. An elastic job's
  PET_RDZV_ENDPOINT uses ``rdzvHost`` if given, else 127.0.0.1 (one machine).
- An ``elasticPolicy`` makes the gang an elastic engine job of one pod per node, between
  ``minReplicas`` and ``maxReplicas`` workers (``phalanx.engine.scheduling.elastic``): it
  starts with what fits, grows onto free nodes and shrinks for jobs that may preempt it; a
  pod for every rank up to ``maxReplicas`` exists, those the job does not run now Pending
  (not deleted: deleting a pod cancels its engine job). The survivors re-rendezvous as
  torchrun does (a lost peer restarts the worker group, within ``maxRestarts``). The pods
  also get TORCH_DISABLE_SHARE_RDZV_TCP_STORE=1, without which torch's agents that join a
  running job wait forever (``training.environment``).
- A failed run ends all its pods (the engine ends a gang's run as one); a restart
  (restartPolicy OnFailure or Always; ExitCode for an exit code of 128 and up) starts the
  whole gang again as a new engine job, the pods kept with their restartCount raised.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from typing import Any

from phalanx.domain.state import JobState
from phalanx.domain.time import SECOND, Instant
from phalanx.errors import InputError
from phalanx.workloads.conditions import is_true
from phalanx.workloads.events import creation_failed, event
from phalanx.workloads.plan import (
    ANNOTATION_KEY,
    ANNOTATION_LOG,
    ANNOTATION_RANK,
    ANNOTATION_RESTARTS,
    Context,
    EngineJob,
    Plan,
    Submission,
)
from phalanx.workloads.pods import engine_id, is_active, new_pod, phase, refresh
from phalanx.workloads.podspec import PodTask, pod_task
from phalanx.workloads.specs import gang_spec, log_file, priority
from phalanx.workloads.timestamps import parse_time, rfc3339
from phalanx.workloads.training import (
    CONTROLLER,
    FAILED,
    JOB_NAME,
    JOB_ROLE,
    KIND,
    OPERATOR,
    REPLICA_INDEX,
    REPLICA_TYPE,
    Member,
    TrainingShape,
    elastic_nodes,
    environment,
    members,
    training_shape,
)

__all__ = ["reconcile", "set_condition"]


def _pod(
    obj: Mapping[str, Any],
    shape: TrainingShape,
    m: Member,
    attempt: int,
    now: Instant,
    ctx: Context,
) -> dict[str, Any]:
    meta = obj.get("metadata") or {}
    job, uid = str(meta.get("name", "")), str(meta.get("uid", ""))
    labels = {
        OPERATOR: CONTROLLER,
        JOB_NAME: job,
        REPLICA_TYPE: m.replica.kind.lower(),
        REPLICA_INDEX: str(m.index),
    }
    if m.replica.kind == "Master":
        labels[JOB_ROLE] = "master"
    annotations = {
        ANNOTATION_KEY: f"kube/{uid}/{attempt}",
        ANNOTATION_LOG: log_file(ctx, str(meta.get("namespace", "default")), m.name),
        ANNOTATION_RANK: str(m.rank),
        ANNOTATION_RESTARTS: str(attempt),
    }
    policy = "Never" if m.replica.restart_policy == "ExitCode" else m.replica.restart_policy
    pod = new_pod(
        obj,
        m.name,
        m.replica.template,
        labels=labels,
        annotations=annotations,
        now=now,
        restart_policy=policy,
    )
    container = pod["spec"].setdefault("containers", [{}])[0]
    container.setdefault("env", []).extend(
        {"name": k, "value": v} for k, v in environment(shape, m)
    )
    return pod


def _submission(
    obj: Mapping[str, Any],
    shape: TrainingShape,
    pods: Sequence[Mapping[str, Any]],
    ctx: Context,
) -> Submission:
    meta = obj.get("metadata") or {}
    tasks: list[tuple[str, PodTask]] = []
    value = 0
    for pod in pods:
        pod_meta = pod.get("metadata") or {}
        kind = str((pod_meta.get("labels") or {}).get(REPLICA_TYPE, "worker")).capitalize()
        where = f"spec.pytorchReplicaSpecs.{kind}.template"
        tasks.append((str(pod_meta.get("name")), pod_task(pod, pod_meta, where=where, refs=ctx)))
        replica = next(r for r in shape.replicas if r.kind == kind)
        value = max(value, priority(replica.template, ctx, where))
    spec = gang_spec(
        tasks,
        ctx=ctx,
        name=str(meta.get("name", "pytorchjob")),
        namespace=str(meta.get("namespace", "default")),
        owner_labels=meta.get("labels") or {},
        value=value,
        elastic_min=None if (nodes := elastic_nodes(shape)) is None else nodes[0],
    )
    key = str(((pods[0].get("metadata") or {}).get("annotations") or {}).get(ANNOTATION_KEY))
    return Submission(key=key, spec=spec, pods=tuple(name for name, _ in tasks))


def set_condition(
    conditions: list[dict[str, Any]],
    kind: str,
    status: bool,
    reason: str,
    message: str,
    now: Instant,
) -> None:
    """The training operator's ``setCondition``: nothing changes once Failed; Running and
    Restarting replace each other; Succeeded and Failed turn Running False."""
    if is_true(conditions, "Failed"):
        return
    value = "True" if status else "False"
    current = next((c for c in conditions if c.get("type") == kind), None)
    if current is not None and current.get("status") == value and current.get("reason") == reason:
        return
    stamp = rfc3339(now)
    transition = (
        current["lastTransitionTime"]
        if (current is not None and current.get("status") == value)
        else stamp
    )
    kept = []
    for c in conditions:
        if c.get("type") == kind or {kind, c.get("type")} == {"Running", "Restarting"}:
            continue
        if kind in ("Failed", "Succeeded") and c.get("type") == "Running":
            c["status"] = "False"
        kept.append(c)
    kept.append(
        {
            "type": kind,
            "status": value,
            "reason": reason,
            "message": message,
            "lastUpdateTime": stamp,
            "lastTransitionTime": transition,
        }
    )
    conditions[:] = kept


def reconcile(
    obj: Mapping[str, Any],
    pods: Sequence[Mapping[str, Any]],
    engine: Mapping[int, EngineJob],
    now: Instant,
    ctx: Context,
) -> Plan:
    """One pass of the PyTorchJob controller over ``obj`` and its pods (module docstring)."""
    plan = Plan()
    meta = obj.get("metadata") or {}
    name = str(meta.get("name", ""))
    status: dict[str, Any] = copy.deepcopy(dict(obj.get("status") or {}))
    conditions: list[dict[str, Any]] = list(status.get("conditions") or [])
    status["conditions"] = conditions
    try:
        shape = training_shape(obj)
    except InputError as e:
        plan.events.append(
            event(obj, f"{KIND}FailedValidation", str(e), now, warning=True, component=CONTROLLER)
        )
        return plan
    if not any(c.get("type") == "Created" for c in conditions):
        set_condition(
            conditions, "Created", True, f"{KIND}Created", f"{KIND} {name} is created.", now
        )

    # 1. the pods as their engine job leaves them
    seen: list[Mapping[str, Any]] = []
    job: EngineJob | None = None
    for pod in sorted(
        pods,
        key=lambda p: int(
            ((p.get("metadata") or {}).get("annotations") or {}).get(ANNOTATION_RANK, 0)
        ),
    ):
        job_id = engine_id(pod)
        mine = engine.get(job_id) if job_id is not None else None
        job = job or mine
        new, events = refresh(pod, mine, now, seq=len(plan.events))
        if new is not None:
            plan.update.append(new)
            pod = new
        plan.events.extend(events)
        seen.append(pod)
    current: Sequence[Mapping[str, Any]] = seen
    attempt = max(
        (
            int(((p.get("metadata") or {}).get("annotations") or {}).get(ANNOTATION_RESTARTS, 0))
            for p in current
        ),
        default=0,
    )

    finished = is_true(conditions, "Succeeded") or is_true(conditions, "Failed")
    if finished:
        _finish(plan, shape, status, current, now)
    elif shape.suspend:
        for pod in current:
            plan.delete.append(str((pod.get("metadata") or {}).get("name")))
        if job is not None and job.state in (JobState.PENDING, JobState.RUNNING):
            plan.cancel.append(job.id)
        message = f"{KIND} {name} is suspended."
        if is_true(conditions, "Running"):
            set_condition(conditions, "Running", False, f"{KIND}Suspended", message, now)
        if not is_true(conditions, "Suspended"):
            set_condition(conditions, "Suspended", True, f"{KIND}Suspended", message, now)
            plan.events.append(
                event(
                    obj,
                    f"{KIND}Suspended",
                    message,
                    now,
                    seq=len(plan.events),
                    component=CONTROLLER,
                )
            )
        status.pop("startTime", None)
        current = []
    else:
        current = _run(plan, obj, shape, current, job, attempt, status, conditions, now, ctx)
    status["replicaStatuses"] = _replica_statuses(shape, name, current, plan)
    if status != (obj.get("status") or {}):
        plan.status = status
    return plan


def _run(
    plan: Plan,
    obj: Mapping[str, Any],
    shape: TrainingShape,
    current: Sequence[Mapping[str, Any]],
    job: EngineJob | None,
    attempt: int,
    status: dict[str, Any],
    conditions: list[dict[str, Any]],
    now: Instant,
    ctx: Context,
) -> Sequence[Mapping[str, Any]]:
    name = str((obj.get("metadata") or {}).get("name", ""))
    if is_true(conditions, "Suspended"):
        message = f"{KIND} {name} is resumed."
        set_condition(conditions, "Suspended", False, f"{KIND}Resumed", message, now)
        plan.events.append(
            event(obj, f"{KIND}Resumed", message, now, seq=len(plan.events), component=CONTROLLER)
        )
    started = parse_time(status.get("startTime"))
    if started is None:
        started = now
        status["startTime"] = rfc3339(now)

    # 2. no pods yet: the whole gang, one submission
    if not current:
        fresh: list[dict[str, Any]] = [
            _pod(obj, shape, m, attempt, now, ctx) for m in members(obj, shape)
        ]
        try:
            plan.submit.append(_submission(obj, shape, fresh, ctx))
        except InputError as e:
            plan.events.append(creation_failed(obj, str(e), now, len(plan.events), CONTROLLER))
            return []
        for pod in fresh:
            plan.create.append(pod)
            plan.events.append(
                event(
                    obj,
                    "SuccessfulCreatePod",
                    f"Created pod: {pod['metadata']['name']}",
                    now,
                    seq=len(plan.events),
                    component=CONTROLLER,
                )
            )
        return fresh
    if job is None:  # the submission not taken yet: again, under its key
        plan.submit.append(_submission(obj, shape, current, ctx))

    # 3. the deadline
    if shape.deadline_s is not None:
        end = started + shape.deadline_s * SECOND
        if now >= end:
            if job is not None and job.state in (JobState.PENDING, JobState.RUNNING):
                plan.cancel.append(job.id)
            _fail(
                plan,
                obj,
                status,
                conditions,
                now,
                f"Job {name} has failed because it was active longer than specified deadline",
            )
            return current
        plan.wake(end)

    # 4. the engine job's state
    if job is None:
        return current
    if job.state is JobState.RUNNING:
        set_condition(
            conditions, "Running", True, f"{KIND}Running", f"{KIND} {name} is running.", now
        )
    elif job.state is JobState.COMPLETED:
        message = f"{KIND} {name} is successfully completed."
        set_condition(conditions, "Succeeded", True, f"{KIND}Succeeded", message, now)
        status["completionTime"] = rfc3339(now)
        plan.events.append(
            event(obj, f"{KIND}Succeeded", message, now, seq=len(plan.events), component=CONTROLLER)
        )
        _finish(plan, shape, status, current, now)
    elif job.state in FAILED:
        kind = shape.replicas[0].kind
        count = shape.replicas[0].replicas
        if _restarts(shape, job):
            if shape.backoff_limit is not None and attempt + 1 > shape.backoff_limit:
                _fail(
                    plan,
                    obj,
                    status,
                    conditions,
                    now,
                    f"Job {name} has failed because it has reached the specified backoff limit",
                )
                _finish(plan, shape, status, current, now)
                return current
            message = f"{KIND} {name} is restarting because {count} {kind} replica(s) failed."
            set_condition(conditions, "Restarting", True, f"{KIND}Restarting", message, now)
            plan.events.append(
                event(
                    obj,
                    f"{KIND}Restarting",
                    message,
                    now,
                    warning=True,
                    seq=len(plan.events),
                    component=CONTROLLER,
                )
            )
            again: list[dict[str, Any]] = [
                _pod(obj, shape, m, attempt + 1, now, ctx) for m in members(obj, shape)
            ]
            plan.update = list(again)  # fresh pods supersede their refreshed old selves
            plan.submit.append(_submission(obj, shape, again, ctx))
            return again
        _fail(
            plan,
            obj,
            status,
            conditions,
            now,
            f"{KIND} {name} is failed because {count} {kind} replica(s) failed.",
        )
        _finish(plan, shape, status, current, now)
    return current


def _restarts(shape: TrainingShape, job: EngineJob) -> bool:
    """Whether the gang starts again after this failed run: every replica's policy allows
    it (OnFailure, Always; ExitCode for a retryable exit, 128 and up)."""
    if job.state is JobState.CANCELLED:
        return False
    code = job.exit_code if job.exit_code else (128 + job.signal if job.signal else 1)
    if job.state is JobState.OUT_OF_MEMORY:
        code = 137
    for replica in shape.replicas:
        if replica.restart_policy == "Never":
            return False
        if replica.restart_policy == "ExitCode" and code < 128:
            return False
    return True


def _fail(
    plan: Plan,
    obj: Mapping[str, Any],
    status: dict[str, Any],
    conditions: list[dict[str, Any]],
    now: Instant,
    message: str,
) -> None:
    set_condition(conditions, "Failed", True, f"{KIND}Failed", message, now)
    status.setdefault("completionTime", rfc3339(now))
    plan.events.append(
        event(obj, f"{KIND}Failed", message, now, seq=len(plan.events), component=CONTROLLER)
    )


def _finish(
    plan: Plan,
    shape: TrainingShape,
    status: Mapping[str, Any],
    current: Sequence[Mapping[str, Any]],
    now: Instant,
) -> None:
    """A finished job: its pods cleaned as ``cleanPodPolicy`` says, the job deleted after
    ``ttlSecondsAfterFinished``."""
    for pod in current:
        if shape.clean_pod_policy == "All" or (
            shape.clean_pod_policy == "Running" and is_active(pod)
        ):
            name = str((pod.get("metadata") or {}).get("name"))
            if name not in plan.delete:
                plan.delete.append(name)
    ended = parse_time(status.get("completionTime"))
    if shape.ttl_s is not None and ended is not None:
        due = ended + shape.ttl_s * SECOND
        if now >= due:
            plan.delete_self = True
        else:
            plan.wake(due)


def _replica_statuses(
    shape: TrainingShape,
    name: str,
    current: Sequence[Mapping[str, Any]],
    plan: Plan,
) -> dict[str, Any]:
    gone = set(plan.delete)
    out: dict[str, Any] = {}
    for replica in shape.replicas:
        kind = replica.kind.lower()
        mine = [
            p
            for p in current
            if ((p.get("metadata") or {}).get("labels") or {}).get(REPLICA_TYPE) == kind
            and str((p.get("metadata") or {}).get("name")) not in gone
        ]
        entry: dict[str, Any] = {
            "labelSelector": {
                "matchLabels": {JOB_NAME: name, OPERATOR: CONTROLLER, REPLICA_TYPE: kind}
            },
        }
        for key, want in (("active", "Running"), ("succeeded", "Succeeded"), ("failed", "Failed")):
            count = sum(1 for p in mine if phase(p) == want)
            if count:
                entry[key] = count
        out[replica.kind] = entry
    return out
