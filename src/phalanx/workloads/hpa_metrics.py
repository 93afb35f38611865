"""The HPA's replica calculator: one metric's samples -> the replica count that metric asks for
(Kubernetes' ``podautoscaler/replica_calculator.go``, its documented algorithm):

    desired = ceil(current * currentMetricValue / desiredMetricValue)

skipped while the ratio is within the tolerance (0.1). Pods being deleted or Failed are
ignored; Pending pods and, for CPU, pods still initializing (``Ready`` not yet true, or their
first sample taken before they became ready, within 5 min of their start; or never ready, with
their readiness reported within 30 s of their start) are set aside; pods without a sample are
"missing". When some are set aside or missing, the ratio is computed again assuming the
missing use 100 % of the target on a scale-down and 0 % on a scale-up, and the set-aside use 0 %
on a scale-up; if that reverses the direction or lands within the tolerance, nothing changes.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

from phalanx.domain.quantity import format_quantity
from phalanx.domain.time import MINUTE, SECOND, Duration, Instant
from phalanx.workloads.hpa_spec import MetricSpec

__all__ = [
    "CPU_INITIALIZATION_PERIOD",
    "INITIAL_READINESS_DELAY",
    "TOLERANCE",
    "MetricResult",
    "Observation",
    "PodSample",
    "Sample",
    "replicas_for",
]

TOLERANCE = 0.1
"""``--horizontal-pod-autoscaler-tolerance``."""
CPU_INITIALIZATION_PERIOD: Duration = 5 * MINUTE
"""``--horizontal-pod-autoscaler-cpu-initialization-period``."""
INITIAL_READINESS_DELAY: Duration = 30 * SECOND
"""``--horizontal-pod-autoscaler-initial-readiness-delay``."""


@dataclass(frozen=True)
class PodSample:
    """One pod the target selects, as the calculator sees it."""

    name: str
    phase: str = "Running"
    deleting: bool = False
    ready: bool | None = True
    """The ``Ready`` condition's status; None when the pod has none."""
    ready_changed: Instant | None = None
    """The ``Ready`` condition's ``lastTransitionTime``."""
    started: Instant | None = 0
    """``status.startTime``."""
    cpu_request: int = 0
    """The sum of its containers' cpu requests, in millicores (0: none)."""


@dataclass(frozen=True)
class Sample:
    """A metric value (thousandths of its unit: millicores, milli-requests) taken at ``at``
    over the ``window`` before it."""

    value: int
    at: Instant = 0
    window: Duration = 0


@dataclass(frozen=True)
class Observation:
    """What the metrics sources said at one sync: ``pod_metrics[metric][pod]`` (``cpu`` in
    millicores, or a router metric per pod) and ``object_metrics[(kind, name, metric)]``."""

    pods: tuple[PodSample, ...]
    pod_metrics: Mapping[str, Mapping[str, Sample]]
    object_metrics: Mapping[tuple[str, str, str], int]


@dataclass(frozen=True)
class MetricResult:
    """One metric's answer: the replicas it asks for, and its ``MetricStatus``; or, when it
    cannot be computed, ``error`` with the condition ``reason`` (``FailedGetResourceMetric``,
    ...)."""

    replicas: int
    status: dict[str, object] | None
    error: str = ""
    reason: str = ""


def replicas_for(metric: MetricSpec, current: int, seen: Observation, now: Instant) -> MetricResult:
    """The replica count ``metric`` asks for, ``current`` being the target's scale."""
    if metric.type == "Resource":
        return _resource(metric, current, seen, now)
    if metric.type == "Pods":
        return _pods(metric, current, seen)
    return _object(metric, current, seen)


def _failed(reason: str, message: str) -> MetricResult:
    return MetricResult(0, None, message, reason)


def _group(
    seen: Observation, samples: Mapping[str, Sample], cpu: bool, now: Instant
) -> tuple[dict[str, Sample], set[str], set[str]]:
    """(usable samples, unready pods, missing pods), as ``groupPods``."""
    usable: dict[str, Sample] = {}
    unready: set[str] = set()
    missing: set[str] = set()
    for pod in seen.pods:
        if pod.deleting or pod.phase == "Failed":
            continue
        if pod.phase == "Pending":
            unready.add(pod.name)
            continue
        sample = samples.get(pod.name)
        if sample is None:
            missing.add(pod.name)
            continue
        if cpu and _initializing(pod, sample, now):
            unready.add(pod.name)
            continue
        usable[pod.name] = sample
    return usable, unready, missing


def _initializing(pod: PodSample, sample: Sample, now: Instant) -> bool:
    if pod.ready is None or pod.started is None:
        return True
    changed = pod.ready_changed if pod.ready_changed is not None else pod.started
    if pod.started + CPU_INITIALIZATION_PERIOD > now:
        # Within the initialization period: not ready yet, or its sample may predate readiness.
        return pod.ready is False or sample.at < changed + sample.window
    # Later: only a pod that never became ready is set aside.
    return pod.ready is False and pod.started + INITIAL_READINESS_DELAY > changed


def _resource(metric: MetricSpec, current: int, seen: Observation, now: Instant) -> MetricResult:
    samples = seen.pod_metrics.get("cpu") or {}
    pods = [p for p in seen.pods if not (p.deleting or p.phase == "Failed")]
    if not seen.pods:
        return _failed(
            "FailedGetResourceMetric",
            "no pods returned by selector while calculating replica count",
        )
    usable, unready, missing = _group(seen, samples, True, now)
    if not usable:
        return _failed(
            "FailedGetResourceMetric",
            "did not receive metrics for targeted pods (pods might be unready)",
        )
    requests = {p.name: p.cpu_request for p in pods}
    if metric.target.type == "AverageValue":
        return _plain(
            metric, current, usable, unready, missing, metric.target.milli, cpu_status=True
        )
    if any(requests.get(name, 0) <= 0 for name in usable):
        return _failed(
            "FailedGetResourceMetric",
            "missing request for cpu in container of pod",
        )
    target = metric.target.utilization

    def ratio(values: Mapping[str, int]) -> tuple[float, int, int]:
        total = sum(values.values())
        asked = sum(requests[name] for name in values)
        utilization = total * 100 // asked
        return utilization / target, utilization, total // len(values)

    values = {name: s.value for name, s in usable.items()}
    usage, utilization, average = ratio(values)
    status: dict[str, object] = {
        "type": "Resource",
        "resource": {
            "name": "cpu",
            "current": {
                "averageUtilization": utilization,
                "averageValue": format_quantity(average),
            },
        },
    }
    scale_up_with_unready = bool(unready) and usage > 1.0
    if not scale_up_with_unready and not missing:
        if abs(1.0 - usage) <= TOLERANCE:
            return MetricResult(current, status)
        return MetricResult(math.ceil(usage * len(values)), status)
    if missing:
        if usage < 1.0:
            fallback = max(100, target)
            values.update({n: requests[n] * fallback // 100 for n in missing})
        elif usage > 1.0:
            values.update(dict.fromkeys(missing, 0))
    if scale_up_with_unready:
        values.update(dict.fromkeys(unready, 0))
    new_usage = ratio(values)[0]
    return MetricResult(_settle(current, usage, new_usage, len(values)), status)


def _settle(current: int, usage: float, new_usage: float, count: int) -> int:
    """The second pass's answer: no change when the fill-in reverses the direction or lands
    within the tolerance."""
    if abs(1.0 - new_usage) <= TOLERANCE or (usage < 1.0 < new_usage) or (usage > 1.0 > new_usage):
        return current
    replicas = math.ceil(new_usage * count)
    if (new_usage < 1.0 and replicas > current) or (new_usage > 1.0 and replicas < current):
        return current
    return replicas


def _plain(
    metric: MetricSpec,
    current: int,
    usable: Mapping[str, Sample],
    unready: set[str],
    missing: set[str],
    target: int,
    *,
    cpu_status: bool = False,
) -> MetricResult:
    """A per-pod average against an ``AverageValue`` (``calcPlainMetricReplicas``)."""
    values = {name: s.value for name, s in usable.items()}

    def ratio(vals: Mapping[str, int]) -> tuple[float, int]:
        total = sum(vals.values())
        return total / (target * len(vals)), total // len(vals)

    usage, average = ratio(values)
    current_value = {"averageValue": format_quantity(average)}
    status: dict[str, object]
    if cpu_status:
        status = {"type": "Resource", "resource": {"name": "cpu", "current": current_value}}
    else:
        status = {
            "type": "Pods",
            "pods": {"metric": {"name": metric.name}, "current": current_value},
        }
    scale_up_with_unready = bool(unready) and usage > 1.0
    if not scale_up_with_unready and not missing:
        if abs(1.0 - usage) <= TOLERANCE:
            return MetricResult(current, status)
        return MetricResult(math.ceil(usage * len(values)), status)
    if missing:
        if usage < 1.0:
            values.update(dict.fromkeys(missing, target))
        elif usage > 1.0:
            values.update(dict.fromkeys(missing, 0))
    if scale_up_with_unready:
        values.update(dict.fromkeys(unready, 0))
    return MetricResult(_settle(current, usage, ratio(values)[0], len(values)), status)


def _pods(metric: MetricSpec, current: int, seen: Observation) -> MetricResult:
    samples = seen.pod_metrics.get(metric.name) or {}
    if not seen.pods:
        return _failed(
            "FailedGetPodsMetric", "no pods returned by selector while calculating replica count"
        )
    usable, unready, missing = _group(seen, samples, False, 0)
    if not usable:
        return _failed(
            "FailedGetPodsMetric", f"unable to get metric {metric.name}: no metrics returned"
        )
    return _plain(metric, current, usable, unready, missing, metric.target.milli)


def _object(metric: MetricSpec, current: int, seen: Observation) -> MetricResult:
    described = metric.described
    assert described is not None  # parse_hpa gives every Object metric its object
    value = seen.object_metrics.get((described.kind, described.name, metric.name))
    if value is None:
        return _failed(
            "FailedGetObjectMetric",
            f"unable to get metric {metric.name}: {described.kind} on {described.name}: "
            "no metrics returned",
        )
    ref = {"kind": described.kind, "name": described.name}
    if described.api_version:
        ref["apiVersion"] = described.api_version
    target = metric.target.milli
    if metric.target.type == "AverageValue":
        # GetObjectPerPodMetricReplicas: the value shared over the current replicas.
        replicas = current
        usage = value / (target * max(current, 1))
        if abs(1.0 - usage) > TOLERANCE:
            replicas = math.ceil(value / target)
        current_value = {"averageValue": format_quantity(math.ceil(value / max(current, 1)))}
    else:
        usage = value / target
        ready = sum(1 for p in seen.pods if p.phase == "Running" and p.ready and not p.deleting)
        if current == 0:
            replicas = math.ceil(usage)
        elif abs(1.0 - usage) <= TOLERANCE:
            replicas = current
        else:
            replicas = math.ceil(usage * ready)
        current_value = {"value": format_quantity(value)}
    status: dict[str, object] = {
        "type": "Object",
        "object": {
            "describedObject": ref,
            "metric": {"name": metric.name},
            "current": current_value,
        },
    }
    return MetricResult(replicas, status)
