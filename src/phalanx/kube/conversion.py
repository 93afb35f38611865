"""Objects read or written through a version other than the stored one.

Most kinds served in several versions have the same fields in each: only ``apiVersion``
changes. Kueue's renames between ``v1beta1`` (and Cohort's ``v1alpha1``) and ``v1beta2``, the
ones its schemas here declare (``phalanx.kube.openapi.custom``), are converted both ways:
ClusterQueue ``spec.cohort`` is ``spec.cohortName``, Cohort ``spec.parent`` is
``spec.parentName`` (a ClusterQueue written as ``v1beta1`` reads with ``cohortName`` as
``v1beta2``, and back). A HorizontalPodAutoscaler is kept as ``autoscaling/v2`` and converted
field by field to and from ``autoscaling/v1`` as kube-apiserver converts it
(``pkg/apis/autoscaling/v1/conversion.go``): v1's ``targetCPUUtilizationPercentage`` is the v2
cpu ``Utilization`` metric; what v1 cannot say (other metrics, ``behavior``, conditions,
current metrics) travels in ``autoscaling.alpha.kubernetes.io/*`` annotations, so a
round trip through v1 loses nothing.
"""

from __future__ import annotations

import copy
import json
from typing import Any

__all__ = ["convert"]

_METRICS = "autoscaling.alpha.kubernetes.io/metrics"
_BEHAVIOR = "autoscaling.alpha.kubernetes.io/behavior"
_CONDITIONS = "autoscaling.alpha.kubernetes.io/conditions"
_CURRENT = "autoscaling.alpha.kubernetes.io/current-metrics"
_HPA_V1 = "autoscaling/v1"
_HPA_V2 = "autoscaling/v2"
_KUEUE = "kueue.x-k8s.io"
_KUEUE_NEW = "v1beta2"
_KUEUE_RENAMES: dict[str, tuple[str, str]] = {
    # kind: (field in v1beta1/v1alpha1, field in v1beta2), under ``spec``
    "ClusterQueue": ("cohort", "cohortName"),
    "Cohort": ("parent", "parentName"),
}


def convert(obj: dict[str, Any], api_version: str) -> dict[str, Any]:
    """``obj`` as ``api_version`` has it (``obj`` itself when it already is; else a copy)."""
    if obj.get("apiVersion") == api_version:
        return obj
    if obj.get("kind") == "HorizontalPodAutoscaler":
        if api_version == _HPA_V1:
            return _hpa_to_v1(obj)
        if api_version == _HPA_V2:
            return _hpa_to_v2(obj)
    return _kueue({**obj, "apiVersion": api_version})


def _kueue(shown: dict[str, Any]) -> dict[str, Any]:
    """``shown`` (a shallow copy, already at its new ``apiVersion``) with Kueue's renamed
    fields under the new version's names (``spec`` copied where one moves)."""
    group, _, version = str(shown.get("apiVersion")).rpartition("/")
    rename = _KUEUE_RENAMES.get(str(shown.get("kind"))) if group == _KUEUE else None
    spec = shown.get("spec")
    if rename is None or not isinstance(spec, dict):
        return shown
    old, new = rename
    before, after = (old, new) if version == _KUEUE_NEW else (new, old)
    if before in spec:
        moved = {k: v for k, v in spec.items() if k != before}
        moved[after] = spec[before]
        shown["spec"] = moved
    return shown


def _cpu_utilization(metric: Any) -> int | None:
    if not isinstance(metric, dict) or metric.get("type") != "Resource":
        return None
    resource = metric.get("resource") or {}
    target = resource.get("target") or {}
    if resource.get("name") == "cpu" and target.get("type") == "Utilization":
        value = target.get("averageUtilization")
        return value if isinstance(value, int) else None
    return None


def _hpa_to_v1(obj: dict[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(obj)
    out["apiVersion"] = _HPA_V1
    notes = dict((out.setdefault("metadata", {}).get("annotations")) or {})
    spec = out.get("spec")
    if isinstance(spec, dict):
        rest = []
        for metric in spec.pop("metrics", None) or []:
            cpu = _cpu_utilization(metric)
            if cpu is not None and "targetCPUUtilizationPercentage" not in spec:
                spec["targetCPUUtilizationPercentage"] = cpu
            else:
                rest.append(metric)
        if rest:
            notes[_METRICS] = json.dumps(rest, separators=(",", ":"))
        behavior = spec.pop("behavior", None)
        if behavior:
            notes[_BEHAVIOR] = json.dumps(behavior, separators=(",", ":"))
    status = out.get("status")
    if isinstance(status, dict):
        current = status.pop("currentMetrics", None) or []
        for metric in current:
            resource = (metric or {}).get("resource") or {}
            value = (resource.get("current") or {}).get("averageUtilization")
            if resource.get("name") == "cpu" and isinstance(value, int):
                status["currentCPUUtilizationPercentage"] = value
        if current:
            notes[_CURRENT] = json.dumps(current, separators=(",", ":"))
        conditions = status.pop("conditions", None)
        if conditions:
            notes[_CONDITIONS] = json.dumps(conditions, separators=(",", ":"))
    if notes:
        out["metadata"]["annotations"] = notes
    return out


def _loads(notes: dict[str, Any], key: str) -> Any:
    text = notes.pop(key, None)
    if not isinstance(text, str):
        return None
    try:
        return json.loads(text)
    except ValueError:
        return None  # an annotation a client mangled: dropped, as upstream ignores it


def _hpa_to_v2(obj: dict[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(obj)
    out["apiVersion"] = _HPA_V2
    meta = out.setdefault("metadata", {})
    notes = dict(meta.get("annotations") or {})
    spec = out.get("spec")
    if isinstance(spec, dict):
        metrics: list[Any] = []
        cpu = spec.pop("targetCPUUtilizationPercentage", None)
        if cpu is not None:
            target = {"type": "Utilization", "averageUtilization": cpu}
            metrics.append({"type": "Resource", "resource": {"name": "cpu", "target": target}})
        extra = _loads(notes, _METRICS)
        if isinstance(extra, list):
            metrics.extend(extra)
        if metrics:
            spec["metrics"] = metrics
        behavior = _loads(notes, _BEHAVIOR)
        if isinstance(behavior, dict):
            spec["behavior"] = behavior
    status = out.get("status")
    current = _loads(notes, _CURRENT)
    conditions = _loads(notes, _CONDITIONS)
    if isinstance(status, dict):
        cpu_now = status.pop("currentCPUUtilizationPercentage", None)
        if isinstance(current, list):
            status["currentMetrics"] = current
        elif cpu_now is not None:
            status["currentMetrics"] = [
                {
                    "type": "Resource",
                    "resource": {"name": "cpu", "current": {"averageUtilization": cpu_now}},
                }
            ]
        if isinstance(conditions, list):
            status["conditions"] = conditions
    if notes:
        meta["annotations"] = notes
    else:
        meta.pop("annotations", None)
    return out
