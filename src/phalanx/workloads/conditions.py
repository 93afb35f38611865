"""Status conditions, kept as Kubernetes keeps them: one per type, ``lastTransitionTime``
moving only when the status does."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from phalanx.domain.time import Instant
from phalanx.workloads.timestamps import rfc3339

__all__ = ["condition", "is_true", "set_condition"]


def condition(conditions: Iterable[Mapping[str, Any]], kind: str) -> Mapping[str, Any] | None:
    for c in conditions:
        if c.get("type") == kind:
            return c
    return None


def is_true(conditions: Iterable[Mapping[str, Any]], kind: str) -> bool:
    found = condition(conditions, kind)
    return found is not None and found.get("status") == "True"


def set_condition(
    conditions: list[dict[str, Any]],
    kind: str,
    status: bool,
    reason: str,
    message: str,
    now: Instant,
    *,
    probe_time: bool = False,
) -> None:
    """Set (or add, at the end) the condition ``kind``. ``probe_time``: the kind carries
    ``lastProbeTime`` too (a Job's conditions do; a pod's keep it null)."""
    value = "True" if status else "False"
    for c in conditions:
        if c.get("type") == kind:
            if c.get("status") != value:
                c["lastTransitionTime"] = rfc3339(now)
                if probe_time:
                    c["lastProbeTime"] = rfc3339(now)
            c.update(status=value, reason=reason, message=message)
            return
    new: dict[str, Any] = {"type": kind, "status": value, "reason": reason, "message": message}
    if probe_time:
        new["lastProbeTime"] = rfc3339(now)
    else:
        new["lastProbeTime"] = None
    new["lastTransitionTime"] = rfc3339(now)
    conditions.append(new)
