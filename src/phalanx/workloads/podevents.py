"""The kubelet's events about a container that restarts in place or is probed, as a pod's
status moves (``kubectl describe pod``'s Events):

- ``Unhealthy`` (Warning): ``Readiness probe failed: ...`` when the pod goes not-ready, and
  ``Liveness probe failed: ...`` (or Startup) when a probe kills the container;
- ``Killing`` (Normal): ``Container NAME failed liveness probe, will be restarted``;
- ``BackOff`` (Warning): ``Back-off restarting failed container NAME in pod POD_NS(UID)``
  each time the container enters CrashLoopBackOff;
- ``Started`` (Normal): at each restart in place.

Events are derived from the change between two statuses (the last probe failure's words come
from the agent's report), so a status written once yields its events once.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from phalanx.domain.time import Instant
from phalanx.workloads.conditions import condition
from phalanx.workloads.events import event

__all__ = ["container_events"]


def _first(status: Mapping[str, Any]) -> Mapping[str, Any]:
    statuses = status.get("containerStatuses") or [{}]
    first: Mapping[str, Any] = statuses[0]
    return first


def _ready(status: Mapping[str, Any]) -> bool:
    found = condition(status.get("conditions") or (), "Ready")
    return found is not None and found.get("status") == "True"


def container_events(
    pod: Mapping[str, Any],
    new: Mapping[str, Any],
    probe_message: str,
    now: Instant,
    seq: int = 0,
) -> list[dict[str, Any]]:
    """The kubelet's events as ``pod`` becomes ``new`` (module docstring)."""
    old_status = pod.get("status") or {}
    new_status = new.get("status") or {}
    if new_status.get("phase") != "Running":
        return []
    before, after = _first(old_status), _first(new_status)
    name = str(after.get("name", ""))
    meta = pod.get("metadata") or {}
    out: list[dict[str, Any]] = []

    def add(reason: str, message: str, *, warning: bool = False) -> None:
        out.append(
            event(
                pod, reason, message, now, seq=seq + len(out), warning=warning, component="kubelet"
            )
        )

    killed = (after.get("lastState") or {}).get("terminated") or {}
    was = (before.get("lastState") or {}).get("terminated") or {}
    if killed and killed != was and "probe, will be restarted" in str(killed.get("message")):
        kind = "liveness" if "liveness" in str(killed.get("message")) else "startup"
        if probe_message.lower().startswith(kind):
            add("Unhealthy", probe_message, warning=True)
        add("Killing", f"Container {name} failed {kind} probe, will be restarted")
    elif (
        _ready(old_status)
        and not _ready(new_status)
        and "running" in (after.get("state") or {})
        and probe_message.startswith("Readiness")
    ):
        add("Unhealthy", probe_message, warning=True)
    waiting = (after.get("state") or {}).get("waiting") or {}
    restarts = int(after.get("restartCount", 0))
    restarted = restarts > int(before.get("restartCount", 0))
    if waiting.get("reason") == "CrashLoopBackOff" and (
        restarted or (before.get("state") or {}).get("waiting") != waiting
    ):
        pod_name = f"{meta.get('name')}_{meta.get('namespace')}({meta.get('uid', '')})"
        add(
            "BackOff",
            f"Back-off restarting failed container {name} in pod {pod_name}",
            warning=True,
        )
    now_running = "running" in (after.get("state") or {})
    if now_running and restarts and before and "running" not in (before.get("state") or {}):
        add("Started", f"Started container {name}")
    return out
