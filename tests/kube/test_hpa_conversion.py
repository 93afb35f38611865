"""HorizontalPodAutoscaler autoscaling/v1 <-> v2 conversion (kubectl autoscale posts v1) and
the TARGETS column of ``kubectl get hpa``."""

from __future__ import annotations

import copy
from typing import Any

from phalanx.kube.conversion import convert
from phalanx.kube.hpa_targets import targets

CPU = {
    "type": "Resource",
    "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 50}},
}
INFLIGHT = {
    "type": "Object",
    "object": {
        "describedObject": {"apiVersion": "v1", "kind": "Service", "name": "web"},
        "metric": {"name": "requests_in_flight"},
        "target": {"type": "Value", "value": "10"},
    },
}


def v2(metrics: list[dict[str, Any]], status: dict[str, Any] | None = None) -> dict[str, Any]:
    obj: dict[str, Any] = {
        "apiVersion": "autoscaling/v2",
        "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": "web", "namespace": "default"},
        "spec": {
            "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
            "minReplicas": 1,
            "maxReplicas": 10,
            "metrics": metrics,
        },
    }
    if status is not None:
        obj["status"] = status
    return obj


def test_cpu_only_is_plain_v1() -> None:
    status = {
        "currentReplicas": 2,
        "desiredReplicas": 2,
        "currentMetrics": [
            {"type": "Resource", "resource": {"name": "cpu", "current": {"averageUtilization": 12}}}
        ],
    }
    old = convert(v2([CPU], status), "autoscaling/v1")
    assert old["apiVersion"] == "autoscaling/v1"
    assert old["spec"]["targetCPUUtilizationPercentage"] == 50
    assert "metrics" not in old["spec"]
    assert old["status"]["currentCPUUtilizationPercentage"] == 12
    assert convert(old, "autoscaling/v2")["spec"]["metrics"] == [CPU]


def test_round_trip_through_v1_loses_nothing() -> None:
    conditions = [{"type": "AbleToScale", "status": "True", "reason": "ReadyForNewScale"}]
    status = {
        "currentReplicas": 3,
        "desiredReplicas": 4,
        "conditions": conditions,
        "currentMetrics": [
            {
                "type": "Resource",
                "resource": {"name": "cpu", "current": {"averageUtilization": 70}},
            },
            {
                "type": "Object",
                "object": {"metric": {"name": "requests_in_flight"}, "current": {"value": "31"}},
            },
        ],
    }
    original = v2([CPU, INFLIGHT], status)
    original["spec"]["behavior"] = {"scaleDown": {"stabilizationWindowSeconds": 60}}
    kept = copy.deepcopy(original)
    old = convert(original, "autoscaling/v1")
    assert original == kept  # the stored object is not touched
    notes = old["metadata"]["annotations"]
    assert set(notes) == {
        "autoscaling.alpha.kubernetes.io/metrics",
        "autoscaling.alpha.kubernetes.io/behavior",
        "autoscaling.alpha.kubernetes.io/conditions",
        "autoscaling.alpha.kubernetes.io/current-metrics",
    }
    assert convert(old, "autoscaling/v2") == original


def test_other_kinds_change_only_api_version() -> None:
    lq = {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue", "spec": {"x": 1}}
    assert convert(lq, "kueue.x-k8s.io/v1beta1") == {**lq, "apiVersion": "kueue.x-k8s.io/v1beta1"}
    assert convert(lq, "kueue.x-k8s.io/v1beta2") is lq


def test_targets_column() -> None:
    assert targets(v2([CPU]), 0) == "cpu: <unknown>/50%"
    status = {
        "currentMetrics": [
            {
                "type": "Resource",
                "resource": {"name": "cpu", "current": {"averageUtilization": 12}},
            },
            {"type": "Object", "object": {"current": {"value": "3"}}},
        ]
    }
    assert targets(v2([CPU, INFLIGHT], status), 0) == "cpu: 12%/50%, 3/10"
    pods = {
        "type": "Pods",
        "pods": {
            "metric": {"name": "requests_per_second"},
            "target": {"type": "AverageValue", "averageValue": "5"},
        },
    }
    assert targets(v2([CPU, INFLIGHT, pods]), 0) == ("cpu: <unknown>/50%, <unknown>/10 + 1 more...")
    avg = copy.deepcopy(INFLIGHT)
    avg["object"]["target"] = {"type": "AverageValue", "averageValue": "2"}
    assert targets(v2([avg]), 0) == "<unknown>/2 (avg)"
    assert targets(v2([]), 0) == "<none>"
    # A v1 object reads the same.
    assert targets(convert(v2([CPU]), "autoscaling/v1"), 0) == "cpu: <unknown>/50%"
