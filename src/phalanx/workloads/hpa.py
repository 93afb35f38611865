"""The HorizontalPodAutoscaler controller's decision at one sync, pure: the spec, the target's
current scale, the metrics observed and the autoscaler's memory at ``now`` -> the scale to
write, the HPA's status and its Events (Kubernetes' ``podautoscaler/horizontal.go``,
``reconcileAutoscaler`` with behaviors, as documented).

1. A target scaled to 0 is left alone (``ScalingDisabled``); above ``maxReplicas`` or below
   ``minReplicas`` it is brought back within them.
2. Each metric asks for a replica count (``hpa_metrics``); the largest wins. If every metric
   fails, nothing changes; if some fail, the HPA does not scale down.
3. Stabilization: the recommendation is held between the lowest recommendation of the
   scale-up window and the highest of the scale-down window (every raw recommendation is
   remembered with its time).
4. Rate: a scale-up is limited to what the scale-up policies allow given the changes made in
   their periods (``selectPolicy`` Max: the most permissive, Min: the least, Disabled: none);
   likewise down; then ``minReplicas``/``maxReplicas``. An HPA without ``behavior`` takes the
   controller's older path instead: the highest recommendation of the downscale window, and
   at most max(2 x current, 4) per sync.
5. A change is written, remembered as a scale event, and reported as ``SuccessfulRescale``.

Steps 3-4 are ``phalanx.workloads.hpa_behavior``. The memory (``Memory``) is the
controller's in-process state, as upstream, lost on restart.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from phalanx.domain.time import Instant
from phalanx.workloads.conditions import set_condition
from phalanx.workloads.events import event
from phalanx.workloads.hpa_behavior import (
    Memory,
    normalize,
    normalize_legacy,
    remember_scale,
    scale_down_limit,
    scale_up_limit,
)
from phalanx.workloads.hpa_metrics import Observation, replicas_for
from phalanx.workloads.hpa_spec import HpaSpec
from phalanx.workloads.timestamps import rfc3339

__all__ = ["COMPONENT", "Decision", "Memory", "decide", "scale_down_limit", "scale_up_limit"]

COMPONENT = "horizontal-pod-autoscaler"


@dataclass(frozen=True)
class Decision:
    desired: int
    """The scale the target should have."""
    rescale: bool
    """Whether it differs from the current scale (the scale subresource is written)."""
    status: dict[str, Any]
    events: list[dict[str, Any]]
    reason: str = ""
    """Why the scale changes (``SuccessfulRescale``'s reason); "" when it does not."""


def decide(
    obj: Mapping[str, Any],
    spec: HpaSpec,
    current: int,
    seen: Observation,
    memory: Memory,
    now: Instant,
) -> Decision:
    """Step 1-5 of the module docstring. ``obj`` is the HPA (its status is carried over);
    ``memory`` is updated in place."""
    old = obj.get("status") or {}
    conditions: list[dict[str, Any]] = [dict(c) for c in old.get("conditions") or []]
    metrics_status: list[dict[str, Any]] = list(old.get("currentMetrics") or [])
    set_condition(
        conditions,
        "AbleToScale",
        True,
        "SucceededGetScale",
        "the HPA controller was able to get the target's current scale",
        now,
    )
    reason = ""
    warnings: list[dict[str, Any]] = []
    if current == 0 and spec.min_replicas != 0:
        desired = 0
        set_condition(
            conditions,
            "ScalingActive",
            False,
            "ScalingDisabled",
            "scaling is disabled since the replica count of the target is zero",
            now,
        )
    elif current > spec.max_replicas:
        desired, reason = spec.max_replicas, "Current number of replicas above Spec.MaxReplicas"
    elif current < spec.min_replicas:
        desired, reason = spec.min_replicas, "Current number of replicas below Spec.MinReplicas"
    else:
        proposal, metric_name, metrics_status = _metrics(
            obj, spec, current, seen, conditions, warnings, now
        )
        if proposal is None:
            return _unchanged(obj, current, metrics_status, conditions, warnings, now)
        if spec.behavior:
            desired = normalize(spec, memory, current, proposal, conditions, now)
        else:
            desired = normalize_legacy(spec, memory, current, proposal, conditions, now)
        if desired > current:
            reason = f"{metric_name} above target"
        elif desired < current:
            reason = "All metrics below target"
    rescale = desired != current
    events = warnings
    if rescale:
        remember_scale(memory, current, desired, now)
        set_condition(
            conditions,
            "AbleToScale",
            True,
            "SucceededRescale",
            f"the HPA controller was able to update the target scale to {desired}",
            now,
        )
        message = f"New size: {desired}; reason: {reason}"
        events.append(event(obj, "SuccessfulRescale", message, now, component=COMPONENT))
    _no_probe_time(conditions)
    status: dict[str, Any] = {
        "currentReplicas": current,
        "desiredReplicas": desired,
        "currentMetrics": metrics_status or None,
        "conditions": conditions,
    }
    generation = (obj.get("metadata") or {}).get("generation")
    if generation is not None:
        status["observedGeneration"] = generation
    last = rfc3339(now) if rescale else old.get("lastScaleTime")
    if last:
        status["lastScaleTime"] = last
    return Decision(
        desired,
        rescale,
        {k: v for k, v in status.items() if v is not None},
        events,
        reason if rescale else "",
    )


def _unchanged(
    obj: Mapping[str, Any],
    current: int,
    metrics_status: list[dict[str, Any]],
    conditions: list[dict[str, Any]],
    warnings: list[dict[str, Any]],
    now: Instant,
) -> Decision:
    """Metrics failed: the scale stays, the status says why (``FailedComputeMetricsReplicas``
    after each failed metric's own warning, the first error in the summary)."""
    old = obj.get("status") or {}
    _no_probe_time(conditions)
    status: dict[str, Any] = {
        "currentReplicas": current,
        "desiredReplicas": old.get("desiredReplicas", current),
        "conditions": conditions,
    }
    if metrics_status:
        status["currentMetrics"] = metrics_status
    if old.get("lastScaleTime"):
        status["lastScaleTime"] = old["lastScaleTime"]
    total = len((obj.get("spec") or {}).get("metrics") or []) or 1
    first = warnings[0]["message"] if warnings else ""
    message = f"invalid metrics ({len(warnings)} invalid out of {total}), first error is: {first}"
    summary = event(
        obj,
        "FailedComputeMetricsReplicas",
        message,
        now,
        seq=len(warnings),
        warning=True,
        component=COMPONENT,
    )
    return Decision(current, False, status, [*warnings, summary])


def _no_probe_time(conditions: list[dict[str, Any]]) -> None:
    # An HPA's conditions have no lastProbeTime (HorizontalPodAutoscalerCondition).
    for c in conditions:
        c.pop("lastProbeTime", None)


_FAILED_TO_GET = {
    "Resource": "failed to get {name} utilization",
    "Pods": "failed to get pods metric value",
    "Object": "failed to get object metric value",
}


def _metrics(
    obj: Mapping[str, Any],
    spec: HpaSpec,
    current: int,
    seen: Observation,
    conditions: list[dict[str, Any]],
    warnings: list[dict[str, Any]],
    now: Instant,
) -> tuple[int | None, str, list[dict[str, Any]]]:
    """(the largest replica count the metrics ask for, the metric that asked for it, the
    metrics' statuses); None when it cannot be trusted (``computeReplicasForMetrics``). Each
    metric that fails adds its warning to ``warnings``."""
    best: int | None = None
    best_name = ""
    statuses: list[dict[str, Any]] = []
    first_error: tuple[str, str] | None = None
    invalid = 0
    for metric in spec.metrics:
        result = replicas_for(metric, current, seen, now)
        if result.error:
            invalid += 1
            lead = _FAILED_TO_GET[metric.type].format(name=metric.name)
            if metric.type == "Resource" and metric.target.type == "AverageValue":
                lead = f"failed to get {metric.name} usage"
            error = f"{lead}: {result.error}"
            first_error = first_error or (result.reason, error)
            warnings.append(
                event(
                    obj,
                    result.reason,
                    error,
                    now,
                    seq=len(warnings),
                    warning=True,
                    component=COMPONENT,
                )
            )
            statuses.append({"type": ""})
            continue
        statuses.append(dict(result.status or {}))
        if best is None or result.replicas > best:
            best = result.replicas
            best_name = _metric_name(metric.type, metric.name)
    if first_error is not None and (best is None or best < current):
        reason, message = first_error
        set_condition(
            conditions,
            "ScalingActive",
            False,
            reason,
            f"the HPA was unable to compute the replica count: {message}",
            now,
        )
        return None, "", statuses
    set_condition(
        conditions,
        "ScalingActive",
        True,
        "ValidMetricFound",
        f"the HPA was able to successfully calculate a replica count from {best_name}",
        now,
    )
    return best, best_name, statuses


def _metric_name(kind: str, name: str) -> str:
    # As upstream names them in conditions and events ("cpu resource utilization ...").
    if kind == "Resource":
        return f"{name} resource utilization (percentage of request)"
    if kind == "Pods":
        return f"pods metric {name}"
    return f"{kind} metric {name}"
