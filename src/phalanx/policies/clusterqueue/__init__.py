"""``admit/clusterqueue``: Kueue's ClusterQueues, cohorts and flavors, at the pre-filter."""

from phalanx.policies.clusterqueue.admission import ClusterQueueAdmission
from phalanx.policies.clusterqueue.order import KueueOrder
from phalanx.policies.clusterqueue.preemption import ClusterQueuePreempt

__all__ = ["ClusterQueueAdmission", "ClusterQueuePreempt", "KueueOrder"]
