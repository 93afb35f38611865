"""Container reports from the node agents (``phalanx.protocol.agent.ContainerReport``) in
Kubernetes' terms (``ContainerStatus``'s ``state`` and ``lastState``, RFC 3339 times), as the
pod reconcilers see them (``phalanx.workloads.plan.ContainerView``)."""

from __future__ import annotations

from typing import Any

from phalanx.protocol.agent import ContainerReport, ContainerState
from phalanx.workloads.plan import ContainerView
from phalanx.workloads.timestamps import rfc3339

__all__ = ["container_state", "container_view"]


def container_state(state: ContainerState) -> dict[str, Any]:
    """``{"running": ...}``, ``{"waiting": ...}`` or ``{"terminated": ...}``."""
    if state.kind == "running":
        return {"running": {"startedAt": rfc3339(state.started_at)}}
    if state.kind == "waiting":
        waiting = {"reason": state.reason} if state.reason else {}
        if state.message:
            waiting["message"] = state.message
        return {"waiting": waiting}
    terminated: dict[str, Any] = {
        "exitCode": state.exit_code,
        "reason": state.reason or ("Completed" if state.exit_code == 0 else "Error"),
        "startedAt": rfc3339(state.started_at),
        "finishedAt": rfc3339(state.finished_at),
    }
    if state.signal:
        terminated["signal"] = state.signal
    if state.message:
        terminated["message"] = state.message
    return {"terminated": terminated}


def container_view(report: ContainerReport) -> ContainerView:
    return ContainerView(
        ready=report.ready,
        started=report.started,
        restart_count=report.restart_count,
        state=container_state(report.state),
        last_state=container_state(report.last_state) if report.last_state is not None else {},
        cpu_millicores=report.cpu_millicores,
        probe_message=report.probe_message,
    )
