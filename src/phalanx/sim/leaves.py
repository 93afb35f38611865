"""How tightly a multi-node job could have been packed: the fewest leaf switches per node count.

For a tree of equal leaves of ``k`` nodes that is ``ceil(n / k)``. Leaves of unequal sizes
(an irregular tree, or nodes under no switch) need the general answer: the fewest leaves whose
node counts add up to at least ``n``, which taking the largest leaves first attains (any set
of ``m`` leaves holds at most as many nodes as the ``m`` largest).
"""

from __future__ import annotations

from phalanx.domain.cluster import Cluster

__all__ = ["fewest_leaves_table", "leaf_of_nodes"]


def leaf_of_nodes(cluster: Cluster) -> tuple[int, ...]:
    """The leaf switch of each node, by node index."""
    return tuple(node.leaf for node in cluster.nodes)


def fewest_leaves_table(cluster: Cluster) -> tuple[int, ...]:
    """``t[n]`` = the fewest leaf switches whose nodes number at least ``n``, for every ``n``
    from 0 to the cluster's node count (``t[0] = 0``): ``Cluster.fewest_leaves``."""
    return cluster.fewest_leaves()
