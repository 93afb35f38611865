"""Free resources per node as arrays, and allocations that take from them and give back.

Placement, backfill and preemption all ask "what if": they copy a ``Capacity`` (a few numpy
arrays, cheap) or take and give back an ``Allocation`` (exact undo), never deep-copy jobs.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt
from mypy_extensions import mypyc_attr

from phalanx.domain.jobspec import MILLI

__all__ = ["Allocation", "Capacity", "IntArray"]

IntArray = npt.NDArray[np.int64]

_FEW = 4
"""``give_many`` gives back up to this many allocations one by one."""


@mypyc_attr(allow_interpreted_subclasses=True)
@dataclass(frozen=True, slots=True)
class Allocation:
    """Resources held by one job: the same CPUs and memory on every node it spans."""

    nodes: tuple[int, ...]
    devices: tuple[tuple[int, ...], ...]
    """GPU device ids per node (what CUDA_VISIBLE_DEVICES lists)."""
    milli: int
    """0 for whole GPUs; else the job holds this fraction of its single device."""
    cpus: int
    mem_mb: int
    gpus: float = field(init=False, compare=False)
    """GPUs held, a share counted as its fraction (computed once: read in hot loops)."""

    def __post_init__(self) -> None:
        held = self.milli / MILLI if self.milli else float(sum(len(d) for d in self.devices))
        object.__setattr__(self, "gpus", held)

    def __reduce__(self) -> tuple[type[Allocation], tuple[object, ...]]:
        # Pickled as a call of the class with its fields: compiled (tools/native.py), the
        # default unpickling would set them through the frozen class's ``__setattr__``.
        return Allocation, (self.nodes, self.devices, self.milli, self.cpus, self.mem_mb)

    def gpus_on(self, position: int) -> float:
        return self.milli / MILLI if self.milli else float(len(self.devices[position]))


@mypyc_attr(allow_interpreted_subclasses=True)
class Capacity:
    """Free resources per node. ``dev`` is free thousandths per GPU device (-1: no device)."""

    __slots__ = ("cpus", "dev", "gpus", "mem")

    def __init__(self, gpus: IntArray, cpus: IntArray, mem: IntArray, dev: IntArray) -> None:
        self.gpus = gpus
        """Whole free devices per node (devices with all MILLI free)."""
        self.cpus = cpus
        self.mem = mem
        self.dev = dev

    def copy(self) -> Capacity:
        return Capacity(self.gpus.copy(), self.cpus.copy(), self.mem.copy(), self.dev.copy())

    def minimum(self, other: Capacity) -> Capacity:
        """What is free in both. Whole GPUs are recounted from the devices: a node with one
        free GPU in each need not have one device free in both."""
        dev = np.minimum(self.dev, other.dev)
        return Capacity(
            (dev == MILLI).sum(axis=1),
            np.minimum(self.cpus, other.cpus),
            np.minimum(self.mem, other.mem),
            dev,
        )

    def give_many(self, allocs: list[Allocation]) -> None:
        """``give`` for many allocations at once: a few array operations, not one per GPU."""
        if len(allocs) <= _FEW:
            # A few (a timeline's walk gives back an end or two at a time): row by row costs
            # less than the fixed cost of the array operations below. The result is the same.
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
        np.add.at(self.dev, (dev_nodes, dev_ids), amounts)
        np.add.at(self.cpus, nodes, cpus)
        np.add.at(self.mem, nodes, mem)
        touched = np.unique(np.asarray(nodes, dtype=np.int64))
        self.gpus[touched] = (self.dev[touched] == MILLI).sum(axis=1)

    def take(self, alloc: Allocation) -> None:
        self._apply(alloc, -1)

    def give(self, alloc: Allocation) -> None:
        self._apply(alloc, +1)

    def _apply(self, alloc: Allocation, sign: int) -> None:
        # Several devices on a node: its row is read and written back once, as a Python
        # list, since each numpy scalar read or write costs about as much as a whole row's (a
        # node has a handful of devices); this runs for every start and end, every what-if.
        amount = sign * (alloc.milli or MILLI)
        dev, gpus, cpus, mem = self.dev, self.gpus, self.cpus, self.mem
        d_cpus, d_mem = sign * alloc.cpus, sign * alloc.mem_mb
        for node, devices in zip(alloc.nodes, alloc.devices, strict=True):
            if len(devices) == 1:
                # One device (most jobs): two scalar accesses cost less than the row's two.
                d = devices[0]
                before = int(dev[node, d])
                after = before + amount
                dev[node, d] = after
                whole = (after == MILLI) - (before == MILLI)
                if whole:
                    gpus[node] += whole
            elif devices:
                row = dev[node].tolist()
                whole = 0
                for d in devices:
                    before = row[d]
                    after = row[d] = before + amount
                    # A device counts as a whole free GPU only while nothing at all is taken
                    # from it.
                    whole += (after == MILLI) - (before == MILLI)
                dev[node] = row
                if whole:
                    gpus[node] += whole
            if d_cpus:
                cpus[node] += d_cpus
            if d_mem:
                mem[node] += d_mem

    def take_devices(self, node: int, count: int, milli: int) -> tuple[int, ...]:
        """Choose device ids on ``node``: the lowest whole free ones, or the best-fitting share."""
        row = self.dev[node]
        if milli:
            fits = np.where(row >= milli, row, MILLI + 1)
            best = int(np.argmin(fits))
            return (best,)
        if count == 0:
            return ()
        # A node has a handful of devices: a Python scan beats numpy's per-call cost.
        chosen = tuple([d for d, free in enumerate(row.tolist()) if free == MILLI][:count])
        if len(chosen) < count:
            raise ValueError(f"node {node} has {len(chosen)} whole free GPUs, not {count}")
        return chosen
