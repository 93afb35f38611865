"""Kueue's fair sharing (docs ``concepts/fair_sharing``): each ClusterQueue's weighted share
of what its cohort lends, the admission order it gives, and the test fair preemption makes.

On only when the queues file's Kueue ``Configuration`` says ``fairSharing.enable: true``
(``Queues.fair_sharing``). A ClusterQueue's share is its dominant resource share: for each
resource, what it uses above its subtree quota (summed over flavors) over what the root of
its cohort tree holds of that resource (its subtree quota, lending limits applied), the
largest ratio over resources, in thousandths, times 1000 over the queue's
``fairSharing.weight`` in thousandths. A queue with no cohort has share 0; one of weight 0
that borrows anything has the largest share (it borrows last and is preempted first).
This is the integer Kueue reports as ``status.fairSharing.weightedShare``.

Simplified: shares are compared between ClusterQueues only (Kueue also compares Cohorts, by
their own weights, level by level in a hierarchy), and the preemptor's share after admission
charges its request to the first flavor of each group that has quota for it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from mypy_extensions import mypyc_attr

from phalanx.domain.queues import ClusterQueue, FairSharingStrategy
from phalanx.domain.queues.quota import FlavorResource, QuotaNode
from phalanx.policies.clusterqueue.admission import ClusterQueueAdmission, Static
from phalanx.policies.clusterqueue.assign import Assignment, assign
from phalanx.sched.context import PassContext
from phalanx.sched.job import Job

__all__ = ["UNBOUNDED", "fair_order", "guess_charge", "may_preempt_from", "share"]

UNBOUNDED = 2**63 - 1
"""The share of a weight-0 queue that borrows (Kueue's ``math.MaxInt``, on 64 bits)."""

_PER_MILLE = 1000


def share(node: QuotaNode, weight: float, delta: Mapping[FlavorResource, int] | None = None) -> int:
    """``node``'s weighted share (module docstring), with ``delta`` added to its usage
    (negative amounts: taken away). Reads the tree; changes nothing."""
    if node.parent is None:
        return 0
    delta = delta or {}
    borrowed: dict[str, int] = {}
    for fr, quota in node.subtree.items():
        over = node.usage.get(fr, 0) + delta.get(fr, 0) - quota
        if over > 0:
            borrowed[fr[1]] = borrowed.get(fr[1], 0) + over
    if not borrowed:
        return 0
    milli_weight = round(weight * _PER_MILLE)
    if milli_weight <= 0:
        return UNBOUNDED
    lend = node.lendable
    dominant = max(
        (amount * _PER_MILLE // lend[r] for r, amount in borrowed.items() if lend.get(r, 0) > 0),
        default=0,
    )
    return dominant * _PER_MILLE // milli_weight


def guess_charge(
    cq: ClusterQueue, node: QuotaNode, request: Mapping[str, int]
) -> dict[FlavorResource, int]:
    """``request`` charged to the first flavor of each resource's group with quota for it
    (the group's first flavor if none has): the preemptor's share before its flavors are
    known."""
    out: dict[FlavorResource, int] = {}
    for resource, amount in request.items():
        group = cq.group_of(resource)
        if group is None:
            continue
        names = [f.name for f in group.flavors]
        flavor = next((f for f in names if node.nominal((f, resource)) > 0), names[0])
        out[(flavor, resource)] = amount
    return out


def may_preempt_from(
    strategy: FairSharingStrategy, mine_after: int, theirs_before: int, theirs_after: int
) -> bool:
    """Whether a preemptor whose queue's share would be ``mine_after`` once admitted may
    take a workload from a borrowing queue whose share goes from ``theirs_before`` to
    ``theirs_after`` without it."""
    if strategy is FairSharingStrategy.LESS_THAN_OR_EQUAL_TO_FINAL_SHARE:
        return mine_after <= theirs_after
    return mine_after < theirs_before


@mypyc_attr(allow_interpreted_subclasses=True)
class _Lane:
    """One ClusterQueue's jobs, last to take first, and its head's share while it holds."""

    __slots__ = ("cq", "jobs", "known", "node")

    def __init__(self, cq: ClusterQueue, node: QuotaNode) -> None:
        self.cq = cq
        self.node = node
        self.jobs: list[tuple[int, int, Job]] = []
        """(minus priority, position, job), sorted so that ``pop`` gives the next."""
        self.known: tuple[int, int, dict[FlavorResource, int], int] | None = None
        """(head's position, its cohort tree's version, its charge ({} where it does not
        fit), the queue's share after admitting it)."""


def fair_order(
    admission: ClusterQueueAdmission, jobs: Sequence[Job], ctx: PassContext
) -> list[Job]:
    """``jobs`` (in queue order) as fair sharing admits them: each ClusterQueue's in
    Kueue's order (priority, then queue order); across queues, next the head whose queue
    would have the lowest share after admitting it (ties: priority, then queue order),
    its charge then counted as if admitted, so the shares move as the pass admits. Jobs
    no queue takes come last. The pass's quota tree is left as it was found."""
    static, _ = admission.accounting(ctx)
    queues = ctx.cluster.queues
    lanes: dict[str, _Lane] = {}
    orphans: list[Job] = []
    for position, job in enumerate(jobs):
        cq, _ = static.target(queues, job)
        if cq is None:
            orphans.append(job)
            continue
        lane = lanes.get(cq.name)
        if lane is None:
            lane = lanes[cq.name] = _Lane(cq, static.tree.queues[cq.name])
        lane.jobs.append((-queues.priority_of(job.spec), position, job))
    for lane in lanes.values():
        lane.jobs.sort(reverse=True)
    versions: dict[int, int] = {}
    added: list[tuple[QuotaNode, dict[FlavorResource, int]]] = []
    out: list[Job] = []
    try:
        while lanes:
            best: tuple[tuple[int, int, int], str] | None = None
            for name, lane in lanes.items():
                prio, position, job = lane.jobs[-1]
                version = versions.get(id(lane.node.cohort_root()), 0)
                known = lane.known
                if known is None or known[0] != position or known[1] != version:
                    charge = _charge(static, lane, job, ctx)
                    after = share(lane.node, lane.cq.fair_sharing_weight, charge)
                    known = lane.known = (position, version, charge, after)
                key = (known[3], prio, position)
                if best is None or key < best[0]:
                    best = (key, name)
            assert best is not None
            lane = lanes[best[1]]
            out.append(lane.jobs.pop()[2])
            assert lane.known is not None
            charge = lane.known[2]
            if charge:
                for fr, amount in charge.items():
                    lane.node.add(fr, amount)
                added.append((lane.node, charge))
                root = id(lane.node.cohort_root())
                versions[root] = versions.get(root, 0) + 1
            if not lane.jobs:
                del lanes[best[1]]
    finally:
        for node, charge in reversed(added):  # last in, first out: the tree as it was
            for fr, amount in charge.items():
                node.remove(fr, amount)
    return out + orphans


def _charge(static: Static, lane: _Lane, job: Job, ctx: PassContext) -> dict[FlavorResource, int]:
    """What admitting ``job`` would charge its queue now ({} if it does not fit)."""
    result = assign(
        lane.cq,
        lane.node,
        static.request(job),
        ctx.cluster.queues.flavors,
        static.masks,
        ctx.state.static_mask(job.shape),
        lambda mask: True,
        static.within,
    )
    return dict(result.charge) if isinstance(result, Assignment) else {}
