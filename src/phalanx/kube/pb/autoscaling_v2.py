"""autoscaling/v2's HorizontalPodAutoscaler, the version Phalanx's API serves. See declare.py."""

from __future__ import annotations

from phalanx.kube.pb.declare import I32, I64, STR, F, L, message
from phalanx.kube.pb.meta import LABEL_SELECTOR, OBJECT_META, QUANTITY, TIME

API_VERSION = "autoscaling/v2"
KINDS = frozenset({"HorizontalPodAutoscaler"})

_P = "autoscalingv2."
_REF = _P + "CrossVersionObjectReference"
_ID = _P + "MetricIdentifier"
_TARGET = _P + "MetricTarget"
_VALUE = _P + "MetricValueStatus"
_RULES = _P + "HPAScalingRules"

MESSAGES = (
    message(_P + "HorizontalPodAutoscaler", F(1, "metadata", OBJECT_META, "o"),
            F(2, "spec", _P + "HorizontalPodAutoscalerSpec", "o"),
            F(3, "status", _P + "HorizontalPodAutoscalerStatus", "o")),
    message(_P + "HorizontalPodAutoscalerSpec", F(1, "scaleTargetRef", _REF),
            F(2, "minReplicas", I32, "op"), F(3, "maxReplicas", I32),
            L(4, "metrics", _P + "MetricSpec", "o"),
            F(5, "behavior", _P + "HorizontalPodAutoscalerBehavior", "op")),
    message(_REF, F(1, "kind", STR), F(2, "name", STR), F(3, "apiVersion", STR, "o")),
    message(_P + "HorizontalPodAutoscalerBehavior", F(1, "scaleUp", _RULES, "op"),
            F(2, "scaleDown", _RULES, "op")),
    message(_RULES, F(3, "stabilizationWindowSeconds", I32, "op"),
            F(1, "selectPolicy", STR, "op"), L(2, "policies", _P + "HPAScalingPolicy", "o")),
    message(_P + "HPAScalingPolicy", F(1, "type", STR), F(2, "value", I32),
            F(3, "periodSeconds", I32)),
    message(_P + "MetricSpec", F(1, "type", STR),
            F(2, "object", _P + "ObjectMetricSource", "op"),
            F(3, "pods", _P + "PodsMetricSource", "op"),
            F(4, "resource", _P + "ResourceMetricSource", "op"),
            F(7, "containerResource", _P + "ContainerResourceMetricSource", "op"),
            F(5, "external", _P + "ExternalMetricSource", "op")),
    message(_P + "ObjectMetricSource", F(1, "describedObject", _REF), F(2, "target", _TARGET),
            F(3, "metric", _ID)),
    message(_P + "PodsMetricSource", F(1, "metric", _ID), F(2, "target", _TARGET)),
    message(_P + "ResourceMetricSource", F(1, "name", STR), F(2, "target", _TARGET)),
    message(_P + "ContainerResourceMetricSource", F(1, "name", STR), F(2, "target", _TARGET),
            F(3, "container", STR)),
    message(_P + "ExternalMetricSource", F(1, "metric", _ID), F(2, "target", _TARGET)),
    message(_ID, F(1, "name", STR), F(2, "selector", LABEL_SELECTOR, "op")),
    message(_TARGET, F(1, "type", STR), F(2, "value", QUANTITY, "op"),
            F(3, "averageValue", QUANTITY, "op"), F(4, "averageUtilization", I32, "op")),
    message(
        _P + "HorizontalPodAutoscalerStatus",
        F(1, "observedGeneration", I64, "op"), F(2, "lastScaleTime", TIME, "op"),
        F(3, "currentReplicas", I32, "o"), F(4, "desiredReplicas", I32),
        L(5, "currentMetrics", _P + "MetricStatus"),
        L(6, "conditions", _P + "HorizontalPodAutoscalerCondition", "o"),
    ),
    message(_P + "HorizontalPodAutoscalerCondition", F(1, "type", STR), F(2, "status", STR),
            F(3, "lastTransitionTime", TIME, "o"), F(4, "reason", STR, "o"),
            F(5, "message", STR, "o")),
    message(_P + "MetricStatus", F(1, "type", STR),
            F(2, "object", _P + "ObjectMetricStatus", "op"),
            F(3, "pods", _P + "PodsMetricStatus", "op"),
            F(4, "resource", _P + "ResourceMetricStatus", "op"),
            F(7, "containerResource", _P + "ContainerResourceMetricStatus", "op"),
            F(5, "external", _P + "ExternalMetricStatus", "op")),
    message(_P + "ObjectMetricStatus", F(1, "metric", _ID), F(2, "current", _VALUE),
            F(3, "describedObject", _REF)),
    message(_P + "PodsMetricStatus", F(1, "metric", _ID), F(2, "current", _VALUE)),
    message(_P + "ResourceMetricStatus", F(1, "name", STR), F(2, "current", _VALUE)),
    message(_P + "ContainerResourceMetricStatus", F(1, "name", STR), F(2, "current", _VALUE),
            F(3, "container", STR)),
    message(_P + "ExternalMetricStatus", F(1, "metric", _ID), F(2, "current", _VALUE)),
    message(_VALUE, F(1, "value", QUANTITY, "op"), F(2, "averageValue", QUANTITY, "op"),
            F(3, "averageUtilization", I32, "op")),
)
