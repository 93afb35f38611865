"""RBAC as kube-apiserver evaluates it: ClusterRoleBindings grant their roles' rules
everywhere, RoleBindings in their namespace only; rules match verbs, API groups, resources
(``jobs/status`` for a subresource) and resource names, ``*`` matching all; ClusterRoles with
an ``aggregationRule`` take the rules of the ClusterRoles their selectors match.
``system:masters`` may do everything.

``bootstrap`` adds what a cluster starts with: ``cluster-admin`` bound to ``system:masters``,
and Kueue's ClusterRoles (``kueue-batch-admin-role`` and ``kueue-batch-user-role``, aggregated
from the editor and viewer roles labelled ``rbac.kueue.x-k8s.io/batch-admin`` and
``.../batch-user``, as Kueue's config/components/rbac defines them)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from phalanx.kube.store import ObjectStore

__all__ = ["Rbac", "bootstrap"]

RBAC = "rbac.authorization.k8s.io"
MASTERS = "system:masters"
_CLUSTER_ROLES = (RBAC, "clusterroles")
_CLUSTER_BINDINGS = (RBAC, "clusterrolebindings")
_ROLES = (RBAC, "roles")
_BINDINGS = (RBAC, "rolebindings")
_ADMIN_LABEL = "rbac.kueue.x-k8s.io/batch-admin"
_USER_LABEL = "rbac.kueue.x-k8s.io/batch-user"
_EDIT = ["create", "delete", "get", "list", "patch", "update", "watch"]
_VIEW = ["get", "list", "watch"]


def _rules_match(rules: Any, verb: str, group: str, resource: str, name: str | None) -> bool:
    for rule in rules if isinstance(rules, list) else ():
        if not isinstance(rule, dict):
            continue
        verbs = rule.get("verbs") or []
        groups = rule.get("apiGroups") or []
        resources = rule.get("resources") or []
        names = rule.get("resourceNames") or []
        if "*" not in verbs and verb not in verbs:
            continue
        if "*" not in groups and group not in groups:
            continue
        base = resource.split("/", 1)[0]
        if not (
            "*" in resources
            or resource in resources
            or ("/" in resource and f"*/{resource.split('/', 1)[1]}" in resources)
            or ("/" not in resource and base in resources)
        ):
            continue
        if names and (name is None or name not in names):
            continue
        return True
    return False


def _subject_matches(subjects: Any, user: str, groups: tuple[str, ...]) -> bool:
    for s in subjects if isinstance(subjects, list) else ():
        if not isinstance(s, dict):
            continue
        if s.get("kind") == "User" and s.get("name") == user:
            return True
        if s.get("kind") == "Group" and s.get("name") in groups:
            return True
    return False


class Rbac:
    """The authorizer over the RBAC objects of ``store`` (read at each decision)."""

    def __init__(self, store: ObjectStore) -> None:
        self.store = store

    def _cluster_role_rules(self, name: str) -> Iterator[Any]:
        role = self.store.peek(_CLUSTER_ROLES, "", name)
        if role is None:
            return
        yield from role.get("rules") or []
        aggregation = role.get("aggregationRule") or {}
        for selector in aggregation.get("clusterRoleSelectors") or []:
            want = (selector or {}).get("matchLabels") or {}
            for other in self.store.list(_CLUSTER_ROLES, copy=False):
                labels = other["metadata"].get("labels") or {}
                if other is not role and all(labels.get(k) == v for k, v in want.items()):
                    yield from other.get("rules") or []

    def _role_rules(self, ref: Any, namespace: str) -> list[Any]:
        if not isinstance(ref, dict):
            return []
        if ref.get("kind") == "ClusterRole":
            return list(self._cluster_role_rules(str(ref.get("name"))))
        if ref.get("kind") == "Role":
            role = self.store.peek(_ROLES, namespace, str(ref.get("name")))
            return list(role.get("rules") or []) if role is not None else []
        return []

    def authorize(
        self,
        user: str,
        groups: tuple[str, ...],
        verb: str,
        group: str,
        resource: str,
        namespace: str | None,
        name: str | None,
    ) -> bool:
        if MASTERS in groups:
            return True
        for binding in self.store.list(_CLUSTER_BINDINGS, copy=False):
            if _subject_matches(binding.get("subjects"), user, groups) and _rules_match(
                self._role_rules(binding.get("roleRef"), ""), verb, group, resource, name
            ):
                return True
        if namespace:
            for binding in self.store.list(_BINDINGS, namespace, copy=False):
                if _subject_matches(binding.get("subjects"), user, groups) and _rules_match(
                    self._role_rules(binding.get("roleRef"), namespace),
                    verb,
                    group,
                    resource,
                    name,
                ):
                    return True
        return False


def _role(name: str, rules: list[dict[str, Any]], labels: dict[str, str]) -> dict[str, Any]:
    return {
        "apiVersion": f"{RBAC}/v1",
        "kind": "ClusterRole",
        "metadata": {"name": name, "labels": labels},
        "rules": rules,
    }


def _rule(group: str, resource: str, verbs: list[str]) -> list[dict[str, Any]]:
    return [
        {"apiGroups": [group], "resources": [resource], "verbs": verbs},
        {"apiGroups": [group], "resources": [f"{resource}/status"], "verbs": ["get"]},
    ]


def _bootstrap_objects() -> Iterator[dict[str, Any]]:
    both = {_ADMIN_LABEL: "true", _USER_LABEL: "true"}
    admin = {_ADMIN_LABEL: "true"}
    yield _role(
        "cluster-admin",
        [
            {"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]},
            {"nonResourceURLs": ["*"], "verbs": ["*"]},
        ],
        {"kubernetes.io/bootstrapping": "rbac-defaults"},
    )
    yield {
        "apiVersion": f"{RBAC}/v1",
        "kind": "ClusterRoleBinding",
        "metadata": {
            "name": "cluster-admin",
            "labels": {"kubernetes.io/bootstrapping": "rbac-defaults"},
        },
        "roleRef": {"apiGroup": RBAC, "kind": "ClusterRole", "name": "cluster-admin"},
        "subjects": [{"apiGroup": RBAC, "kind": "Group", "name": MASTERS}],
    }
    for name, label in (
        ("kueue-batch-admin-role", _ADMIN_LABEL),
        ("kueue-batch-user-role", _USER_LABEL),
    ):
        role = _role(name, [], {})
        role["aggregationRule"] = {"clusterRoleSelectors": [{"matchLabels": {label: "true"}}]}
        yield role
    kueue = "kueue.x-k8s.io"
    for noun, plural, edit_labels, view_labels in (
        ("clusterqueue", "clusterqueues", admin, admin),
        ("localqueue", "localqueues", admin, both),
        ("resourceflavor", "resourceflavors", admin, admin),
        ("workload", "workloads", admin, both),
    ):
        yield _role(f"{noun}-editor-role", _rule(kueue, plural, _EDIT), edit_labels)
        yield _role(f"{noun}-viewer-role", _rule(kueue, plural, _VIEW), view_labels)
    for noun, group, plural in (
        ("job", "batch", "jobs"),
        ("jobset", "jobset.x-k8s.io", "jobsets"),
        ("pytorchjob", "kubeflow.org", "pytorchjobs"),
    ):
        yield _role(f"{noun}-editor-role", _rule(group, plural, _EDIT), both)
        yield _role(f"{noun}-viewer-role", _rule(group, plural, _VIEW), both)


def bootstrap(store: ObjectStore) -> None:
    """Create the bootstrap roles and binding that do not exist yet (kept as edited)."""
    for obj in _bootstrap_objects():
        kind = (RBAC, "clusterroles" if obj["kind"] == "ClusterRole" else "clusterrolebindings")
        if store.get(kind, None, obj["metadata"]["name"]) is None:
            store.create(obj)
