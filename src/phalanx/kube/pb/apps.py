"""apps/v1's Deployment, ReplicaSet and ControllerRevision. See declare.py for the notation."""

from __future__ import annotations

from phalanx.kube.pb.declare import BOOL, I32, I64, STR, F, L, message
from phalanx.kube.pb.meta import INT_OR_STRING, LABEL_SELECTOR, OBJECT_META, TIME

API_VERSION = "apps/v1"
KINDS = frozenset({"Deployment", "ReplicaSet", "ControllerRevision"})

MESSAGES = (
    message("apps.Deployment", F(1, "metadata", OBJECT_META, "o"),
            F(2, "spec", "apps.DeploymentSpec", "o"),
            F(3, "status", "apps.DeploymentStatus", "o")),
    message(
        "apps.DeploymentSpec",
        F(1, "replicas", I32, "op"), F(2, "selector", LABEL_SELECTOR, "p"),
        F(3, "template", "core.PodTemplateSpec"), F(4, "strategy", "apps.DeploymentStrategy", "o"),
        F(5, "minReadySeconds", I32, "o"), F(6, "revisionHistoryLimit", I32, "op"),
        F(7, "paused", BOOL, "o"), F(9, "progressDeadlineSeconds", I32, "op"),
    ),
    message("apps.DeploymentStrategy", F(1, "type", STR, "o"),
            F(2, "rollingUpdate", "apps.RollingUpdateDeployment", "op")),
    message("apps.RollingUpdateDeployment", F(1, "maxUnavailable", INT_OR_STRING, "op"),
            F(2, "maxSurge", INT_OR_STRING, "op")),
    message(
        "apps.DeploymentStatus",
        F(1, "observedGeneration", I64, "o"), F(2, "replicas", I32, "o"),
        F(3, "updatedReplicas", I32, "o"), F(7, "readyReplicas", I32, "o"),
        F(4, "availableReplicas", I32, "o"), F(5, "unavailableReplicas", I32, "o"),
        L(6, "conditions", "apps.DeploymentCondition", "o"), F(8, "collisionCount", I32, "op"),
    ),
    message("apps.DeploymentCondition", F(1, "type", STR), F(2, "status", STR),
            F(6, "lastUpdateTime", TIME, "o"), F(7, "lastTransitionTime", TIME, "o"),
            F(4, "reason", STR, "o"), F(5, "message", STR, "o")),
    message("apps.ReplicaSet", F(1, "metadata", OBJECT_META, "o"),
            F(2, "spec", "apps.ReplicaSetSpec", "o"),
            F(3, "status", "apps.ReplicaSetStatus", "o")),
    message("apps.ReplicaSetSpec", F(1, "replicas", I32, "op"),
            F(4, "minReadySeconds", I32, "o"), F(2, "selector", LABEL_SELECTOR, "p"),
            F(3, "template", "core.PodTemplateSpec", "o")),
    message(
        "apps.ReplicaSetStatus",
        F(1, "replicas", I32), F(2, "fullyLabeledReplicas", I32, "o"),
        F(4, "readyReplicas", I32, "o"), F(5, "availableReplicas", I32, "o"),
        F(3, "observedGeneration", I64, "o"), L(6, "conditions", "apps.ReplicaSetCondition", "o"),
    ),
    message("apps.ReplicaSetCondition", F(1, "type", STR), F(2, "status", STR),
            F(3, "lastTransitionTime", TIME, "o"), F(4, "reason", STR, "o"),
            F(5, "message", STR, "o")),
    message("apps.ControllerRevision", F(1, "metadata", OBJECT_META, "o"),
            F(2, "data", "runtime.RawExtension", "o"), F(3, "revision", I64)),
)
