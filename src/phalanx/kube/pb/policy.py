"""policy/v1's PodDisruptionBudget (`kubectl create poddisruptionbudget`). See declare.py."""

from __future__ import annotations

from phalanx.kube.pb.declare import I32, I64, STR, F, L, M, message
from phalanx.kube.pb.meta import INT_OR_STRING, LABEL_SELECTOR, OBJECT_META, TIME

API_VERSION = "policy/v1"
KINDS = frozenset({"PodDisruptionBudget"})

MESSAGES = (
    message("policy.PodDisruptionBudget", F(1, "metadata", OBJECT_META, "o"),
            F(2, "spec", "policy.PodDisruptionBudgetSpec", "o"),
            F(3, "status", "policy.PodDisruptionBudgetStatus", "o")),
    message("policy.PodDisruptionBudgetSpec", F(1, "minAvailable", INT_OR_STRING, "op"),
            F(2, "selector", LABEL_SELECTOR, "op"),
            F(3, "maxUnavailable", INT_OR_STRING, "op"),
            F(4, "unhealthyPodEvictionPolicy", STR, "op")),
    message(
        "policy.PodDisruptionBudgetStatus",
        F(1, "observedGeneration", I64, "o"), M(2, "disruptedPods", TIME, "o"),
        F(3, "disruptionsAllowed", I32), F(4, "currentHealthy", I32),
        F(5, "desiredHealthy", I32), F(6, "expectedPods", I32),
        L(7, "conditions", "meta.Condition", "o"),
    ),
)
