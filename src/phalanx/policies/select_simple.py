"""Placements of schedulers that ignore topology.

``select/spread``: Kubernetes' default scoring (NodeResourcesFit LeastAllocated): the node
with the most free GPUs. ``select/binpack``: Volcano's binpack: the fullest node that fits.
Both pick nodes one by one, with no notion of switches.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
from mypy_extensions import mypyc_attr

from phalanx.sched.capacity import Capacity
from phalanx.sched.occupancy import BoolArray, Occupancy
from phalanx.sched.shape import Shape

__all__ = ["BinpackSelect", "SpreadSelect"]


@mypyc_attr(allow_interpreted_subclasses=True)
class _NodeOrderSelect:
    most_free_first = False

    def __init__(self, params: Mapping[str, object]) -> None:
        del params

    def place(
        self,
        state: Occupancy,
        cap: Capacity,
        shape: Shape,
        mask: BoolArray,
        nodes: int,
        max_leaves: int | None,
    ) -> list[int] | None:
        del max_leaves  # no topology
        idx = np.flatnonzero(mask)
        if len(idx) < nodes:
            return None
        free = cap.gpus[idx]
        if shape.milli:
            free = np.where(cap.dev[idx] >= shape.milli, cap.dev[idx], 1 << 30).min(axis=1)
        primary = -free if self.most_free_first else free
        if nodes == 1:
            # The sort's first: the least ``primary``, the lowest index among ties (``idx``
            # ascends, and ``argmin`` takes the first): one scan, not a sort per start.
            return [int(idx[int(np.argmin(primary))])]
        order = np.lexsort((idx, primary))
        return [int(i) for i in idx[order[:nodes]]]


@mypyc_attr(allow_interpreted_subclasses=True)
class SpreadSelect(_NodeOrderSelect):
    most_free_first = True


@mypyc_attr(allow_interpreted_subclasses=True)
class BinpackSelect(_NodeOrderSelect):
    most_free_first = False
