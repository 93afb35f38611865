"""Kueue's view of a queued workload: the ``Workload`` object and the owner's ``suspend`` flag,
built from the engine's decisions (sans-IO).

Kueue's integrations for ``batch/v1`` Job, Kubeflow PyTorchJob and JobSet (docs "Run a
Kubernetes Job", "Run a PyTorchJob", "Run a JobSet"): a workload labelled
``kueue.x-k8s.io/queue-name`` is created suspended (its webhook sets the suspend flag:
``kueue_owners.suspend_on_create``); Kueue makes a ``Workload`` owned by it, named
``KIND-NAME-HASH``, with its pod sets; once its ClusterQueue admits it, the Workload gets
``status.admission`` and the conditions QuotaReserved and Admitted, and the owner is
unsuspended. Pending, the Workload says why with QuotaReserved False (reason ``Pending``);
finished, it gets Finished; sent back to the queue after it ran, Evicted, and the owner is
suspended again. Phalanx does the same for a Volcano Job with the label (it has no flag).

Phalanx admits with the engine's ``admit/clusterqueue`` (no second admission logic here):
the owner's pods' engine jobs wait in the engine's queue with the quota reason, so the
reconciler runs a queued owner as if unsuspended (``as_reconciled``) and this module only
mirrors what the engine decided: the Workload is admitted when every live engine job of the
owner has started (and one has), and the owner's suspend flag is the opposite. The pods of an
engine job that has not started are held back by the runner (``phalanx.kube.podgate``), so a
pending Workload's owner has no pods, as Kueue's suspended one has none. ``spec.active:
false`` on the Workload (Kueue's way to deactivate one) suspends the owner for real: its
engine jobs are cancelled.
"""

from __future__ import annotations

import copy
import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from phalanx.domain.quantity import format_quantity, parse_quantity
from phalanx.domain.state import JobState
from phalanx.domain.time import Instant
from phalanx.errors import InputError
from phalanx.workloads.conditions import is_true, set_condition
from phalanx.workloads.kueue_owners import queue_of, suspend_on_create, with_suspend
from phalanx.workloads.plan import EngineJob

__all__ = [
    "API_VERSION",
    "JOB_UID_LABEL",
    "Placement",
    "Verdict",
    "as_reconciled",
    "judge",
    "queue_of",
    "suspend_on_create",
    "with_suspend",
    "workload",
    "workload_name",
]

API_VERSION = "kueue.x-k8s.io/v1beta2"
JOB_UID_LABEL = "kueue.x-k8s.io/job-uid"
_HASH_LENGTH = 5
_MAX_PREFIX = 253 - _HASH_LENGTH - 1  # a Workload's name stays a valid object name


def as_reconciled(obj: Mapping[str, Any], active: bool) -> dict[str, Any]:
    """The owner as its reconciler should see it: a queued workload's suspend flag is Kueue's
    mirror of admission, not a request to stop, so it reads false unless the Workload was
    deactivated (``active`` false)."""
    return with_suspend(obj, not active)


def workload_name(kind: str, group: str, name: str, uid: str) -> str:
    """``job-NAME-HASH`` as Kueue names the Workload of an owner: the lower-cased kind and the
    owner's name, and 5 hex digits of a SHA-1 over kind, group, name and uid (so a new owner of
    the same name gets a new Workload)."""
    prefix = f"{kind.lower()}-{name}"[:_MAX_PREFIX]
    digest = hashlib.sha1(f"{kind}\n{group}\n{name}\n{uid}".encode()).hexdigest()
    return f"{prefix}-{digest[:_HASH_LENGTH]}"


@dataclass(frozen=True)
class Verdict:
    """What the engine decided for an owner's engine jobs, in Kueue's terms."""

    admitted: bool
    message: str = ""
    """Why not admitted (the first pending engine job's reason and message)."""
    evicted: bool = False
    """Sent back to the queue after it ran (preempted or requeued)."""


def judge(jobs: Sequence[EngineJob], problem: str = "") -> Verdict:
    """Admitted when every live engine job has started and one has; ``problem`` (the queue
    set-up's, e.g. "LocalQueue q doesn't exist in namespace ns") explains a Workload none of
    whose jobs the engine has yet."""
    live = [j for j in jobs if not j.state.is_final]
    pending = [j for j in live if j.start is None]
    if live and not pending:
        return Verdict(admitted=True)
    if pending:
        first = min(pending, key=lambda j: j.id)
        message = first.message or first.reason or "Pending"
        return Verdict(
            admitted=False,
            message=message,
            evicted=any(j.restarts > 0 or j.state is JobState.REQUEUED for j in pending),
        )
    return Verdict(admitted=False, message=problem)


@dataclass(frozen=True)
class Placement:
    """Where the admission went: the ClusterQueue and the flavor of each covered resource."""

    cluster_queue: str
    flavors: Mapping[str, str] = field(default_factory=dict)


def workload(
    owner: Mapping[str, Any],
    pod_sets: Sequence[Mapping[str, Any]],
    verdict: Verdict,
    placement: Placement | None,
    finished: tuple[bool, str] | None,
    current: Mapping[str, Any] | None,
    now: Instant,
) -> dict[str, Any]:
    """The owner's Workload: ``current`` (the stored one, None at first) with its spec and
    status brought up to date. ``pod_sets``: Kueue's ``spec.podSets`` (name, count,
    template); ``finished``: (succeeded, message) once the owner is done."""
    meta = owner.get("metadata") or {}
    kind, api_version = str(owner.get("kind")), str(owner.get("apiVersion"))
    group = api_version.rpartition("/")[0]
    uid, name = str(meta.get("uid")), str(meta.get("name"))
    made: dict[str, Any] = (
        copy.deepcopy(dict(current))
        if current is not None
        else {
            "apiVersion": API_VERSION,
            "kind": "Workload",
            "metadata": {
                "name": workload_name(kind, group, name, uid),
                "namespace": meta.get("namespace", "default"),
                "labels": {JOB_UID_LABEL: uid},
                "ownerReferences": [
                    {
                        "apiVersion": api_version,
                        "kind": kind,
                        "name": name,
                        "uid": uid,
                        "controller": True,
                        "blockOwnerDeletion": True,
                    }
                ],
            },
            "spec": {"active": True},
        }
    )
    spec = made.setdefault("spec", {})
    spec["queueName"] = queue_of(owner) or ""
    spec["podSets"] = [dict(p) for p in pod_sets]
    spec.setdefault("active", True)
    status = made.setdefault("status", {})
    conditions: list[dict[str, Any]] = status.setdefault("conditions", [])
    if finished is not None:
        ok, message = finished
        reason = "Succeeded" if ok else "Failed"
        _set(conditions, "Finished", True, reason, message, now)
    elif verdict.admitted and placement is not None:
        status["admission"] = {
            "clusterQueue": placement.cluster_queue,
            "podSetAssignments": [
                {
                    "name": p["name"],
                    "count": p["count"],
                    "flavors": dict(placement.flavors),
                    "resourceUsage": _usage(p),
                }
                for p in pod_sets
            ],
        }
        message = f"Quota reserved in ClusterQueue {placement.cluster_queue}"
        _set(conditions, "QuotaReserved", True, "QuotaReserved", message, now)
        _set(conditions, "Admitted", True, "Admitted", "The workload is admitted", now)
        if is_true(conditions, "Evicted"):
            _set(conditions, "Evicted", False, "QuotaReserved", "Previously: preempted", now)
    else:
        was_admitted = is_true(conditions, "Admitted")
        status.pop("admission", None)
        if verdict.message or conditions:
            _set(conditions, "QuotaReserved", False, "Pending", verdict.message, now)
        if was_admitted or any(c["type"] == "Admitted" for c in conditions):
            _set(
                conditions,
                "Admitted",
                False,
                "NoReservation",
                "The workload has no reservation",
                now,
            )
        if verdict.evicted or was_admitted:
            message = "Preempted to accommodate a higher priority Workload"
            _set(conditions, "Evicted", True, "Preempted", message, now)
    return made


def _set(
    conditions: list[dict[str, Any]],
    kind: str,
    status: bool,
    reason: str,
    message: str,
    now: Instant,
) -> None:
    """A Workload's condition: Kueue's carry no ``lastProbeTime``."""
    set_condition(conditions, kind, status, reason, message, now)
    for c in conditions:
        c.pop("lastProbeTime", None)


def _usage(pod_set: Mapping[str, Any]) -> dict[str, str]:
    """The pod set's requests (each container's, summed) times its count, as
    ``resourceUsage`` shows them; a quantity that does not parse is left out (the API
    server's validation refuses such a pod template before it gets here)."""
    count = int(pod_set.get("count") or 1)
    totals: dict[str, int] = {}
    template = pod_set.get("template") or {}
    for container in (template.get("spec") or {}).get("containers") or ():
        requests = ((container or {}).get("resources") or {}).get("requests") or {}
        for resource, text in requests.items():
            try:
                totals[resource] = totals.get(resource, 0) + parse_quantity(str(text))
            except InputError:
                continue
    return {r: format_quantity(v * count, r) for r, v in sorted(totals.items())}
