"""All the queue objects of a cluster together, and how a job finds its ClusterQueue.

A job's namespace is its account (a trace job's account is Philly's virtual cluster, SWF's
``u<user>``), so a trace runs under queues unchanged. It names its LocalQueue with the label
Kueue's integrations read, ``kueue.x-k8s.io/queue-name``, carried in ``JobSpec.extra``; a job
that names none goes to the LocalQueue ``default`` of its namespace. Its WorkloadPriorityClass
is named by ``kueue.x-k8s.io/priority-class`` the same way.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from phalanx.domain.jobspec import JobSpec
from phalanx.domain.queues.kueue import (
    ClusterQueue,
    Cohort,
    FairSharing,
    LocalQueue,
    ResourceFlavor,
    WorkloadPriorityClass,
)
from phalanx.domain.queues.labels import namespace_labels, node_labels
from phalanx.domain.queues.volcano import VolcanoQueue

if TYPE_CHECKING:  # the cluster holds the queues: a run-time import would be circular
    from phalanx.domain.cluster import Cluster

__all__ = [
    "DEFAULT_LOCAL_QUEUE",
    "PRIORITY_CLASS_LABEL",
    "QUEUE_NAME_LABEL",
    "Queues",
    "queue_name",
]

QUEUE_NAME_LABEL = "kueue.x-k8s.io/queue-name"
PRIORITY_CLASS_LABEL = "kueue.x-k8s.io/priority-class"
DEFAULT_LOCAL_QUEUE = "default"


def _label(spec: JobSpec, key: str) -> str | None:
    for name, value in spec.extra:
        if name == key:
            return value
    return None


def has_queue_name(spec: JobSpec) -> bool:
    """Whether ``spec`` names its LocalQueue (else it goes to ``default``)."""
    return _label(spec, QUEUE_NAME_LABEL) is not None


def queue_name(spec: JobSpec) -> str:
    """The LocalQueue ``spec`` names (module docstring)."""
    return _label(spec, QUEUE_NAME_LABEL) or DEFAULT_LOCAL_QUEUE


@dataclass(frozen=True)
class Queues:
    """Every queue object, by name (LocalQueues by namespace and name), in file order.

    Invariants (``phalanx.config.queues`` checks them): every flavor a ClusterQueue or Cohort
    names exists; names are unique per kind. A cohort a ClusterQueue names need not exist as
    an object (it is then a cohort with no quota of its own and no parent, as in Kueue)."""

    flavors: Mapping[str, ResourceFlavor] = field(default_factory=dict)
    cluster_queues: Mapping[str, ClusterQueue] = field(default_factory=dict)
    cohorts: Mapping[str, Cohort] = field(default_factory=dict)
    local_queues: Mapping[tuple[str, str], LocalQueue] = field(default_factory=dict)
    priority_classes: Mapping[str, WorkloadPriorityClass] = field(default_factory=dict)
    volcano_queues: Mapping[str, VolcanoQueue] = field(default_factory=dict)
    fair_sharing: FairSharing = field(default_factory=FairSharing)
    """Kueue's Configuration ``fairSharing`` (off unless a Configuration enables it)."""

    def __bool__(self) -> bool:
        return bool(
            self.flavors
            or self.cluster_queues
            or self.cohorts
            or self.local_queues
            or self.priority_classes
            or self.volcano_queues
        )

    def cluster_queue_of(self, spec: JobSpec) -> tuple[ClusterQueue | None, str]:
        """The ClusterQueue a job goes to, or None and why not (the message a pending job
        shows, in Kueue's words where Kueue has them)."""
        namespace, name = spec.account, queue_name(spec)
        local = self.local_queues.get((namespace, name))
        if local is None:
            return None, f"LocalQueue {name} doesn't exist in namespace {namespace}"
        return self.cluster_queue_named(local.cluster_queue, namespace)

    def cluster_queue_named(self, name: str, namespace: str) -> tuple[ClusterQueue | None, str]:
        """ClusterQueue ``name`` for a job of ``namespace``, or None and why not."""
        cq = self.cluster_queues.get(name)
        if cq is None:
            return None, f"ClusterQueue {name} doesn't exist"
        selector = cq.namespace_selector
        if selector is None or not selector.matches(namespace_labels(namespace)):
            return None, f"Workload namespace doesn't match ClusterQueue selector ({cq.name})"
        return cq, ""

    def priority_of(self, spec: JobSpec) -> int:
        """The value of the WorkloadPriorityClass the job names (label
        ``kueue.x-k8s.io/priority-class``); 0 for none or an unknown one."""
        name = _label(spec, PRIORITY_CLASS_LABEL)
        found = self.priority_classes.get(name) if name is not None else None
        return found.value if found is not None else 0

    def cohort_parent(self, cohort: str) -> str | None:
        found = self.cohorts.get(cohort)
        return found.parent if found is not None else None

    def flavor_nodes(self, cluster: Cluster, flavor: str) -> tuple[int, ...]:
        """Indexes of the nodes ``flavor`` selects by its ``nodeLabels``."""
        wanted = self.flavors[flavor].node_labels
        return tuple(
            node.index
            for node in cluster.nodes
            if all(node_labels(node).get(k) == v for k, v in wanted)
        )
