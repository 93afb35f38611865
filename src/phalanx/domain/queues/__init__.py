"""The queue model: Kueue's ResourceFlavor, ClusterQueue, Cohort, LocalQueue and
WorkloadPriorityClass, and Volcano's Queue, as immutable values (``phalanx.config.queues``
reads them from Kubernetes objects)."""

from phalanx.domain.queues.kueue import (
    BorrowWithinCohort,
    ClusterQueue,
    Cohort,
    FairSharing,
    FairSharingStrategy,
    FlavorFungibility,
    FlavorQuotas,
    FungibilityPolicy,
    LocalQueue,
    Preemption,
    PreemptionPolicy,
    QueueingStrategy,
    ResourceFlavor,
    ResourceGroup,
    ResourceQuota,
    StopPolicy,
    WorkloadPriorityClass,
)
from phalanx.domain.queues.labels import (
    LabelSelector,
    Requirement,
    SelectorOp,
    Taint,
    TaintEffect,
    Toleration,
)
from phalanx.domain.queues.model import (
    DEFAULT_LOCAL_QUEUE,
    PRIORITY_CLASS_LABEL,
    QUEUE_NAME_LABEL,
    Queues,
    queue_name,
)
from phalanx.domain.queues.volcano import VolcanoQueue

__all__ = [
    "DEFAULT_LOCAL_QUEUE",
    "PRIORITY_CLASS_LABEL",
    "QUEUE_NAME_LABEL",
    "BorrowWithinCohort",
    "ClusterQueue",
    "Cohort",
    "FairSharing",
    "FairSharingStrategy",
    "FlavorFungibility",
    "FlavorQuotas",
    "FungibilityPolicy",
    "LabelSelector",
    "LocalQueue",
    "Preemption",
    "PreemptionPolicy",
    "QueueingStrategy",
    "Queues",
    "Requirement",
    "ResourceFlavor",
    "ResourceGroup",
    "ResourceQuota",
    "SelectorOp",
    "StopPolicy",
    "Taint",
    "TaintEffect",
    "Toleration",
    "VolcanoQueue",
    "WorkloadPriorityClass",
    "queue_name",
]
