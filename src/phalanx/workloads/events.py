"""``v1`` Events, as the controllers that made the decisions would record them."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from phalanx.domain.time import Instant
from phalanx.workloads.timestamps import rfc3339

__all__ = ["event", "reference"]


def reference(obj: Mapping[str, Any]) -> dict[str, Any]:
    """An ``ObjectReference`` to ``obj`` (an Event's ``involvedObject``)."""
    meta = obj.get("metadata") or {}
    ref = {
        "apiVersion": obj.get("apiVersion", "v1"),
        "kind": obj.get("kind", ""),
        "name": meta.get("name", ""),
        "namespace": meta.get("namespace", "default"),
    }
    if meta.get("uid"):
        ref["uid"] = meta["uid"]
    if meta.get("resourceVersion"):
        ref["resourceVersion"] = meta["resourceVersion"]
    return ref


def event(
    about: Mapping[str, Any],
    reason: str,
    message: str,
    now: Instant,
    *,
    seq: int = 0,
    warning: bool = False,
    component: str = "job-controller",
) -> dict[str, Any]:
    """An Event about ``about``. Its name is the object's and the time in hex nanoseconds, as
    the event recorder makes it; ``seq`` keeps a plan's events apart."""
    ref = reference(about)
    stamp = rfc3339(now)
    return {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {
            "name": f"{ref['name']}.{now * 1_000_000 + seq:x}",
            "namespace": ref["namespace"],
        },
        "involvedObject": ref,
        "reason": reason,
        "message": message,
        "type": "Warning" if warning else "Normal",
        "source": {"component": component},
        "reportingComponent": component,
        "reportingInstance": "",
        "firstTimestamp": stamp,
        "lastTimestamp": stamp,
        "count": 1,
    }


def creation_failed(
    about: Mapping[str, Any], message: str, now: Instant, seq: int, component: str
) -> dict[str, Any]:
    """The warning a workload controller records when its pods cannot be made
    (``FailedCreatePod``): the request they carry is one Phalanx cannot run."""
    return event(about, "FailedCreatePod", message, now, seq=seq, warning=True, component=component)
