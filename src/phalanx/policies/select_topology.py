"""``select/topology``: place a gang under the lowest switch that can hold it, best fit.

One node: the node that will have the fewest GPUs left (best fit), in the leaf switch with the
fewest free GPUs, so that whole nodes and whole leaves stay free for big gangs. Several nodes:
the leaf with the fewest eligible nodes that still holds the gang; else the spine with the
fewest, filling its fullest leaves first (fewest switches); else the whole tree the same way.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
from mypy_extensions import mypyc_attr

from phalanx.sched.capacity import Capacity
from phalanx.sched.occupancy import BoolArray, Occupancy
from phalanx.sched.shape import Shape

__all__ = ["TopologySelect", "pick_best_fit"]

_BIG = np.int64(1) << 60


def pick_best_fit(state: Occupancy, cap: Capacity, mask: BoolArray, shape: Shape) -> int:
    """The best-fitting single node among ``mask``; -1 if ``mask`` is empty."""
    if shape.milli:
        if not mask.any():
            return -1
        # Pack shares onto devices already shared: least thousandths left on the best device.
        left = np.where(cap.dev >= shape.milli, cap.dev - shape.milli, _BIG).min(axis=1)
        leaf_free = np.bincount(state.leaf_of, weights=cap.gpus, minlength=state.n_leaves)
        wide = state.total_gpus + 1
        key = (left * wide + leaf_free[state.leaf_of].astype(np.int64)) * state.n + state.node_ids
        key = np.where(mask, key, _BIG)
        return int(np.argmin(key))
    # Whole GPUs: the same order (fewest free GPUs on the node, then in its leaf, then the
    # lowest index) by a loop over the row of nodes, which costs less than numpy's calls on
    # a few dozen nodes.
    leaf_of = state.leaf_list
    gpus, in_leaf = cap.gpu_rows(leaf_of, state.n_leaves)
    span = state.total_gpus + 1
    best, best_key = -1, 0
    ok: list[bool] = mask.tolist()
    for node, allowed in enumerate(ok):
        if allowed:
            rank = gpus[node] * span + in_leaf[leaf_of[node]]
            if best < 0 or rank < best_key:
                best, best_key = node, rank
    return best


def _best_fit_nodes(gpus: list[int], candidates: list[int], count: int) -> list[int]:
    # Fullest nodes first (fewest free GPUs) to keep empty nodes whole; ties by index (the
    # candidates come in index order and the sort is stable).
    return sorted(candidates, key=gpus.__getitem__)[:count]


@mypyc_attr(allow_interpreted_subclasses=True)
class TopologySelect:
    def __init__(self, params: Mapping[str, object]) -> None:
        self.topology = bool(params.get("topology", True))

    def place(
        self,
        state: Occupancy,
        cap: Capacity,
        shape: Shape,
        mask: BoolArray,
        nodes: int,
        max_leaves: int | None,
    ) -> list[int] | None:
        if nodes == 1:
            best = pick_best_fit(state, cap, mask, shape)
            return None if best < 0 else [best]
        # Python lists, not numpy: a few dozen nodes and a handful of leaves, where numpy's
        # per-call costs outweigh its loops.
        ok: list[bool] = mask.tolist()
        idx = [node for node, allowed in enumerate(ok) if allowed]
        if len(idx) < nodes:
            return None
        gpus = cap.gpu_rows(state.leaf_list, state.n_leaves)[0]
        if not self.topology:
            return _best_fit_nodes(gpus, idx, nodes)
        leaf_of = state.leaf_list
        leaf_count = [0] * state.n_leaves
        for node in idx:
            leaf_count[leaf_of[node]] += 1
        # The leaf with the fewest eligible nodes that still holds the gang (the lowest first).
        best, fewest = -1, 0
        for leaf, count in enumerate(leaf_count):
            if count >= nodes and (best < 0 or count < fewest):
                best, fewest = leaf, count
        if best >= 0:
            return _best_fit_nodes(gpus, [i for i in idx if leaf_of[i] == best], nodes)
        leaves = self._fewest_leaves(state, leaf_count, nodes)
        if leaves is None or (max_leaves is not None and len(leaves) > max_leaves):
            return None
        chosen: list[int] = []
        for leaf in leaves:
            in_leaf = [i for i in idx if leaf_of[i] == leaf]
            chosen.extend(_best_fit_nodes(gpus, in_leaf, nodes - len(chosen)))
        return chosen

    @staticmethod
    def _fewest_leaves(state: Occupancy, leaf_count: list[int], nodes: int) -> list[int] | None:
        best: tuple[int, int, list[int]] | None = None
        for members in state.spine_leaves:
            total = sum([leaf_count[leaf] for leaf in members])
            if total < nodes:
                continue
            leaves = _fill(members, leaf_count, nodes)
            key = (len(leaves), total)
            if best is None or key < best[:2]:
                best = (len(leaves), total, leaves)
        if best is not None:
            return best[2]
        if sum(leaf_count) < nodes:
            return None
        return _fill(list(range(state.n_leaves)), leaf_count, nodes)


def _fill(leaves: list[int], leaf_count: list[int], nodes: int) -> list[int]:
    # Fullest leaves (most eligible nodes) first: the fewest switches for the gang; ties by
    # index (``leaves`` come in index order and the sort is stable).
    out: list[int] = []
    total = 0
    for leaf in sorted(leaves, key=lambda leaf: -leaf_count[leaf]):
        if leaf_count[leaf] == 0:
            break
        out.append(leaf)
        total += leaf_count[leaf]
        if total >= nodes:
            break
    return out
