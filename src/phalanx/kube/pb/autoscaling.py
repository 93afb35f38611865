"""autoscaling/v1's HorizontalPodAutoscaler (`kubectl autoscale`) and Scale. See declare.py."""

from __future__ import annotations

from phalanx.kube.pb.declare import I32, I64, STR, F, message
from phalanx.kube.pb.meta import OBJECT_META, TIME

API_VERSION = "autoscaling/v1"
KINDS = frozenset({"HorizontalPodAutoscaler", "Scale"})

MESSAGES = (
    message("autoscaling.HorizontalPodAutoscaler", F(1, "metadata", OBJECT_META, "o"),
            F(2, "spec", "autoscaling.HorizontalPodAutoscalerSpec", "o"),
            F(3, "status", "autoscaling.HorizontalPodAutoscalerStatus", "o")),
    message("autoscaling.HorizontalPodAutoscalerSpec",
            F(1, "scaleTargetRef", "autoscaling.CrossVersionObjectReference"),
            F(2, "minReplicas", I32, "op"), F(3, "maxReplicas", I32),
            F(4, "targetCPUUtilizationPercentage", I32, "op")),
    message("autoscaling.CrossVersionObjectReference", F(1, "kind", STR), F(2, "name", STR),
            F(3, "apiVersion", STR, "o")),
    message("autoscaling.HorizontalPodAutoscalerStatus", F(1, "observedGeneration", I64, "op"),
            F(2, "lastScaleTime", TIME, "op"), F(3, "currentReplicas", I32),
            F(4, "desiredReplicas", I32), F(5, "currentCPUUtilizationPercentage", I32, "op")),
    message("autoscaling.Scale", F(1, "metadata", OBJECT_META, "o"),
            F(2, "spec", "autoscaling.ScaleSpec", "o"),
            F(3, "status", "autoscaling.ScaleStatus", "o")),
    message("autoscaling.ScaleSpec", F(1, "replicas", I32, "o")),
    message("autoscaling.ScaleStatus", F(1, "replicas", I32), F(2, "selector", STR, "o")),
)
