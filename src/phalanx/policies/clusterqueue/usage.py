"""What each ClusterQueue's running jobs hold, per flavor and resource, and the weighted
share Kueue's fair sharing gives each queue for it: the figures of a ClusterQueue's status
(``flavorsUsage``, ``fairSharing.weightedShare``), computed once here so that the Kubernetes
API (``phalanx.kube.queuestatus``) and the dashboard (``phalanx.api.ui``) report the same.

A job counts while it runs (not pending, not final) and holds an allocation; the flavor a
run holds is the first of its resource group whose nodes hold all of the run's nodes.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from phalanx.domain.cluster import Cluster
from phalanx.domain.queues import ClusterQueue, Queues
from phalanx.domain.queues.quota import FlavorResource, QuotaTree
from phalanx.domain.state import JobState
from phalanx.policies.clusterqueue.amounts import held
from phalanx.policies.clusterqueue.fairshare import share
from phalanx.sched.job import Job

__all__ = ["flavor_of", "queue_usage", "weighted_shares"]


def flavor_of(
    queues: Queues, cluster: Cluster, cq: ClusterQueue, nodes: set[int]
) -> dict[str, str]:
    """Resource -> the flavor of each resource group whose nodes hold all of ``nodes``."""
    out: dict[str, str] = {}
    for group in cq.resource_groups:
        for fq in group.flavors:
            if fq.name in queues.flavors and nodes <= set(queues.flavor_nodes(cluster, fq.name)):
                out.update({r: fq.name for r in group.covered_resources})
                break
    return out


def queue_usage(cluster: Cluster, jobs: Iterable[Job]) -> dict[str, dict[FlavorResource, int]]:
    """Every configured ClusterQueue -> (flavor, resource) -> what its running jobs hold
    (thousandths of the unit; zero amounts left out)."""
    queues = cluster.queues
    used: dict[str, dict[FlavorResource, int]] = {name: {} for name in queues.cluster_queues}
    for job in jobs:
        if job.state.is_final or job.state is JobState.PENDING or job.alloc is None:
            continue
        cq, _ = cluster.cluster_queue_of(job.spec)
        if cq is None or cq.name not in used:
            continue
        flavors = flavor_of(queues, cluster, cq, set(job.alloc.nodes))
        mine = used[cq.name]
        for resource, amount in held(job, job.alloc).items():
            flavor = flavors.get(resource)
            if flavor is not None and amount:
                mine[(flavor, resource)] = mine.get((flavor, resource), 0) + amount
    return used


def weighted_shares(
    queues: Queues, used: Mapping[str, Mapping[FlavorResource, int]]
) -> dict[str, int]:
    """ClusterQueue -> its ``weightedShare`` given ``used`` (``queue_usage``), as Kueue
    reports it (``fairshare.share``); {} when fair sharing is off (Kueue then reports none)."""
    if not queues.fair_sharing.enable:
        return {}
    tree = QuotaTree(queues)
    for name, charge in sorted(used.items()):
        node = tree.queues[name]
        for fr, amount in sorted(charge.items()):
            node.add(fr, amount)
    return {
        name: share(tree.queues[name], cq.fair_sharing_weight)
        for name, cq in queues.cluster_queues.items()
    }
