"""The fewest leaf switches that hold n nodes, on regular and irregular trees."""

from __future__ import annotations

import dataclasses
import math

from phalanx.config.clusterspec import regular_cluster
from phalanx.sim.leaves import fewest_leaves_table, leaf_of_nodes


def test_a_regular_tree_needs_ceil_n_over_leaf_size() -> None:
    cluster = regular_cluster(16, 8, 4)
    table = fewest_leaves_table(cluster)
    assert len(table) == 17
    assert list(table) == [math.ceil(n / 4) for n in range(17)]
    assert leaf_of_nodes(cluster)[:5] == (0, 0, 0, 0, 1)


def test_an_irregular_tree_fills_the_largest_leaves_first() -> None:
    # Leaves of 1, 3 and 5 nodes (9 nodes): 4 nodes fit in the 5-node leaf, 6 need two, 9 all.
    base = regular_cluster(9, 8, 9)
    sizes = [1, 3, 5]
    leaf_of = [leaf for leaf, size in enumerate(sizes) for _ in range(size)]
    nodes = tuple(dataclasses.replace(n, leaf=leaf_of[n.index]) for n in base.nodes)
    cluster = dataclasses.replace(base, nodes=nodes)
    assert fewest_leaves_table(cluster) == (0, 1, 1, 1, 1, 1, 2, 2, 2, 3)
