"""Kubernetes label selectors, taints and tolerations, and the labels a Phalanx node carries.

A node has no label map of its own; it carries the labels Kubernetes and NVIDIA's GPU feature
discovery would give it: ``kubernetes.io/hostname`` (its name), ``nvidia.com/gpu.product``
(its GPU model) and one per feature: ``key=value`` gives label ``key`` the value ``value``, a
bare ``name`` gives label ``name`` the value ``"true"``. A namespace has the label Kubernetes
gives every namespace, ``kubernetes.io/metadata.name``.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the cluster holds the queues: a run-time import would be circular
    from phalanx.domain.cluster import Node

__all__ = [
    "GPU_PRODUCT",
    "HOSTNAME",
    "NAMESPACE_NAME",
    "LabelSelector",
    "Requirement",
    "SelectorOp",
    "Taint",
    "TaintEffect",
    "Toleration",
    "namespace_labels",
    "node_labels",
    "untolerated",
]

HOSTNAME = "kubernetes.io/hostname"
GPU_PRODUCT = "nvidia.com/gpu.product"
NAMESPACE_NAME = "kubernetes.io/metadata.name"


def node_labels(node: Node) -> dict[str, str]:
    """The labels ``node`` carries (module docstring)."""
    labels = {HOSTNAME: node.name}
    if node.gpu_model:
        labels[GPU_PRODUCT] = node.gpu_model
    for feature in sorted(node.features):
        key, sep, value = feature.partition("=")
        labels[key] = value if sep else "true"
    return labels


def namespace_labels(namespace: str) -> dict[str, str]:
    return {NAMESPACE_NAME: namespace}


class SelectorOp(enum.Enum):
    IN = "In"
    NOT_IN = "NotIn"
    EXISTS = "Exists"
    DOES_NOT_EXIST = "DoesNotExist"


@dataclass(frozen=True, slots=True)
class Requirement:
    """One of ``matchExpressions``: ``values`` is empty for Exists and DoesNotExist."""

    key: str
    op: SelectorOp
    values: frozenset[str] = frozenset()

    def matches(self, labels: Mapping[str, str]) -> bool:
        present = self.key in labels
        if self.op is SelectorOp.EXISTS:
            return present
        if self.op is SelectorOp.DOES_NOT_EXIST:
            return not present
        inside = present and labels[self.key] in self.values
        return inside if self.op is SelectorOp.IN else not inside


@dataclass(frozen=True, slots=True)
class LabelSelector:
    """``metav1.LabelSelector``: every ``matchLabels`` pair and every expression must hold.
    The empty selector matches everything."""

    match_labels: tuple[tuple[str, str], ...] = ()
    match_expressions: tuple[Requirement, ...] = ()

    def matches(self, labels: Mapping[str, str]) -> bool:
        return all(labels.get(k) == v for k, v in self.match_labels) and all(
            r.matches(labels) for r in self.match_expressions
        )


class TaintEffect(enum.Enum):
    NO_SCHEDULE = "NoSchedule"
    PREFER_NO_SCHEDULE = "PreferNoSchedule"
    NO_EXECUTE = "NoExecute"


@dataclass(frozen=True, slots=True)
class Taint:
    key: str
    effect: TaintEffect
    value: str = ""

    def __str__(self) -> str:
        value = f"={self.value}" if self.value else ""
        return f"{self.key}{value}:{self.effect.value}"


@dataclass(frozen=True, slots=True)
class Toleration:
    """``corev1.Toleration``: an empty ``key`` with Exists tolerates every taint; an empty
    ``effect`` (None) matches every effect."""

    key: str = ""
    operator: str = "Equal"
    """``Equal`` or ``Exists``."""
    value: str = ""
    effect: TaintEffect | None = None

    def tolerates(self, taint: Taint) -> bool:
        if self.effect is not None and self.effect is not taint.effect:
            return False
        if self.key and self.key != taint.key:
            return False
        if self.operator == "Exists":
            return True
        return bool(self.key) and self.value == taint.value


def untolerated(taints: tuple[Taint, ...], tolerations: tuple[Toleration, ...]) -> Taint | None:
    """The first NoSchedule or NoExecute taint none of ``tolerations`` tolerates (Kueue checks
    a flavor's ``nodeTaints`` so; PreferNoSchedule never keeps a pod off), or None."""
    for taint in taints:
        if taint.effect is TaintEffect.PREFER_NO_SCHEDULE:
            continue
        if not any(t.tolerates(taint) for t in tolerations):
            return taint
    return None
