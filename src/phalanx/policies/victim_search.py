"""The victim search of ``preempt/checkpoint`` (and ``preempt/clusterqueue``, with a quota as
its budget): candidates added in the order given until the job fits, then those not needed
dropped, dearest first (``search``). Each step is a what-if on a copy of the free capacity.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

import numpy as np

from phalanx.domain.time import Instant
from phalanx.sched.capacity import Allocation, Capacity
from phalanx.sched.context import PassContext
from phalanx.sched.job import Job
from phalanx.sched.occupancy import Occupancy

__all__ = ["VictimBudget", "lost_work", "search"]


class VictimBudget(Protocol):
    """What a victim set must free besides a placement (``search``): a
    ClusterQueue's quota. Candidates come in the order they are tried; ``take`` and ``put``
    are what-ifs the search undoes before it returns."""

    placed: bool
    """Whether the job must also have a placement once the victims are gone."""

    def may_take(self, victim: Job) -> bool:
        """Whether ``victim`` may go, given those taken so far (Kueue: a victim of another
        ClusterQueue only while that queue still borrows)."""

    def take(self, victim: Job) -> None: ...
    def put(self, victim: Job) -> None: ...
    def enough(self) -> bool:
        """Whether the job's quota fits with the victims taken gone."""

    def capacity(self, cap: Capacity) -> Capacity:
        """Where the job may be placed in ``cap`` (its flavors' nodes)."""


def lost_work(job: Job, now: Instant) -> float:
    """GPU-ms a preemption at ``now`` would throw away."""
    if job.start is None or job.alloc is None:
        return 0.0
    ran = now - job.start
    interval = job.spec.checkpoint_interval
    since = ran % interval if interval else ran
    return job.alloc.gpus * since


def search(
    job: Job,
    ctx: PassContext,
    candidates: list[Job],
    can: bool,
    budget: VictimBudget | None,
    max_ratio: float | None,
    covered_gpus: float | None,
) -> list[Job] | None:
    """The victims among ``candidates`` (not empty), added cheapest first until ``job``
    fits, then those not needed dropped, dearest first; None if it never fits.

    With a ``budget`` (a ClusterQueue's quota), a candidate is added only if the budget
    lets it go, the job fits only once the budget says ``enough`` too, and it is placed
    in the budget's ``capacity`` (its flavors' nodes; with ``placed`` False, not placed
    at all: Kueue frees quota, not a placement). The budget is left as it was found."""
    now = ctx.now
    placed = budget is None or budget.placed
    # Whole GPUs free once the victims so far are gone, at most (a shared device counted
    # as if it became whole): while fewer than the job needs, placing cannot succeed and
    # is not tried. Not with a switch limit, whose failed placement asks for a wake-up.
    counting = placed and job.shape.switches is None
    need = job.shape.nodes_min * job.shape.gpus
    could = ctx.state.free_gpus
    if counting and could + sum(_devices(r) for r in candidates) < need:
        return None
    if (
        max_ratio is not None
        and not can
        and min(r.alloc.gpus if r.alloc else 0.0 for r in candidates)
        > max_ratio * job.shape.gpu_equivalent(job.shape.nodes_min)
        and ctx.leaf_limit(job) is None
    ):
        # Any victim set frees at least its smallest member's GPUs: over the ratio, the
        # search below could only end in no victims (so it is not made; without a leaf
        # limit, its placements would have asked for no wake-up either).
        return None
    # A placement of whole GPUs takes ``gpus`` whole free ones on each of at least
    # ``nodes_min`` nodes (``Occupancy.allocation``; holds only take more away): while
    # fewer nodes of ``cap`` have that many, ``fits`` can only say no, and without a leaf
    # limit a placement that fails asks for no wake-up, so it is not tried. Giving back
    # only adds whole GPUs: if too few nodes could have them with every candidate gone,
    # no placement is tried at all, and the search ends in None. Else ``qualified`` counts
    # those nodes (-1: not counted yet), kept up to date at every give and take.
    shape = job.shape
    per_node = (
        shape.gpus
        if budget is None
        and shape.gpus > 0
        and not shape.milli
        and not shape.exclusive
        and ctx.leaf_limit(job) is None
        else 0
    )
    nodes_min = shape.nodes_min
    if per_node and not _could_hold(ctx.state, candidates, per_node, nodes_min):
        return None
    qualified = -1
    if budget is None:
        candidates.sort(key=lambda r: (lost_work(r, now), -(r.alloc.gpus if r.alloc else 0), r.seq))
    cap = ctx.state.cap.copy()

    def fits() -> bool:
        if budget is None:
            return ctx.place(job, cap) is not None
        if not budget.enough():
            return False
        return not placed or ctx.place(job, budget.capacity(cap)) is not None

    chosen: list[Job] = []
    for r in candidates:
        alloc = r.alloc
        assert alloc is not None
        if budget is not None:
            if not budget.may_take(r):
                continue
            budget.take(r)
        if qualified >= 0:
            qualified -= _qualified_of(cap, alloc, per_node)
            cap.give(alloc)
            qualified += _qualified_of(cap, alloc, per_node)
        else:
            cap.give(alloc)
        chosen.append(r)
        could += _devices(r)
        if counting and could < need:
            continue
        if per_node:
            if qualified < 0:
                qualified = int(np.count_nonzero(cap.gpus >= per_node))
            if qualified < nodes_min:
                continue
        if fits():
            break
    else:
        if budget is not None:
            for r in chosen:
                budget.put(r)
        return None
    if per_node and qualified < 0:
        qualified = int(np.count_nonzero(cap.gpus >= per_node))
    for r in sorted(chosen, key=lambda r: (-lost_work(r, now), r.seq)):
        alloc = r.alloc
        assert alloc is not None
        qualified = _moved(cap, alloc, per_node, qualified, cap.take)
        if budget is not None:
            budget.put(r)
        if (not per_node or qualified >= nodes_min) and fits():
            chosen.remove(r)
            continue
        qualified = _moved(cap, alloc, per_node, qualified, cap.give)
        if budget is not None:
            budget.take(r)
    if budget is not None:
        for r in chosen:
            budget.put(r)
    if max_ratio is not None and not can and not _worth_it(job, chosen, max_ratio):
        return None
    if (
        covered_gpus is not None
        and not can
        and placed
        and not _restart_covered(job, ctx, cap, chosen, budget, covered_gpus)
    ):
        return None
    return chosen


def _restart_covered(
    job: Job,
    ctx: PassContext,
    cap: Capacity,
    victims: list[Job],
    budget: VictimBudget | None,
    covered_gpus: float,
) -> bool:
    """Whether every victim over ``covered_gpus`` GPUs (``covered_victim_gpus``) fits in
    ``cap`` (the victims gone) once the job and the victims placed before it are placed
    there."""
    big = [v for v in victims if v.alloc is not None and v.alloc.gpus > covered_gpus]
    if not big:
        return True
    room = cap.copy()
    alloc = ctx.place(job, room if budget is None else budget.capacity(room))
    if alloc is None:
        return False
    room.take(alloc)
    for v in big:
        assert v.alloc is not None
        again = ctx.place_shape(v.shape, len(v.alloc.nodes), room)
        if again is None:
            return False
        room.take(again)
    return True


def _worth_it(job: Job, victims: list[Job], max_ratio: float) -> bool:
    """Whether cheap victims free no more than ``max_ratio`` GPUs per GPU the job asks
    (``max_victim_gpu_ratio``; checked only for opportunistic preemption: QOS and tiers
    preempt regardless)."""
    freed = sum(v.alloc.gpus for v in victims if v.alloc is not None)
    return freed <= max_ratio * job.shape.gpu_equivalent(job.shape.nodes_min)


def _could_hold(state: Occupancy, candidates: list[Job], gpus: int, nodes: int) -> bool:
    """Whether at least ``nodes`` nodes could have ``gpus`` whole free GPUs once every
    candidate is gone (at most: each device a candidate holds counted as if it became whole).
    The free capacity's whole free GPUs by node, and the count of nodes with ``gpus`` of
    them, are kept in the state's memo."""
    memo = state.memo()
    key = ("nodes with whole free GPUs", gpus)
    found = memo.get(key)
    if found is None:
        free_now = memo.get("whole free GPUs by node")
        if free_now is None:
            free_now = memo["whole free GPUs by node"] = state.cap.gpus.tolist()
        assert isinstance(free_now, list)
        found = memo[key] = (free_now, sum(1 for f in free_now if f >= gpus))
    assert isinstance(found, tuple)
    free: list[int] = found[0]
    count: int = found[1]
    if count >= nodes:
        return True
    # Whole free GPUs by node with the candidates so far gone, at most: a node counts once
    # it reaches ``gpus`` from below.
    more = list(free)
    for r in candidates:
        alloc = r.alloc
        if alloc is None:
            continue
        devices = alloc.devices
        for i, node in enumerate(alloc.nodes):
            was = more[node]
            now = was + len(devices[i])
            more[node] = now
            if was < gpus <= now:
                count += 1
                if count >= nodes:
                    return True
    return False


def _qualified_of(cap: Capacity, alloc: Allocation, gpus: int) -> int:
    """How many of ``alloc``'s nodes have at least ``gpus`` whole free GPUs in ``cap``."""
    free = cap.gpus
    return sum(1 for node in alloc.nodes if free.item(node) >= gpus)


def _devices(job: Job) -> int:
    """GPU devices a running job holds (whole, or a share of one)."""
    alloc = job.alloc
    return sum(len(d) for d in alloc.devices) if alloc is not None else 0


def _moved(
    cap: Capacity,
    alloc: Allocation,
    per_node: int,
    qualified: int,
    move: Callable[[Allocation], None],
) -> int:
    """``move`` (take or give) ``alloc`` on ``cap``; the count of nodes with ``per_node`` GPUs
    free kept in step on the nodes it touched (not kept without ``per_node``)."""
    if not per_node:
        move(alloc)
        return qualified
    qualified -= _qualified_of(cap, alloc, per_node)
    move(alloc)
    return qualified + _qualified_of(cap, alloc, per_node)
