"""Free resources per node as arrays, and allocations that take from them and give back.

Placement, backfill and preemption all ask "what if": they copy a ``Capacity`` (a few numpy
arrays, cheap) or take and give back an ``Allocation`` (exact undo), never deep-copy jobs.
"""

from __future__ import annotations

from typing import ClassVar, cast

import numpy as np
import numpy.typing as npt
from mypy_extensions import mypyc_attr

from phalanx.domain.jobspec import MILLI

__all__ = ["Allocation", "BoolArray", "Capacity", "IntArray", "whole_free"]

IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]

_FEW = 16
"""``give_many`` gives back up to this many allocations one by one."""

_MOVED = 64
"""``Capacity.moved`` is kept up to this many nodes; past it the masks are dropped."""

_PATCH = 8
"""``gpu_rows`` brings its kept rows up to date node by node for up to this many moved nodes
(a start or an end moves one or two); past it, it makes them again."""


@mypyc_attr(allow_interpreted_subclasses=True)
class Allocation:
    """Resources held by one job: the same CPUs and memory on every node it spans.

    Written out by hand (it was a frozen dataclass, whose generated ``__init__`` ran
    interpreted: one per start and per what-if placement): same ``repr``, equality and hash
    (that of the tuple of the five compared fields), pickled as a call of the class. Nothing
    assigns a field after ``__init__``."""

    __match_args__: ClassVar[tuple[str, ...]] = ("nodes", "devices", "milli", "cpus", "mem_mb")
    __slots__ = ("cpus", "devices", "gpus", "mem_mb", "milli", "nodes")

    def __init__(
        self,
        nodes: tuple[int, ...],
        devices: tuple[tuple[int, ...], ...],
        milli: int,
        cpus: int,
        mem_mb: int,
    ) -> None:
        self.nodes = nodes
        self.devices = devices
        """GPU device ids per node (what CUDA_VISIBLE_DEVICES lists)."""
        self.milli = milli
        """0 for whole GPUs; else the job holds this fraction of its single device."""
        self.cpus = cpus
        self.mem_mb = mem_mb
        self.gpus: float = milli / MILLI if milli else float(sum([len(d) for d in devices]))
        """GPUs held, a share counted as its fraction (computed once: read in hot loops)."""

    def _fields(self) -> tuple[tuple[int, ...], tuple[tuple[int, ...], ...], int, int, int]:
        return (self.nodes, self.devices, self.milli, self.cpus, self.mem_mb)

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        assert isinstance(other, Allocation)
        return self is other or self._fields() == other._fields()

    def __hash__(self) -> int:
        return hash(self._fields())

    def __repr__(self) -> str:
        return (
            f"{type(self).__qualname__}(nodes={self.nodes!r}, devices={self.devices!r}, "
            f"milli={self.milli!r}, cpus={self.cpus!r}, mem_mb={self.mem_mb!r}, "
            f"gpus={self.gpus!r})"
        )

    def __reduce__(self) -> tuple[type[Allocation], tuple[object, ...]]:
        # Pickled as a call of the class with its fields (as it was as a dataclass).
        return Allocation, self._fields()

    def gpus_on(self, position: int) -> float:
        return self.milli / MILLI if self.milli else float(len(self.devices[position]))


_ONES: dict[int, IntArray] = {}
"""A row of ones per device count: ``whole_free``'s."""


def whole_free(dev: IntArray) -> IntArray:
    """Whole free devices per row of ``dev``: ``(dev == MILLI).sum(axis=1)``, as a product
    with a row of ones (numpy's reductions along a short axis cost more)."""
    width = dev.shape[1]
    if width == 8:
        # Eight devices a node (the usual): a row of eight bools is one 64-bit word, and its
        # count of ones (set bytes hold 1) is the row's count.
        words: IntArray = np.bitwise_count((dev == MILLI).view(np.uint64)).ravel().astype(np.int64)
        return words
    ones = _ONES.get(width)
    if ones is None:
        ones = _ONES[width] = np.ones(width, dtype=np.int64)
    counts: IntArray = (dev == MILLI) @ ones
    return counts


@mypyc_attr(allow_interpreted_subclasses=True)
class Capacity:
    """Free resources per node. ``dev`` is free thousandths per GPU device (-1: no device)."""

    __slots__ = ("cpus", "dev", "gpus", "masks", "mem", "moved", "rows")

    def __init__(self, gpus: IntArray, cpus: IntArray, mem: IntArray, dev: IntArray) -> None:
        self.gpus = gpus
        """Whole free devices per node (devices with all MILLI free)."""
        self.cpus = cpus
        self.mem = mem
        self.dev = dev
        self.masks: dict[object, tuple[BoolArray, BoolArray, int]] = {}
        """``Occupancy.eligible``'s answers on this capacity: (base mask, mask, length of
        ``moved`` when it was made). Code that writes the arrays directly does so only on a
        fresh copy, before anything asks it for a mask (``nominations``, ``elastic``,
        kueue's)."""
        self.rows: tuple[int, list[int], list[int]] | None = None
        """``gpu_rows``' answer: (length of ``moved`` when it was made, whole free GPUs per
        node, per leaf switch). Same rule as for ``masks``."""
        self.moved: list[int] = []
        """Nodes changed by ``take``/``give`` since the masks (or rows) were made (one entry per
        node of each allocation): a kept mask is brought up to date on those nodes only."""

    def __getstate__(self) -> dict[str, object]:
        # The masks are a cache: not saved.
        return {"gpus": self.gpus, "cpus": self.cpus, "mem": self.mem, "dev": self.dev}

    def __setstate__(self, saved: object) -> None:
        # A snapshot from before ``masks`` (pure Python pickled slots as ``(None, dict)``).
        state = cast(dict[str, IntArray], saved[1] if isinstance(saved, tuple) else saved)
        self.gpus = state["gpus"]
        self.cpus = state["cpus"]
        self.mem = state["mem"]
        self.dev = state["dev"]
        self.masks = {}
        self.rows = None
        self.moved = []

    def copy(self) -> Capacity:
        return Capacity(self.gpus.copy(), self.cpus.copy(), self.mem.copy(), self.dev.copy())

    def minimum(self, other: Capacity) -> Capacity:
        """What is free in both. Whole GPUs are recounted from the devices: a node with one
        free GPU in each need not have one device free in both."""
        dev = np.minimum(self.dev, other.dev)
        return Capacity(
            whole_free(dev),
            np.minimum(self.cpus, other.cpus),
            np.minimum(self.mem, other.mem),
            dev,
        )

    def give_many(self, allocs: list[Allocation]) -> None:
        """``give`` for many allocations at once: a few array operations, not one per GPU."""
        if len(allocs) <= _FEW:
            # A few (a timeline's walk gives back an end or two at a time): scalar by scalar
            # costs less than the fixed cost of the array operations below, up to about a
            # hundred devices (measured compiled: 16 allocations of 2 nodes x 2 devices cost
            # about the same either way). The result is the same.
            for alloc in allocs:
                self._apply(alloc, +1)
            return
        dev_nodes: list[int] = []
        dev_ids: list[int] = []
        amounts: list[int] = []
        nodes: list[int] = []
        cpus: list[int] = []
        mem: list[int] = []
        for alloc in allocs:
            amount = alloc.milli or MILLI
            for node, devices in zip(alloc.nodes, alloc.devices, strict=True):
                for d in devices:
                    dev_nodes.append(node)
                    dev_ids.append(d)
                    amounts.append(amount)
                nodes.append(node)
                cpus.append(alloc.cpus)
                mem.append(alloc.mem_mb)
        if self.masks or self.rows is not None:
            self.masks = {}
            self.rows = None
            self.moved = []
        np.add.at(self.dev, (dev_nodes, dev_ids), amounts)
        np.add.at(self.cpus, nodes, cpus)
        np.add.at(self.mem, nodes, mem)
        touched = sorted(set(nodes))  # np.unique's, for a fraction of its cost
        self.gpus[touched] = whole_free(self.dev[touched])

    def gpu_rows(self, leaf_of: list[int], n_leaves: int) -> tuple[list[int], list[int]]:
        """Whole free GPUs per node (``gpus`` as a list) and their sums per leaf switch
        (``leaf_of``: each node's leaf, of ``n_leaves``): lists the caller reads and neither
        changes nor keeps. Kept and brought up to date on the nodes moved since, as the masks
        are."""
        moved = self.moved
        kept = self.rows
        if kept is not None:
            since, gpus, in_leaf = kept
            if since == len(moved):
                return gpus, in_leaf
            if len(moved) - since <= _PATCH:
                row = self.gpus
                for i in range(since, len(moved)):
                    node = moved[i]
                    free: int = row.item(node)
                    in_leaf[leaf_of[node]] += free - gpus[node]
                    gpus[node] = free
                self.rows = (len(moved), gpus, in_leaf)
                return gpus, in_leaf
        gpus = self.gpus.tolist()
        in_leaf = [0] * n_leaves
        for node, free in enumerate(gpus):
            in_leaf[leaf_of[node]] += free
        self.rows = (len(moved), gpus, in_leaf)
        return gpus, in_leaf

    def take(self, alloc: Allocation) -> None:
        self._apply(alloc, -1)

    def give(self, alloc: Allocation) -> None:
        self._apply(alloc, +1)

    def _apply(self, alloc: Allocation, sign: int) -> None:
        # Scalar by scalar, read with ``item`` (a Python int, no numpy scalar) and written as
        # a Python int: a node has a handful of devices, and a row's ``tolist`` and write
        # back cost more than its few scalars; this runs for every start and end, every
        # what-if.
        if self.masks or self.rows is not None:
            moved = self.moved
            if len(moved) >= _MOVED:
                self.masks = {}
                self.rows = None
                self.moved = []
            else:
                moved.extend(alloc.nodes)
        amount = sign * (alloc.milli or MILLI)
        dev, gpus, cpus, mem = self.dev, self.gpus, self.cpus, self.mem
        d_cpus, d_mem = sign * alloc.cpus, sign * alloc.mem_mb
        for node, devices in zip(alloc.nodes, alloc.devices, strict=True):
            whole = 0
            for d in devices:
                before: int = dev.item(node, d)
                after = before + amount
                dev[node, d] = after
                # A device counts as a whole free GPU only while nothing at all is taken
                # from it.
                whole += (after == MILLI) - (before == MILLI)
            if whole:
                gpus[node] = gpus.item(node) + whole
            if d_cpus:
                cpus[node] = cpus.item(node) + d_cpus
            if d_mem:
                mem[node] = mem.item(node) + d_mem

    def take_devices(self, node: int, count: int, milli: int) -> tuple[int, ...]:
        """Choose device ids on ``node``: the lowest whole free ones, or the best-fitting share."""
        # A node has a handful of devices: a Python scan beats numpy's per-call cost.
        row: list[int] = self.dev[node].tolist()
        if milli:
            # The device with the least left that fits (the lowest id among ties; device 0
            # if none fits, as ``argmin`` over MILLI + 1 everywhere).
            best, least = 0, MILLI + 2
            for d, free in enumerate(row):
                left = free if free >= milli else MILLI + 1
                if left < least:
                    best, least = d, left
            return (best,)
        if count == 0:
            return ()
        chosen = tuple([d for d, free in enumerate(row) if free == MILLI][:count])
        if len(chosen) < count:
            raise ValueError(f"node {node} has {len(chosen)} whole free GPUs, not {count}")
        return chosen
