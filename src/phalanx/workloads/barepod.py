"""A pod no controller owns (created by a user: ``kubectl run``, ``kubectl apply`` of a Pod):
one engine job of one task, whose node's agent carries out the pod's ``restartPolicy`` and
probes as a kubelet would (``pod_spec(in_place=True)``), so that a pod that restarts in
place keeps its engine job, its node and its name.

Its submission's idempotency key is the pod's uid: a runner restarted, or a plan carried out
twice, submits it once. A pod whose spec cannot run here stays Pending with ``PodScheduled``
False saying why (the field named), and a warning event.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from phalanx.domain.time import Instant
from phalanx.errors import InputError
from phalanx.workloads.conditions import set_condition
from phalanx.workloads.events import event
from phalanx.workloads.plan import (
    ANNOTATION_KEY,
    ANNOTATION_LOG,
    Context,
    EngineJob,
    Plan,
    Submission,
)
from phalanx.workloads.pods import engine_id, refresh
from phalanx.workloads.podspec import pod_task
from phalanx.workloads.specs import log_file, pod_spec, priority

__all__ = ["is_bare", "reconcile", "submission_key"]


def is_bare(pod: Mapping[str, Any]) -> bool:
    """No controller owns ``pod``: it is run for itself."""
    refs = (pod.get("metadata") or {}).get("ownerReferences") or ()
    return not any(r.get("controller") for r in refs if isinstance(r, Mapping))


def submission_key(pod: Mapping[str, Any]) -> str:
    return f"pod/{(pod.get('metadata') or {}).get('uid', '')}"


def reconcile(pod: Mapping[str, Any], job: EngineJob | None, now: Instant, ctx: Context) -> Plan:
    """One pass over a bare ``pod`` and its engine job (None: not submitted, or not known)."""
    plan = Plan()
    meta = pod.get("metadata") or {}
    name = str(meta.get("name", ""))
    namespace = str(meta.get("namespace", "default"))
    if engine_id(pod) is None:
        try:
            task = pod_task(pod, meta, where="", refs=ctx)
            spec = pod_spec(
                task,
                ctx=ctx,
                name=name,
                namespace=namespace,
                pod=name,
                owner_labels=meta.get("labels") or {},
                template=pod,
                value=priority(pod, ctx, ""),
                in_place=True,
            )
        except InputError as e:
            return _unrunnable(pod, e, now, plan)
        key = submission_key(pod)
        plan.submit.append(Submission(key=key, spec=spec, pods=(name,)))
        notes = meta.get("annotations") or {}
        wanted = {ANNOTATION_KEY: key, ANNOTATION_LOG: log_file(ctx, namespace, name)}
        if any(notes.get(k) != v for k, v in wanted.items()):
            new = copy.deepcopy(dict(pod))
            new["metadata"]["annotations"] = {**notes, **wanted}
            plan.update.append(new)
        return plan
    refreshed, events = refresh(pod, job, now)
    if refreshed is not None:
        plan.update.append(refreshed)
    plan.events.extend(events)
    return plan


def _unrunnable(pod: Mapping[str, Any], error: InputError, now: Instant, plan: Plan) -> Plan:
    field = (error.field or "").lstrip(".")
    message = f"{field}: {error.message}" if field else error.message
    status = copy.deepcopy(dict(pod.get("status") or {}))
    conditions: list[dict[str, Any]] = status.setdefault("conditions", [])
    before = [dict(c) for c in conditions]
    set_condition(conditions, "PodScheduled", False, "Unschedulable", message, now)
    if conditions != before:
        new = copy.deepcopy(dict(pod))
        new["status"] = status
        plan.update.append(new)
        plan.events.append(event(pod, "FailedCreate", message, now, warning=True))
    return plan
