"""A Deployment's status from its ReplicaSets', and its ``Available`` and ``Progressing``
conditions, as Kubernetes' deployment controller writes them (``calculateStatus``,
``syncRolloutStatus``, ``checkPausedConditions``; reasons and messages as upstream's), which
``kubectl rollout status`` reads."""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from phalanx.domain.time import SECOND, Instant
from phalanx.workloads.timestamps import parse_time, rfc3339

__all__ = ["complete", "rollout_status", "set_condition"]

Obj = dict[str, Any]


def set_condition(
    conditions: list[Obj], kind: str, status: str, reason: str, message: str, now: Instant
) -> None:
    """``SetDeploymentCondition``: the same status and reason leave the condition alone;
    otherwise it is replaced (moved last), its transition time kept if the status is."""
    old = next((c for c in conditions if c.get("type") == kind), None)
    if old is not None and old.get("status") == status and old.get("reason") == reason:
        return
    stamp = rfc3339(now)
    since = (
        old.get("lastTransitionTime") if old is not None and old.get("status") == status else None
    )
    conditions[:] = [c for c in conditions if c.get("type") != kind]
    conditions.append(
        {
            "type": kind,
            "status": status,
            "lastUpdateTime": stamp,
            "lastTransitionTime": since or stamp,
            "reason": reason,
            "message": message,
        }
    )


def _get(status: Mapping[str, Any], name: str) -> int:
    return int(status.get(name, 0) or 0)


def complete(replicas: int, status: Mapping[str, Any], generation: int) -> bool:
    """``DeploymentComplete``: every replica updated and available, nothing old left, the
    latest spec seen."""
    return (
        _get(status, "updatedReplicas") == replicas
        and _get(status, "replicas") == replicas
        and _get(status, "availableReplicas") == replicas
        and _get(status, "observedGeneration") >= generation
    )


def _progressed(old: Mapping[str, Any], new: Mapping[str, Any]) -> bool:
    """``DeploymentProgressing``: more updated, ready or available pods, or fewer old ones."""
    return (
        _get(new, "updatedReplicas") > _get(old, "updatedReplicas")
        or _get(new, "readyReplicas") > _get(old, "readyReplicas")
        or _get(new, "availableReplicas") > _get(old, "availableReplicas")
        or _get(old, "replicas") - _get(old, "updatedReplicas")
        > _get(new, "replicas") - _get(new, "updatedReplicas")
    )


def rollout_status(
    obj: Mapping[str, Any],
    replicasets: Mapping[str, Mapping[str, Any]],
    new: str | None,
    replicas: int,
    unavailable: int,
    now: Instant,
    created: bool,
    paused: bool,
) -> tuple[Obj, Instant | None]:
    """The Deployment's status after this pass (its ReplicaSets as the pass leaves them, their
    statuses as last written), and when the progress deadline falls if it is still running."""
    old: Mapping[str, Any] = obj.get("status") or {}
    status: Obj = copy.deepcopy(dict(old))
    conditions: list[Obj] = list(status.get("conditions") or [])
    rs = list(replicasets.values())
    generation = int((obj.get("metadata") or {}).get("generation", 0) or 0)
    wanted = sum(int((r.get("spec") or {}).get("replicas", 0) or 0) for r in rs)
    counts = {
        "replicas": sum(_get(r.get("status") or {}, "replicas") for r in rs),
        "updatedReplicas": _get(replicasets[new].get("status") or {}, "replicas")
        if new is not None
        else 0,
        "readyReplicas": sum(_get(r.get("status") or {}, "readyReplicas") for r in rs),
        "availableReplicas": sum(_get(r.get("status") or {}, "availableReplicas") for r in rs),
    }
    counts["unavailableReplicas"] = max(0, wanted - counts["availableReplicas"])
    for key, value in counts.items():
        if value:
            status[key] = value
        else:
            status.pop(key, None)
    if generation:
        status["observedGeneration"] = generation

    if counts["availableReplicas"] >= replicas - min(unavailable, replicas):
        set_condition(
            conditions, "Available", "True", "MinimumReplicasAvailable",
            "Deployment has minimum availability.", now,
        )  # fmt: skip
    else:
        set_condition(
            conditions, "Available", "False", "MinimumReplicasUnavailable",
            "Deployment does not have minimum availability.", now,
        )  # fmt: skip

    # the new ReplicaSet's ReplicaFailure (its pods cannot be made) shows on the Deployment
    failure = next(
        (
            c
            for c in ((replicasets[new].get("status") or {}) if new is not None else {}).get(
                "conditions"
            )
            or ()
            if c.get("type") == "ReplicaFailure" and c.get("status") == "True"
        ),
        None,
    )
    if failure is not None:
        set_condition(
            conditions, "ReplicaFailure", "True", str(failure.get("reason", "FailedCreate")),
            str(failure.get("message", "")), now,
        )  # fmt: skip
    else:
        conditions[:] = [c for c in conditions if c.get("type") != "ReplicaFailure"]

    spec = obj.get("spec") or {}
    deadline = spec.get("progressDeadlineSeconds", 600)
    what = f'ReplicaSet "{new}"' if new is not None else f'Deployment "{_name(obj)}"'
    progressing = next((c for c in conditions if c.get("type") == "Progressing"), None)
    wake: Instant | None = None
    if paused:
        if progressing is None or progressing.get("reason") != "DeploymentPaused":
            set_condition(
                conditions, "Progressing", "Unknown", "DeploymentPaused", "Deployment is paused",
                now,
            )  # fmt: skip
    elif not isinstance(deadline, int) or deadline <= 0:
        conditions[:] = [c for c in conditions if c.get("type") != "Progressing"]
    else:
        if progressing is not None and progressing.get("reason") == "DeploymentPaused":
            set_condition(
                conditions, "Progressing", "Unknown", "DeploymentResumed",
                "Deployment is resumed", now,
            )  # fmt: skip
        if created and new is not None:
            set_condition(
                conditions, "Progressing", "True", "NewReplicaSetCreated",
                f'Created new replica set "{new}"', now,
            )  # fmt: skip
        elif new is not None and progressing is None:
            set_condition(
                conditions, "Progressing", "True", "FoundNewReplicaSet",
                f'Found new replica set "{new}"', now,
            )  # fmt: skip
        current = next((c for c in conditions if c.get("type") == "Progressing"), None)
        done = (
            current is not None
            and current.get("reason") == "NewReplicaSetAvailable"
            and status.get("replicas", 0) == status.get("updatedReplicas", 0)
        )
        if not done:
            if complete(replicas, status, generation):
                set_condition(
                    conditions, "Progressing", "True", "NewReplicaSetAvailable",
                    f"{what} has successfully progressed.", now,
                )  # fmt: skip
            elif _progressed(old, status):
                # moved last with a fresh lastUpdateTime: the deadline counts from now
                since = (
                    current.get("lastTransitionTime")
                    if current is not None and current.get("status") == "True"
                    else None
                )
                conditions[:] = [c for c in conditions if c.get("type") != "Progressing"]
                set_condition(
                    conditions, "Progressing", "True", "ReplicaSetUpdated",
                    f"{what} is progressing.", now,
                )  # fmt: skip
                if since:
                    conditions[-1]["lastTransitionTime"] = since
            elif current is not None and current.get("reason") != "ProgressDeadlineExceeded":
                from_ = parse_time(current.get("lastUpdateTime"))
                if from_ is not None and now > from_ + deadline * SECOND:
                    set_condition(
                        conditions, "Progressing", "False", "ProgressDeadlineExceeded",
                        f"{what} has timed out progressing.", now,
                    )  # fmt: skip
                elif from_ is not None:
                    wake = from_ + deadline * SECOND + SECOND
            current = next((c for c in conditions if c.get("type") == "Progressing"), None)
            if (
                wake is None
                and current is not None
                and current.get("status") == "True"
                and current.get("reason") != "NewReplicaSetAvailable"
            ):
                from_ = parse_time(current.get("lastUpdateTime"))
                if from_ is not None:
                    wake = from_ + deadline * SECOND + SECOND
    if conditions:
        status["conditions"] = conditions
    else:
        status.pop("conditions", None)
    return status, wake


def _name(obj: Mapping[str, Any]) -> str:
    return str((obj.get("metadata") or {}).get("name"))
