"""The cluster's occupancy: static masks, free capacity, running allocations.

Not a snapshot: the engine keeps one ``Occupancy`` up to date as jobs start and end (it is
what a pass works on); plugins read it and do their what-if work on copies of its
``Capacity``.
"""

from __future__ import annotations

import bisect

import numpy as np
from mypy_extensions import mypyc_attr

from phalanx.domain.cluster import Cluster
from phalanx.domain.jobspec import MILLI
from phalanx.domain.time import Instant
from phalanx.sched.capacity import Allocation, BoolArray, Capacity, IntArray
from phalanx.sched.shape import Shape

__all__ = ["BoolArray", "Occupancy", "Running"]

_MASKS = 64
"""``eligible``'s masks kept at most per capacity."""

_PATCH = 8
"""``eligible`` brings a kept mask up to date node by node for up to this many moved nodes
(a start or an end moves one or two); past it, it makes the mask again."""


@mypyc_attr(allow_interpreted_subclasses=True)
class Running:
    """One running job as the snapshot sees it: its allocation and when it must end by."""

    __slots__ = ("alloc", "end", "job_id")

    def __init__(self, job_id: int, alloc: Allocation, end: Instant) -> None:
        self.job_id = job_id
        self.alloc = alloc
        self.end = end


@mypyc_attr(allow_interpreted_subclasses=True)
class Occupancy:
    """Free resources now plus what the running jobs hold, by node, leaf switch and spine."""

    def __init__(self, cluster: Cluster) -> None:
        self.cluster = cluster
        nodes = cluster.nodes
        self.n = len(nodes)
        self.max_gpus = max((nd.gpus for nd in nodes), default=0)
        self.node_gpus: IntArray = np.array([nd.gpus for nd in nodes], dtype=np.int64)
        self.node_cpus: IntArray = np.array([nd.cpus for nd in nodes], dtype=np.int64)
        self.node_mem: IntArray = np.array([nd.memory_mb for nd in nodes], dtype=np.int64)
        self.leaf_of: IntArray = np.array([nd.leaf for nd in nodes], dtype=np.int64)
        self.leaf_list: list[int] = [nd.leaf for nd in nodes]
        """``leaf_of`` as a list (read node by node in placement's loops)."""
        self.node_ids: IntArray = np.arange(self.n, dtype=np.int64)
        self.total_gpus = int(self.node_gpus.sum())
        self.n_leaves = len(cluster.leaves)
        self.spine_of_leaf: IntArray = np.array(
            [lf.parent if lf.parent is not None else -1 for lf in cluster.leaves], dtype=np.int64
        )
        self.spine_leaves: list[list[int]] = _spine_leaves(self.spine_of_leaf)
        """Per spine (in index order, leaves under none left out), its leaves in order."""
        dev = np.full((self.n, max(self.max_gpus, 1)), -1, dtype=np.int64)
        for nd in nodes:
            dev[nd.index, : nd.gpus] = MILLI
        self.cap = Capacity(self.node_gpus.copy(), self.node_cpus.copy(), self.node_mem.copy(), dev)
        self.up: BoolArray = np.ones(self.n, dtype=np.bool_)
        self._part_masks: dict[str, BoolArray] = {}
        for name, part in cluster.partitions.items():
            mask = np.zeros(self.n, dtype=np.bool_)
            mask[list(part.nodes)] = True
            self._part_masks[name] = mask
        self._masks: dict[tuple[str, frozenset[str], frozenset[str]], BoolArray] = {}
        self._up_masks: dict[tuple[str, frozenset[str], frozenset[str]], BoolArray] = {}
        """``base_mask``'s answers (read-only arrays) while no node goes up or down."""
        self.running: dict[int, Running] = {}
        self._ends: list[tuple[Instant, int]] = []
        self.free_gpus = int(self.node_gpus.sum())
        """Whole free GPUs on nodes that are up: a quick upper bound before placing."""
        self.account_gpus: dict[str, float] = {}
        self.version = 0
        """Bumped on every change (of ``cap`` too), so callers can cache what they derive."""
        self.starts = 0
        """Bumped at every start: with the running jobs' count, tells whether the set of
        running jobs may have changed since (jobs only leave it otherwise)."""
        self.gives = 0
        """Bumped whenever resources come back (an end, a node up): until then, starts can
        only make a blocked job's earliest start later, never earlier."""
        self.bounds: dict[int, tuple[int, Instant | None]] = {}
        """Lower bounds on blocked jobs' starts, with the ``gives`` they were computed at."""
        self._memo: dict[object, object] = {}
        self._memo_version = -1
        self.node_version: list[int] = [0] * self.n
        """Bumped per node whenever its free resources, its runs or its health change."""
        self.node_runs: list[list[tuple[Instant, int, int]]] = [[] for _ in range(self.n)]
        """Per node, its running jobs as (end, job id, whole GPUs held there), soonest first."""
        self.ready: object = None
        """The timeline's per-node ready instants (``phalanx.sched.ready``), kept across
        passes; made on first use."""

    def __getstate__(self) -> dict[str, object]:
        # Compiled (tools/native.py) an Occupancy has no ``__dict__``: mypyc lists its
        # attributes on the class. Either way the state is the same dict of attributes.
        names = getattr(type(self), "__mypyc_attrs__", None)
        if names is None:
            return dict(vars(self))
        return {name: getattr(self, name) for name in names if hasattr(self, name)}

    def __setstate__(self, saved: dict[str, object]) -> None:
        # A snapshot saved before the per-node runs were kept: derived from the running jobs.
        for name, value in saved.items():
            setattr(self, name, value)
        if "_up_masks" not in saved:
            self._up_masks = {}
        if "leaf_list" not in saved:
            self.leaf_list = self.leaf_of.tolist()
            self.spine_leaves = _spine_leaves(self.spine_of_leaf)
        if "node_runs" not in saved:
            self.ready = None
            self.node_version = [0] * self.n
            self.node_runs = [[] for _ in range(self.n)]
            for run in self.running.values():
                self._runs(run.job_id, run.alloc, run.end, add=True)

    def memo(self) -> dict[object, object]:
        """A scratch cache valid while nothing changes (emptied at every new ``version``)."""
        if self._memo_version != self.version:
            self._memo = {}
            self._memo_version = self.version
        return self._memo

    # -- static masks -------------------------------------------------------------------
    def base_mask(self, shape: Shape) -> BoolArray:
        """Nodes of the partition, up, with an allowed GPU model and the features asked (a
        read-only array, kept until a node goes up or down)."""
        key = shape.base_key
        up = self._up_masks.get(key)
        if up is not None:
            return up
        mask = self._masks.get(key)
        if mask is None:
            mask = self._part_masks.get(shape.partition, np.zeros(self.n, dtype=np.bool_)).copy()
            nodes = self.cluster.nodes
            if shape.models:
                mask &= np.array([nd.gpu_model in shape.models for nd in nodes], dtype=np.bool_)
            if shape.features:
                mask &= np.array([shape.features <= nd.features for nd in nodes], dtype=np.bool_)
            self._masks[key] = mask
        up = mask & self.up
        up.flags.writeable = False
        self._up_masks[key] = up
        return up

    def static_mask(self, shape: Shape) -> BoolArray:
        """Like ``base_mask`` but ignoring node health: where the job could ever run."""
        key = shape.base_key
        mask = self._masks.get(key)
        if mask is None:
            self.base_mask(shape)  # made and kept there (its ``up`` copy not needed)
            mask = self._masks[key]
        return mask

    def eligible(self, cap: Capacity, shape: Shape) -> BoolArray:
        """Nodes that can take one node's share of ``shape`` out of ``cap`` (an array the
        caller must not change: kept with ``cap`` until it changes, since a pass asks the
        same of one capacity many times; the base mask itself when ``shape`` needs
        nothing)."""
        base = self.base_mask(shape)
        key = shape.need_key
        if key is None:
            return base
        masks = cap.masks
        hit = masks.get(key)
        if hit is not None and hit[0] is base:  # no node went up or down since
            moved = cap.moved
            since = hit[2]
            if since == len(moved):
                return hit[1]
            if len(moved) - since <= _PATCH:
                # The nodes moved since by ``take``/``give``: only their bits can differ. A
                # new array, as callers may still hold the old one.
                mask = hit[1].copy()
                for i in range(since, len(moved)):
                    node = moved[i]
                    mask[node] = self._fits(cap, shape, base, node)
                masks[key] = (base, mask, len(moved))
                return mask
        mask = base
        if shape.gpus:
            mask = mask & (cap.gpus >= shape.gpus)
        if shape.cpus:
            mask = mask & (cap.cpus >= shape.cpus)
        if shape.mem_mb:
            mask = mask & (cap.mem >= shape.mem_mb)
        if shape.milli:
            mask = mask & (cap.dev >= shape.milli).any(axis=1)
        if shape.exclusive:
            mask = mask & (cap.gpus == self.node_gpus) & (cap.cpus == self.node_cpus)
        if len(masks) >= _MASKS:
            masks.clear()
        masks[key] = (base, mask, len(cap.moved))
        return mask

    def _fits(self, cap: Capacity, shape: Shape, base: BoolArray, node: int) -> bool:
        """``eligible``'s answer for one node: the same tests, on scalars."""
        if not base.item(node):
            return False
        if shape.gpus and cap.gpus.item(node) < shape.gpus:
            return False
        if shape.cpus and cap.cpus.item(node) < shape.cpus:
            return False
        if shape.mem_mb and cap.mem.item(node) < shape.mem_mb:
            return False
        if shape.milli:
            row: list[int] = cap.dev[node].tolist()
            if not any([free >= shape.milli for free in row]):
                return False
        if shape.exclusive:
            if cap.gpus.item(node) != self.node_gpus.item(node):
                return False
            if cap.cpus.item(node) != self.node_cpus.item(node):
                return False
        return True

    # -- allocations --------------------------------------------------------------------
    def allocation(self, cap: Capacity, shape: Shape, nodes: list[int]) -> Allocation:
        """Turn a node choice into an allocation with device ids (exclusive takes all)."""
        if shape.exclusive:
            # All of each node, CPUs and memory too, as Slurm gives an --exclusive job: no
            # other job, GPU or CPU-only, may share it. (One CPU and memory figure serves all
            # the nodes of an allocation: across unequal nodes, the smallest's.)
            devices = tuple(cap.take_devices(i, int(cap.gpus[i]), 0) for i in nodes)
            cpus = int(min(cap.cpus[i] for i in nodes))
            mem = int(min(cap.mem[i] for i in nodes))
            return Allocation(tuple(nodes), devices, 0, cpus, mem)
        devices = tuple(cap.take_devices(i, shape.gpus, shape.milli) for i in nodes)
        return Allocation(tuple(nodes), devices, shape.milli, shape.cpus, shape.mem_mb)

    def take(self, alloc: Allocation) -> None:
        """Take an allocation out of the free capacity (a start, or a k8s pod held)."""
        self.cap.take(alloc)
        self._count(alloc, -1)
        self._touch(alloc)
        self.version += 1

    def give(self, alloc: Allocation) -> None:
        self.cap.give(alloc)
        self._count(alloc, +1)
        self._touch(alloc)
        self.gives += 1
        self.version += 1

    def _touch(self, alloc: Allocation) -> None:
        versions = self.node_version
        for node in alloc.nodes:
            versions[node] += 1

    def _runs(self, job_id: int, alloc: Allocation, end: Instant, add: bool) -> None:
        """Add (or remove) a run in its nodes' ``node_runs``."""
        whole = 0 if alloc.milli else 1
        for node, devices in zip(alloc.nodes, alloc.devices, strict=True):
            runs = self.node_runs[node]
            if add:
                bisect.insort(runs, (end, job_id, len(devices) * whole))
            else:
                del runs[bisect.bisect_left(runs, (end, job_id))]
            self.node_version[node] += 1

    def _count(self, alloc: Allocation, sign: int) -> None:
        if alloc.milli:
            # A shared device stops (or starts) counting as a whole free GPU: recount.
            self.free_gpus = int(self.cap.gpus[self.up].sum())
            return
        up = self.up
        for node, devices in zip(alloc.nodes, alloc.devices, strict=True):
            if up.item(node):
                self.free_gpus += sign * len(devices)

    def start(self, job_id: int, account: str, alloc: Allocation, end: Instant) -> None:
        self.take(alloc)
        self.starts += 1
        self.running[job_id] = Running(job_id, alloc, end)
        bisect.insort(self._ends, (end, job_id))
        self._runs(job_id, alloc, end, add=True)
        self.account_gpus[account] = self.account_gpus.get(account, 0.0) + alloc.gpus
        self.version += 1

    def finish(self, job_id: int, account: str) -> Allocation:
        run = self.running.pop(job_id)
        self.give(run.alloc)
        i = bisect.bisect_left(self._ends, (run.end, job_id))
        del self._ends[i]
        self._runs(job_id, run.alloc, run.end, add=False)
        self.account_gpus[account] = self.account_gpus.get(account, 0.0) - run.alloc.gpus
        self.version += 1
        return run.alloc

    def resize(self, job_id: int, account: str, alloc: Allocation) -> Allocation:
        """A running job now holds ``alloc`` instead (an elastic job grown or shrunk): the
        old allocation is given back and the new one taken, its end kept. Return the old."""
        run = self.running[job_id]
        old = run.alloc
        self._runs(job_id, old, run.end, add=False)
        self.give(old)
        self.take(alloc)
        run.alloc = alloc
        self._runs(job_id, alloc, run.end, add=True)
        self.account_gpus[account] = self.account_gpus.get(account, 0.0) - old.gpus + alloc.gpus
        self.version += 1
        return old

    def expect_end(self, job_id: int, end: Instant) -> None:
        """A running job will end by ``end`` (a preemption's kill), sooner than its limit."""
        run = self.running[job_id]
        if end >= run.end:
            return
        i = bisect.bisect_left(self._ends, (run.end, job_id))
        del self._ends[i]
        self._runs(job_id, run.alloc, run.end, add=False)
        run.end = end
        bisect.insort(self._ends, (end, job_id))
        self._runs(job_id, run.alloc, end, add=True)
        self.version += 1

    def set_up(self, node: int, up: bool) -> None:
        if bool(self.up[node]) == up:
            return
        self.up[node] = up
        self._up_masks.clear()
        self.node_version[node] += 1
        self.free_gpus = int(self.cap.gpus[self.up].sum())
        if up:
            self.gives += 1
        self.version += 1

    def ends(self) -> list[tuple[Instant, int]]:
        """Running jobs as (latest end by time limit, job id), soonest first."""
        return self._ends

    def gpus_in_use(self) -> float:
        return sum(r.alloc.gpus for r in self.running.values())

    def capacity_gpus(self, shape: Shape) -> int:
        """Most whole GPUs per node any eligible node has in total (ignoring use)."""
        mask = self.static_mask(shape)
        return int(self.node_gpus[mask].max()) if mask.any() else 0


def _spine_leaves(spine_of_leaf: IntArray) -> list[list[int]]:
    spine_of: list[int] = spine_of_leaf.tolist()
    spines = sorted({spine for spine in spine_of if spine >= 0})
    return [[leaf for leaf, s in enumerate(spine_of) if s == spine] for spine in spines]
