"""When each node could first hold one node's share of a shape, kept across passes.

A blocked job's lower bound on its start (``Timeline.lower_bound`` with nothing reserved) is
the first instant at which enough nodes could hold it by counts, running jobs releasing what
they hold at their time limits. That instant is the ``nodes_min``-th earliest of the nodes'
own "ready" instants, and a node's ready instant depends on that node alone: its free
resources, whether it is up, and the runs on it. A start, an end or a node going down changes
a few nodes, so the ready instants are kept per shape and recomputed only for the nodes whose
``Occupancy.node_version`` moved: a pass costs a check per node, not a walk over every running
job's allocation (which a deep, busy cluster paid after every change).
"""

from __future__ import annotations

import bisect

from mypy_extensions import mypyc_attr

from phalanx.domain.time import Duration, Instant
from phalanx.sched.occupancy import Occupancy
from phalanx.sched.shape import Shape

__all__ = ["ReadyIndex"]

_NOW = -(1 << 62)
"""A node that fits already."""
_NEVER = 1 << 62
"""A node that cannot fit even with every run on it gone (or is out of the shape's nodes)."""

_FEW = 8
"""Up to this many nodes moved, each reads its own scalar of the shape's nodes."""

_SHAPES = 256
"""Per-node needs kept at most (each costs three lists of a node count at most)."""


class _Ready:
    """One shape's ready instants per node, the ``node_version`` each was computed at, and
    kept up to date with them: how many nodes fit now, and the other finite instants sorted
    (so that a bound costs a look-up, not a sort of every node's)."""

    __slots__ = ("later", "now", "ready", "seen")

    def __init__(self, n: int) -> None:
        self.seen = [-1] * n
        self.ready = [_NEVER] * n
        self.now = 0
        self.later: list[int] = []


@mypyc_attr(allow_interpreted_subclasses=True)
class ReadyIndex:
    """Per (nodes a shape may use, per-node need, resolution): each node's ready instant and
    the ``node_version`` it was computed at."""

    _kept: dict[object, _Ready] | None = None
    """The entries (a class default: an index pickled with its earlier form, ``_ready``,
    starts over with this one)."""

    def __init__(self, state: Occupancy) -> None:
        self.state = state
        self._kept = {}

    def lower_bound(self, shape: Shape, resolution: Duration, first: Instant) -> Instant | None:
        """``Timeline._candidates``' first instant with no reservation, from ``first`` on:
        running jobs' ends rounded up to ``resolution``, the first end once enough nodes fit
        now; None if not enough nodes ever fit (or nothing runs)."""
        state = self.state
        ends = state.ends()
        if not ends:
            return None  # the walk has no instant to offer
        k = shape.nodes_min
        if not (shape.milli or shape.exclusive):
            entry = self._nodes(shape, resolution)
            fit_now = entry.now
            if fit_now < k:
                later = entry.later
                need = k - fit_now
                if len(later) < need:
                    return None
                t = later[need - 1]
                return t if t > first else first
        # Enough now (or shares and exclusive nodes, which the walk does not count): the first
        # instant the walk tries.
        t = ends[0][0]
        if resolution > 1:
            t = -(-t // resolution) * resolution
        return t if t > first else first

    def _nodes(self, shape: Shape, resolution: Duration) -> _Ready:
        state = self.state
        mask = (shape.partition, shape.models, shape.features)
        key = (mask, shape.gpus, shape.cpus, shape.mem_mb, resolution)
        kept = self._kept
        if kept is None:
            kept = self._kept = {}
        entry = kept.get(key)
        n = state.n
        if entry is None:
            if len(kept) >= _SHAPES:
                kept.clear()  # a long-lived controller sees many shapes: start over
            entry = kept[key] = _Ready(n)
        seen = entry.seen
        versions = state.node_version
        if seen == versions:
            return entry
        # The nodes that moved: compiled (tools/native.py), a loop over indices into the two
        # lists of ints costs less than a comprehension over ``zip``'s pairs.
        moved = [node for node in range(n) if seen[node] != versions[node]]
        base = state.base_mask(shape)
        # A few nodes (a start or an end between passes): their scalars; else the row.
        ok: list[bool] = base.tolist() if len(moved) > _FEW else []
        ready, later = entry.ready, entry.later
        for node in moved:
            old = ready[node]
            allowed: bool = ok[node] if ok else base.item(node)
            new = self._node(node, shape, resolution) if allowed else _NEVER
            if new != old:
                if old == _NOW:
                    entry.now -= 1
                elif old != _NEVER:
                    del later[bisect.bisect_left(later, old)]
                if new == _NOW:
                    entry.now += 1
                elif new != _NEVER:
                    bisect.insort(later, new)
                ready[node] = new
            seen[node] = versions[node]
        return entry

    def _node(self, node: int, shape: Shape, resolution: Duration) -> int:
        """When ``node`` could first hold one node's share of ``shape`` (as the walk counts)."""
        state = self.state
        cap = state.cap
        g, c, m = shape.gpus, shape.cpus, shape.mem_mb
        # (``item``: a Python int, no numpy scalar made and converted.)
        gn: int = cap.gpus.item(node)
        cn: int = cap.cpus.item(node)
        mn: int = cap.mem.item(node)
        if gn >= g and cn >= c and mn >= m:
            return _NOW
        running = state.running
        for end, job_id, whole in state.node_runs[node]:
            alloc = running[job_id].alloc
            gn += whole
            cn += alloc.cpus
            mn += alloc.mem_mb
            if gn >= g and cn >= c and mn >= m:
                if resolution > 1:
                    return -(-end // resolution) * resolution
                return end
        return _NEVER
