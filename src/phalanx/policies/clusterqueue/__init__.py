"""``admit/clusterqueue``: Kueue's ClusterQueues, cohorts and flavors, at the pre-filter."""

from phalanx.policies.clusterqueue.admission import ClusterQueueAdmission

__all__ = ["ClusterQueueAdmission"]
