"""``apps/v1`` ReplicaSet: keeps ``spec.replicas`` pods running, each its own engine job of one
task, and reports how many are ready and available.

Kubernetes 1.32's ReplicaSet controller, in the parts that make sense here. Its pods are those
that match ``spec.selector`` and name it as their controller (orphans are not adopted). A pod
whose engine job ended (its process exited, its node died: NODE_FAIL after the controller's
node timeout, it was cancelled, or preempted under PreemptMode=CANCEL) is deleted and replaced
in the same pass, as the node lifecycle controller's eviction and the ReplicaSet controller do
together upstream; a pod the user deletes is replaced likewise. One whose process ended by
itself within ``CRASH_WINDOW`` of starting stays, Failed, for ``BACKOFF`` first (a ``BackOff``
event), as the kubelet's CrashLoopBackOff would hold it. Too many pods: those deleted
first are, as ``controller.ActivePodsWithRanks`` orders them, unscheduled before scheduled,
Pending before Running, not ready before ready, on a node shared with more of its replicas
before less, ready more recently before longer, more restarts before fewer, newer before older
(exact times; upstream's logarithmic buckets of those times are not kept). Status:
``replicas`` (its active pods), ``fullyLabeledReplicas``, ``readyReplicas``,
``availableReplicas`` (ready for ``minReadySeconds``), ``observedGeneration``, and the
``ReplicaFailure`` condition while its pods cannot be made.

Pods never end by themselves here (``restartPolicy: Always``): their engine jobs get
``Context.service_time_limit`` unless the template sets ``activeDeadlineSeconds``. They are
not requeued (``--no-requeue``): a pod is bound to its node for life, so a lost node or a
preemption ends it and its replacement is a new pod. A pod whose ``priorityClassName`` names
a QOS of the cluster runs under that QOS: the engine preempts by QOS (a class ``high`` on the
default clusters, whose QOS ``high`` preempts ``normal``: training is signalled, checkpoints
and is requeued), while the class's value orders the queue.
"""

from __future__ import annotations

import copy
import dataclasses
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from phalanx.domain.state import JobState
from phalanx.domain.time import SECOND, Instant
from phalanx.errors import InputError
from phalanx.workloads.conditions import condition
from phalanx.workloads.events import creation_failed, event
from phalanx.workloads.plan import (
    ANNOTATION_KEY,
    ANNOTATION_LOG,
    ANNOTATION_RANK,
    Context,
    EngineJob,
    NameSource,
    Plan,
    Submission,
    refused,
)
from phalanx.workloads.pods import (
    engine_id,
    is_active,
    is_ready,
    new_pod,
    phase,
    ready_since,
    refresh,
)
from phalanx.workloads.podspec import pod_task
from phalanx.workloads.selectors import matches
from phalanx.workloads.specs import log_file, pod_spec, priority
from phalanx.workloads.timestamps import parse_time, rfc3339

__all__ = [
    "COMPONENT",
    "ReplicaSetShape",
    "available",
    "deletion_order",
    "reconcile",
    "replicaset_shape",
]

COMPONENT = "replicaset-controller"
BURST = 500
"""At most this many pods made or deleted in one pass (upstream's ``burstReplicas``)."""
CRASH_WINDOW = 2 * SECOND
BACKOFF = 10 * SECOND
"""A pod whose process ended by itself within ``CRASH_WINDOW`` of starting is replaced only
``BACKOFF`` after it ended (the kubelet's first CrashLoopBackOff step), so that a command
that cannot run does not turn into a stream of engine jobs."""
_CRASHES = frozenset({JobState.FAILED, JobState.COMPLETED, JobState.OUT_OF_MEMORY})


@dataclass(frozen=True, slots=True)
class ReplicaSetShape:
    """A ReplicaSet's spec with the API server's defaults filled in."""

    replicas: int = 1
    min_ready_s: int = 0


def _count(spec: Mapping[str, Any], name: str, default: int) -> int:
    value = spec.get(name, default)
    if value is None:
        return default
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise InputError("must be greater than or equal to 0", field=f"spec.{name}")
    return value


def replicaset_shape(obj: Mapping[str, Any]) -> ReplicaSetShape:
    """``obj``'s spec, defaulted; ``InputError`` naming the field the API server would refuse
    (a negative count, a selector that does not select the template's labels)."""
    spec = obj.get("spec") or {}
    labels = ((spec.get("template") or {}).get("metadata") or {}).get("labels") or {}
    if not matches(spec.get("selector"), labels, "spec.selector"):
        raise InputError(
            "`selector` does not match template `labels`", field="spec.template.metadata.labels"
        )
    return ReplicaSetShape(
        replicas=_count(spec, "replicas", 1), min_ready_s=_count(spec, "minReadySeconds", 0)
    )


def available(pod: Mapping[str, Any], min_ready_s: int, now: Instant) -> bool:
    """Ready for at least ``min_ready_s`` seconds (Kubernetes' ``IsPodAvailable``)."""
    since = ready_since(pod)
    if since is None:
        return False
    if min_ready_s == 0:
        return True
    at = parse_time(since)
    return at is not None and at + min_ready_s * SECOND <= now


def _name(pod: Mapping[str, Any]) -> str:
    return str((pod.get("metadata") or {}).get("name"))


def submission(obj: Mapping[str, Any], pod: Mapping[str, Any], ctx: Context) -> Submission:
    """The engine job that runs ``pod`` of ReplicaSet ``obj``: unlimited in time unless the
    template sets ``activeDeadlineSeconds`` (a service never ends by itself)."""
    meta = obj.get("metadata") or {}
    pod_meta = pod.get("metadata") or {}
    task = pod_task(pod, pod_meta, where="spec.template", refs=ctx)
    spec = pod_spec(
        task,
        ctx=ctx,
        name=str(meta.get("name", "replicaset")),
        namespace=str(meta.get("namespace", "default")),
        pod=_name(pod),
        owner_labels=meta.get("labels") or {},
        template=pod,
        value=priority((obj.get("spec") or {}).get("template") or {}, ctx, "spec.template"),
        in_place=True,  # the node's agent restarts its container, as the kubelet does
    )
    # A PriorityClass named like a QOS of the cluster: the pod runs under that QOS, so the
    # engine's preemption (by QOS, Slurm's PreemptType=preempt/qos) lets it take GPUs from
    # what that QOS may preempt; the class's value orders the queue either way.
    pc = ((obj.get("spec") or {}).get("template") or {}).get("spec", {}).get("priorityClassName")
    qos = pc if isinstance(pc, str) and pc in ctx.qos_names else spec.qos
    # Not requeued: a pod never moves. Its node lost, it ends NODE_FAIL and the ReplicaSet
    # makes a new pod (a new name, wherever the engine places it), as Kubernetes does.
    spec = dataclasses.replace(
        spec,
        qos=qos,
        requeue=False,
        time_limit=ctx.service_time_limit if spec.time_limit is None else spec.time_limit,
    )
    key = str((pod_meta.get("annotations") or {}).get(ANNOTATION_KEY, ""))
    return Submission(key=key, spec=spec, pods=(_name(pod),))


def reconcile(
    obj: Mapping[str, Any],
    pods: Sequence[Mapping[str, Any]],
    engine: Mapping[int, EngineJob],
    now: Instant,
    ctx: Context,
    names: NameSource,
) -> Plan:
    """One pass of the ReplicaSet controller over ``obj`` and the pods it owns (module
    docstring)."""
    plan = Plan()
    status: dict[str, Any] = copy.deepcopy(dict(obj.get("status") or {}))
    try:
        shape = replicaset_shape(obj)
    except InputError as e:
        return refused(obj, str(e), now, COMPONENT)

    # 1. the pods as their engine jobs leave them; one whose job ended goes (and is replaced),
    # after a back-off if it crashed as it started
    active: list[Mapping[str, Any]] = []
    held: list[Mapping[str, Any]] = []
    failure: str | None = None
    for pod in sorted(pods, key=_name):
        job_id = engine_id(pod)
        job = engine.get(job_id) if job_id is not None else None
        new, events = refresh(pod, job, now, seq=len(plan.events))
        plan.events.extend(events)
        if new is not None:
            pod = new
        if not is_active(pod):
            until = _backoff_until(job)
            if until is not None and now < until:
                held.append(pod)
                plan.wake(until)
                if new is not None:
                    plan.update.append(new)
                    plan.events.append(_backoff_event(pod, now, len(plan.events)))
            else:
                plan.delete.append(_name(pod))
            continue
        if new is not None:
            plan.update.append(new)
        active.append(pod)
        if job_id is None:  # its submission was not taken yet: again, under its key
            try:
                plan.submit.append(submission(obj, pod, ctx))
            except InputError as e:
                failure = str(e)

    # 2. as many pods as asked for (a pod backing off holds its place while there is room)
    room = max(0, shape.replicas - len(active))
    plan.delete.extend(_name(p) for p in held[room:])
    held = held[:room]
    diff = len(active) + len(held) - shape.replicas
    if diff < 0:
        made, failed = _create(plan, obj, min(-diff, BURST), now, ctx, names)
        active.extend(made)
        failure = failed or failure
    elif diff > 0:
        doomed = deletion_order(active, now)[: min(diff, BURST)]
        for pod in doomed:
            job_id = engine_id(pod)
            if job_id is not None:
                plan.cancel.append(job_id)
            plan.delete.append(_name(pod))
            plan.events.append(
                event(
                    obj,
                    "SuccessfulDelete",
                    f"Deleted pod: {_name(pod)}",
                    now,
                    seq=len(plan.events),
                    component=COMPONENT,
                )
            )
        gone = {_name(p) for p in doomed}
        active = [p for p in active if _name(p) not in gone]

    # 3. status
    _status(plan, obj, status, shape, active, failure, now)
    status["replicas"] += len(held)  # as a pod in CrashLoopBackOff counts upstream
    if status != (obj.get("status") or {}):
        plan.status = status
    return plan


def _backoff_until(job: EngineJob | None) -> Instant | None:
    """When a pod whose container crashed as it started may be replaced: ``BACKOFF`` after
    it ended, as the kubelet's CrashLoopBackOff would wait before running it again (None: at
    once -- it ran a while, or its node, a cancel or a preemption ended it)."""
    if job is None or job.start is None or job.end is None or job.state not in _CRASHES:
        return None
    return job.end + BACKOFF if job.end - job.start < CRASH_WINDOW else None


def _backoff_event(pod: Mapping[str, Any], now: Instant, seq: int) -> dict[str, Any]:
    return event(
        pod,
        "BackOff",
        "Back-off restarting failed container",
        now,
        seq=seq,
        warning=True,
        component="kubelet",
    )


def _create(
    plan: Plan,
    obj: Mapping[str, Any],
    count: int,
    now: Instant,
    ctx: Context,
    names: NameSource,
) -> tuple[list[Mapping[str, Any]], str | None]:
    """``count`` new pods; stops at the first that cannot run (its message returned)."""
    meta = obj.get("metadata") or {}
    rs, uid = str(meta.get("name", "")), str(meta.get("uid", ""))
    namespace = str(meta.get("namespace", "default"))
    template = (obj.get("spec") or {}).get("template") or {}
    made: list[Mapping[str, Any]] = []
    for _ in range(count):
        name = f"{rs}-{names()}"
        pod = new_pod(
            obj,
            name,
            template,
            labels={},
            annotations={
                ANNOTATION_KEY: f"kube/{uid}/{name}",
                ANNOTATION_LOG: log_file(ctx, namespace, name),
                ANNOTATION_RANK: "0",
            },
            now=now,
        )
        try:
            sub = submission(obj, pod, ctx)
        except InputError as e:
            plan.events.append(creation_failed(obj, str(e), now, len(plan.events), COMPONENT))
            return made, str(e)
        plan.create.append(pod)
        plan.submit.append(sub)
        made.append(pod)
        plan.events.append(
            event(
                obj,
                "SuccessfulCreate",
                f"Created pod: {name}",
                now,
                seq=len(plan.events),
                component=COMPONENT,
            )
        )
    return made, None


_PHASE_RANK = {"Pending": 0, "Unknown": 1, "Running": 2}


def deletion_order(pods: Sequence[Mapping[str, Any]], now: Instant) -> list[Mapping[str, Any]]:
    """``pods`` in the order a scale-down deletes them (module docstring)."""
    return sorted(pods, key=lambda p: _deletion_rank(p, pods, now))


def _deletion_rank(
    pod: Mapping[str, Any], active: Sequence[Mapping[str, Any]], now: Instant
) -> tuple[int, int, int, int, int, int, int, str]:
    """Sort key: the pod to delete first sorts first (module docstring)."""
    node = (pod.get("spec") or {}).get("nodeName")
    on_node = Counter((p.get("spec") or {}).get("nodeName") for p in active)
    ready = is_ready(pod)
    since = parse_time(ready_since(pod)) if ready else None
    status = pod.get("status") or {}
    restarts = sum(int(c.get("restartCount", 0)) for c in status.get("containerStatuses") or ())
    created = parse_time((pod.get("metadata") or {}).get("creationTimestamp"))
    return (
        1 if node else 0,
        _PHASE_RANK.get(phase(pod), 1),
        1 if ready else 0,
        -on_node[node] if node else 0,
        -(since if since is not None else now),
        -restarts,
        -(created if created is not None else now),
        _name(pod),
    )


def _status(
    plan: Plan,
    obj: Mapping[str, Any],
    status: dict[str, Any],
    shape: ReplicaSetShape,
    active: Sequence[Mapping[str, Any]],
    failure: str | None,
    now: Instant,
) -> None:
    """The counts of the pods the ReplicaSet has after ``plan`` (zeros left out but
    ``replicas``, as the API leaves them out), and when to look again (minReadySeconds)."""
    labels = (((obj.get("spec") or {}).get("template") or {}).get("metadata") or {}).get(
        "labels"
    ) or {}
    status["replicas"] = len(active)
    counts = {
        "fullyLabeledReplicas": sum(
            1
            for p in active
            if all(
                ((p.get("metadata") or {}).get("labels") or {}).get(k) == v
                for k, v in labels.items()
            )
        ),
        "readyReplicas": sum(1 for p in active if is_ready(p)),
        "availableReplicas": sum(1 for p in active if available(p, shape.min_ready_s, now)),
    }
    for key, value in counts.items():
        if value:
            status[key] = value
        else:
            status.pop(key, None)
    generation = (obj.get("metadata") or {}).get("generation")
    if generation is not None:
        status["observedGeneration"] = generation
    conditions = [c for c in status.get("conditions") or () if c.get("type") != "ReplicaFailure"]
    if failure is not None:
        old = condition(status.get("conditions") or (), "ReplicaFailure")
        conditions.append(
            {
                "type": "ReplicaFailure",
                "status": "True",
                "reason": "FailedCreate",
                "message": failure,
                "lastTransitionTime": (old or {}).get("lastTransitionTime") or rfc3339(now),
            }
        )
    if conditions:
        status["conditions"] = conditions
    else:
        status.pop("conditions", None)
    if shape.min_ready_s:
        for p in active:
            since = parse_time(ready_since(p))
            if since is not None and since + shape.min_ready_s * SECOND > now:
                plan.wake(since + shape.min_ready_s * SECOND)
