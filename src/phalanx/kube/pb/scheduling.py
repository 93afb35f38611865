"""scheduling.k8s.io/v1's PriorityClass. See declare.py for the notation."""

from __future__ import annotations

from phalanx.kube.pb.declare import BOOL, I32, STR, F, message
from phalanx.kube.pb.meta import OBJECT_META

API_VERSION = "scheduling.k8s.io/v1"
KINDS = frozenset({"PriorityClass"})

MESSAGES = (
    message("scheduling.PriorityClass", F(1, "metadata", OBJECT_META, "o"), F(2, "value", I32),
            F(3, "globalDefault", BOOL, "o"), F(4, "description", STR, "o"),
            F(5, "preemptionPolicy", STR, "op")),
)
