"""Kueue's flavor assignment, knowing placement: which flavor of each resource group a job
takes, or why none.

For each resource group covering what the job asks, flavors are tried in the ClusterQueue's
order (Kueue's ``flavorassigner``): a flavor fits if every resource of the group fits in
what the queue may still take of it (``QuotaNode.available``), without borrowing if within
its nominal quota. ``flavorFungibility.whenCanBorrow`` picks among the fits as Kueue does:
``MayStopSearch`` takes the first fit, borrowing or not; ``TryNextFlavor`` the first that needs
no borrowing, else the first that does. Beyond Kueue, a fit counts for more where the job
also has a placement now in the flavor's nodes (Kueue #1476, #4329: admitted workloads stuck
on fragmented nodes): Kueue's choice if it has one, else the next fit (in the same order of
preference) that has; if none has, Kueue's choice, where the job then waits for resources
(and may hold a reservation) instead of for quota.

A flavor whose ``nodeTaints`` the job does not tolerate, or that has no node the job may use
(partition, GPU model, features), is skipped, with the reason kept for the message.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from phalanx.domain.queues import ClusterQueue, FungibilityPolicy, ResourceFlavor, ResourceGroup
from phalanx.domain.queues.labels import untolerated
from phalanx.domain.queues.quota import FlavorResource, QuotaNode
from phalanx.domain.state import Reason
from phalanx.policies.clusterqueue.amounts import PODS, label
from phalanx.sched.occupancy import BoolArray

__all__ = ["Assignment", "MaskCache", "Refusal", "assign", "quota_reason"]

_MAX_FLAVOR_REASONS = 3


@dataclass(frozen=True, slots=True)
class Assignment:
    flavors: Mapping[str, str]
    """Resource -> flavor."""
    charge: Mapping[FlavorResource, int]
    nodes: BoolArray | None
    """The nodes of the chosen flavors (None: no flavor narrows anything)."""
    borrowing: bool


@dataclass(frozen=True, slots=True)
class Refusal:
    reason: str
    message: str


def quota_reason(resource: str) -> str:
    """Slurm's pending reason for a group limit on ``resource``."""
    if resource == "cpu":
        return Reason.QUOTA_CPU
    if resource == "memory":
        return Reason.QUOTA_MEM
    return Reason.QUOTA


@dataclass(frozen=True, slots=True)
class _Fit:
    flavor: str
    borrowing: bool
    mask: BoolArray


def assign(
    cq: ClusterQueue,
    node: QuotaNode,
    request: Mapping[str, int],
    flavors: Mapping[str, ResourceFlavor],
    masks: Mapping[str, BoolArray],
    allowed: BoolArray,
    placeable: Callable[[BoolArray], bool],
    within_cache: MaskCache | None = None,
) -> Assignment | Refusal:
    """The flavors ``request`` (resource -> amount) takes in ``cq``, whose quota node is
    ``node``; ``masks`` are the flavors' nodes, ``allowed`` the nodes the job may ever use,
    ``placeable`` whether the job has a placement now within a mask. ``within_cache`` keeps
    each flavor's nodes within a set of allowed nodes (``MaskCache``) across calls."""
    cache: MaskCache = {} if within_cache is None else within_cache
    only = cq.resource_groups
    if len(only) == 1 and len(only[0].flavors) == 1:
        found = _one_flavor(cq, only[0], node, request, flavors, masks, allowed, cache)
        if found is not None:
            return found
    groups: list[ResourceGroup] = []
    for resource in request:
        group = cq.group_of(resource)
        if group is None:
            if resource == PODS:
                continue
            return Refusal(
                Reason.INVALID_ACCOUNT, f"resource {resource} unavailable in ClusterQueue {cq.name}"
            )
        if group not in groups:
            groups.append(group)
    chosen: dict[str, str] = {}
    charge: dict[FlavorResource, int] = {}
    within: BoolArray | None = None
    borrowing = False
    for group in groups:
        asked = {r: request[r] for r in group.covered_resources if r in request}
        base = allowed if within is None else within
        fits, reasons, reason = _fits(cq, node, asked, group, flavors, masks, base, cache)
        if not fits:
            shown = "; ".join(reasons[:_MAX_FLAVOR_REASONS])
            return Refusal(reason, f"couldn't assign flavors to ClusterQueue {cq.name}: {shown}")
        fit = _choose(cq, fits, placeable)
        for resource, amount in asked.items():
            chosen[resource] = fit.flavor
            charge[(fit.flavor, resource)] = amount
        borrowing = borrowing or fit.borrowing
        within = fit.mask
    narrowed = None if within is None or _every(within, cache) else within
    return Assignment(chosen, charge, narrowed, borrowing)


def _one_flavor(
    cq: ClusterQueue,
    group: ResourceGroup,
    node: QuotaNode,
    request: Mapping[str, int],
    flavors: Mapping[str, ResourceFlavor],
    masks: Mapping[str, BoolArray],
    allowed: BoolArray,
    cache: MaskCache,
) -> Assignment | None:
    """``assign``'s answer where ``cq`` has one resource group of one flavor and the request
    fits it (most ClusterQueues, most jobs), without the general walk's lists and choice;
    None where the general walk must answer (a refusal says why in its own words)."""
    covered = group.covered_resources
    for resource in request:
        if resource not in covered and resource != PODS:
            return None  # refused: no group covers it
    name = group.flavors[0].name
    if flavors[name].node_taints:
        return None
    mask, any_ = _within(name, masks, allowed, cache)
    if not any_:
        return None
    charge: dict[FlavorResource, int] = {}
    borrowing = False
    for resource in covered:
        amount = request.get(resource)
        if amount is None:
            continue
        fr = (name, resource)
        if amount > node.available(fr):
            return None
        borrowing = borrowing or node.usage.get(fr, 0) + amount > node.nominal(fr)
        charge[fr] = amount
    if not charge:
        return None  # nothing the group covers: the general walk narrows nothing
    narrowed = None if _every(mask, cache) else mask
    return Assignment({r: name for _, r in charge}, charge, narrowed, borrowing)


MaskCache = dict[tuple[object, int], tuple[BoolArray, BoolArray, bool]]
"""(flavor name or ``every``, id of the allowed nodes) -> (those allowed nodes, the flavor's
nodes among them, whether there are any; for ``every``, whether they are all the nodes).
The allowed masks are the cluster state's own, one object per kind of node a job may use,
so an entry is found again for every job of that kind; keeping the mask in the entry makes
an id reused by another array count as a miss."""


def _within(
    name: str, masks: Mapping[str, BoolArray], base: BoolArray, cache: MaskCache
) -> tuple[BoolArray, bool]:
    found = cache.get((name, id(base)))
    if found is not None and found[0] is base:
        return found[1], found[2]
    mask = masks[name] & base
    any_ = bool(mask.any())
    cache[(name, id(base))] = (base, mask, any_)
    return mask, any_


def _every(mask: BoolArray, cache: MaskCache) -> bool:
    found = cache.get(("every", id(mask)))
    if found is not None and found[0] is mask:
        return found[2]
    every = bool(mask.all())
    cache[("every", id(mask))] = (mask, mask, every)
    return every


def _fits(
    cq: ClusterQueue,
    node: QuotaNode,
    asked: Mapping[str, int],
    group: ResourceGroup,
    flavors: Mapping[str, ResourceFlavor],
    masks: Mapping[str, BoolArray],
    base: BoolArray,
    cache: MaskCache,
) -> tuple[list[_Fit], list[str], str]:
    """Every flavor of ``group`` that ``asked`` fits in, in order, and why the others do not
    (with the pending reason of the first quota that did not fit)."""
    fits: list[_Fit] = []
    reasons: list[str] = []
    reason = Reason.RESOURCES
    for quotas in group.flavors:
        name = quotas.name
        taint = untolerated(flavors[name].node_taints, ())
        if taint is not None:
            reasons.append(f"untolerated taint {taint} in flavor {name}")
            continue
        mask, any_ = _within(name, masks, base, cache)
        if not any_:
            reasons.append(f"flavor {name} has no node the job may use")
            continue
        borrow = False
        short = None
        for resource, amount in asked.items():
            fr = (name, resource)
            if amount > node.available(fr):
                short = _short(cq, node, fr, amount)
                break
            borrow = borrow or node.usage.get(fr, 0) + amount > node.nominal(fr)
        if short is not None:
            if reason is Reason.RESOURCES:
                reason = quota_reason(resource)
            reasons.append(short)
            continue
        fits.append(_Fit(name, borrow, mask))
    return fits, reasons, reason


def _choose(cq: ClusterQueue, fits: list[_Fit], placeable: Callable[[BoolArray], bool]) -> _Fit:
    """Kueue's choice among ``fits`` (module docstring), unless it has no placement now and
    another fit has."""
    if cq.flavor_fungibility.when_can_borrow is FungibilityPolicy.MAY_STOP_SEARCH:
        order = fits
    else:
        order = [f for f in fits if not f.borrowing] + [f for f in fits if f.borrowing]
    if len(order) == 1:
        return order[0]
    for fit in order:
        if placeable(fit.mask):
            return fit
    return order[0]


def _short(cq: ClusterQueue, node: QuotaNode, fr: FlavorResource, amount: int) -> str:
    """Why ``amount`` of ``fr`` does not fit, in quota terms."""
    flavor, resource = fr
    most = node.potential(fr)
    if amount > most:
        return (
            f"{label(amount, resource)} asked, more than ClusterQueue {cq.name} can ever "
            f"have in flavor {flavor} ({label(most, resource)})"
        )
    used, nominal = node.usage.get(fr, 0), node.nominal(fr)
    available = max(0, node.available(fr))
    missing = label(amount - available, resource)
    where = (
        f"ClusterQueue {cq.name} uses {label(used, resource)} of its nominal "
        f"{label(nominal, resource)} in flavor {flavor}"
    )
    if cq.cohort is None:
        return f"{where} and has no cohort to borrow from; {missing} more needed"
    quota = node.quotas.get(fr)
    limit = quota.borrowing_limit if quota is not None else None
    if limit is not None and used - nominal >= limit:
        return f"{where}, at its borrowing limit of {label(limit, resource)}; {missing} more needed"
    lendable = max(0, available - max(0, nominal - used))
    lend = "none" if lendable == 0 else label(lendable, resource)
    return f"{where}, cohort {cq.cohort} has {lend} to lend; {missing} more needed"
