"""rbac.authorization.k8s.io/v1's roles and bindings. See declare.py for the notation."""

from __future__ import annotations

from phalanx.kube.pb.declare import STR, F, L, message
from phalanx.kube.pb.meta import LABEL_SELECTOR, OBJECT_META

API_VERSION = "rbac.authorization.k8s.io/v1"
KINDS = frozenset({"Role", "ClusterRole", "RoleBinding", "ClusterRoleBinding"})

MESSAGES = (
    message("rbac.Role", F(1, "metadata", OBJECT_META, "o"), L(2, "rules", "rbac.PolicyRule")),
    message("rbac.ClusterRole", F(1, "metadata", OBJECT_META, "o"),
            L(2, "rules", "rbac.PolicyRule"),
            F(3, "aggregationRule", "rbac.AggregationRule", "op")),
    # `Verbs []string json:"verbs"` has no omitempty: a rule without verbs says null.
    message("rbac.PolicyRule", L(1, "verbs", STR), L(2, "apiGroups", STR, "o"),
            L(3, "resources", STR, "o"), L(4, "resourceNames", STR, "o"),
            L(5, "nonResourceURLs", STR, "o")),
    message("rbac.AggregationRule", L(1, "clusterRoleSelectors", LABEL_SELECTOR, "o")),
    message("rbac.RoleBinding", F(1, "metadata", OBJECT_META, "o"),
            L(2, "subjects", "rbac.Subject", "o"), F(3, "roleRef", "rbac.RoleRef")),
    message("rbac.ClusterRoleBinding", F(1, "metadata", OBJECT_META, "o"),
            L(2, "subjects", "rbac.Subject", "o"), F(3, "roleRef", "rbac.RoleRef")),
    message("rbac.Subject", F(1, "kind", STR), F(2, "apiGroup", STR, "o"), F(3, "name", STR),
            F(4, "namespace", STR, "o")),
    message("rbac.RoleRef", F(1, "apiGroup", STR), F(2, "kind", STR), F(3, "name", STR)),
)
