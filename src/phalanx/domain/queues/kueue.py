"""Kueue's kinds (``kueue.x-k8s.io/v1beta1``) as immutable values, with Kueue's defaults.

Field names follow the API (``nominalQuota`` is ``nominal``); quantities are thousandths of
their unit (``phalanx.domain.quantity``). What each field means is Kueue's: see
``apis/kueue/v1beta1/clusterqueue_types.go`` and ``cohort_types.go``.
"""

from __future__ import annotations

import enum
from collections.abc import Iterator
from dataclasses import dataclass

from phalanx.domain.queues.labels import LabelSelector, Taint, Toleration

__all__ = [
    "BorrowWithinCohort",
    "ClusterQueue",
    "Cohort",
    "FairSharing",
    "FairSharingStrategy",
    "FlavorFungibility",
    "FlavorQuotas",
    "FungibilityPolicy",
    "LocalQueue",
    "Preemption",
    "PreemptionPolicy",
    "QueueingStrategy",
    "ResourceFlavor",
    "ResourceGroup",
    "ResourceQuota",
    "StopPolicy",
    "WorkloadPriorityClass",
]


class QueueingStrategy(enum.Enum):
    STRICT_FIFO = "StrictFIFO"
    """An older workload that cannot be admitted blocks the newer ones of its ClusterQueue."""
    BEST_EFFORT_FIFO = "BestEffortFIFO"
    """One that cannot be admitted does not block newer ones that fit (Kueue's default)."""


class PreemptionPolicy(enum.Enum):
    NEVER = "Never"
    LOWER_PRIORITY = "LowerPriority"
    ANY = "Any"
    LOWER_OR_NEWER_EQUAL_PRIORITY = "LowerOrNewerEqualPriority"


class FungibilityPolicy(enum.Enum):
    MAY_STOP_SEARCH = "MayStopSearch"
    """Stop at the first flavor the workload fits in, borrowing or preempting as needed.
    (``Borrow`` and ``Preempt`` are its old names and read as it.)"""
    TRY_NEXT_FLAVOR = "TryNextFlavor"
    """Try the next flavor before borrowing (or preempting) in this one."""


class StopPolicy(enum.Enum):
    NONE = "None"
    HOLD = "Hold"
    """No new admissions; admitted workloads run to completion."""
    HOLD_AND_DRAIN = "HoldAndDrain"
    """No new admissions; admitted workloads are evicted (next phase: eviction)."""


@dataclass(frozen=True, slots=True)
class ResourceFlavor:
    """A named set of nodes: those carrying every label of ``node_labels`` (``labels``
    module: hostname, GPU model, features). A workload is assigned a flavor only if its pods
    tolerate every NoSchedule/NoExecute taint in ``node_taints``; ``tolerations`` are added
    to the pods admitted to it."""

    name: str
    node_labels: tuple[tuple[str, str], ...] = ()
    node_taints: tuple[Taint, ...] = ()
    tolerations: tuple[Toleration, ...] = ()


@dataclass(frozen=True, slots=True)
class ResourceQuota:
    """Quota of one resource in one flavor. ``borrowing_limit`` None: no limit (borrow what
    the cohort has unused); ``lending_limit`` None: all of ``nominal`` may be lent."""

    name: str
    nominal: int
    borrowing_limit: int | None = None
    lending_limit: int | None = None


@dataclass(frozen=True, slots=True)
class FlavorQuotas:
    name: str
    """A ResourceFlavor's name."""
    resources: tuple[ResourceQuota, ...]
    """In the order of the group's ``covered_resources``."""


@dataclass(frozen=True, slots=True)
class ResourceGroup:
    covered_resources: tuple[str, ...]
    flavors: tuple[FlavorQuotas, ...]
    """In the order they are tried (Kueue assigns the first that fits)."""


@dataclass(frozen=True, slots=True)
class BorrowWithinCohort:
    policy: PreemptionPolicy = PreemptionPolicy.NEVER
    """Never or LowerPriority."""
    max_priority_threshold: int | None = None


@dataclass(frozen=True, slots=True)
class Preemption:
    """What a pending workload may preempt (used by the next phase's reclaim)."""

    reclaim_within_cohort: PreemptionPolicy = PreemptionPolicy.NEVER
    borrow_within_cohort: BorrowWithinCohort = BorrowWithinCohort()
    within_cluster_queue: PreemptionPolicy = PreemptionPolicy.NEVER


@dataclass(frozen=True, slots=True)
class FlavorFungibility:
    when_can_borrow: FungibilityPolicy = FungibilityPolicy.MAY_STOP_SEARCH
    when_can_preempt: FungibilityPolicy = FungibilityPolicy.TRY_NEXT_FLAVOR


class FairSharingStrategy(enum.Enum):
    """When a ClusterQueue may preempt another's borrowing workload under fair sharing."""

    LESS_THAN_OR_EQUAL_TO_FINAL_SHARE = "LessThanOrEqualToFinalShare"
    """The preemptor's share after admission is at most the victim queue's share without
    the victim."""
    LESS_THAN_INITIAL_SHARE = "LessThanInitialShare"
    """The preemptor's share after admission is below the victim queue's share with it."""


@dataclass(frozen=True, slots=True)
class FairSharing:
    """Kueue's ``fairSharing`` of its Configuration: one switch for the whole cluster.
    Off (the default), admission and preemption ignore ``fairSharing.weight``."""

    enable: bool = False
    preemption_strategies: tuple[FairSharingStrategy, ...] = (
        FairSharingStrategy.LESS_THAN_OR_EQUAL_TO_FINAL_SHARE,
        FairSharingStrategy.LESS_THAN_INITIAL_SHARE,
    )
    """Tried in turn: the first under which a victim set is found is used."""


def _quotas(groups: tuple[ResourceGroup, ...]) -> Iterator[tuple[str, ResourceQuota]]:
    for group in groups:
        for flavor in group.flavors:
            for quota in flavor.resources:
                yield flavor.name, quota


@dataclass(frozen=True, slots=True)
class ClusterQueue:
    name: str
    resource_groups: tuple[ResourceGroup, ...] = ()
    cohort: str | None = None
    """``spec.cohort`` (v1beta1), ``spec.cohortName`` in later versions."""
    namespace_selector: LabelSelector | None = None
    """None (absent): no namespace may submit; the empty selector: every namespace."""
    queueing_strategy: QueueingStrategy = QueueingStrategy.BEST_EFFORT_FIFO
    preemption: Preemption = Preemption()
    flavor_fungibility: FlavorFungibility = FlavorFungibility()
    fair_sharing_weight: float = 1.0
    stop_policy: StopPolicy = StopPolicy.NONE

    def quotas(self) -> Iterator[tuple[str, ResourceQuota]]:
        """(flavor, quota) for every flavor and resource, in declaration order."""
        return _quotas(self.resource_groups)

    def group_of(self, resource: str) -> ResourceGroup | None:
        for group in self.resource_groups:
            if resource in group.covered_resources:
                return group
        return None


@dataclass(frozen=True, slots=True)
class Cohort:
    """A node of the cohort tree with quota of its own that its members share. Its
    borrowing and lending limits bound what its subtree takes from and gives to ``parent``."""

    name: str
    parent: str | None = None
    resource_groups: tuple[ResourceGroup, ...] = ()
    fair_sharing_weight: float = 1.0

    def quotas(self) -> Iterator[tuple[str, ResourceQuota]]:
        return _quotas(self.resource_groups)


@dataclass(frozen=True, slots=True)
class LocalQueue:
    """Namespace ``namespace``'s queue ``name``, feeding ClusterQueue ``cluster_queue``."""

    namespace: str
    name: str
    cluster_queue: str
    stop_policy: StopPolicy = StopPolicy.NONE


@dataclass(frozen=True, slots=True)
class WorkloadPriorityClass:
    name: str
    value: int
    description: str = ""
