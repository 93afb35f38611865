"""When a job waiting for ClusterQueue quota may expect it: the first expected end among the
running jobs of its cohort tree after which its request fits.

The running jobs whose ClusterQueue shares the job's cohort root (or is the job's own
ClusterQueue, without a cohort) are taken in order of expected end (start + time limit; a
job may end sooner, never later). Their charges are removed from the quota tree one by one,
the flavor assignment tried again after each; the tree is then put back as it was (``remove``
then ``add`` of the same amount leaves every node as before). The answer is an estimate, as
Slurm's expected start is: it counts nothing pending in front of the job.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from phalanx.domain.queues import ClusterQueue, Queues
from phalanx.domain.queues.quota import FlavorResource, QuotaNode
from phalanx.domain.time import Instant, format_duration
from phalanx.policies.clusterqueue.assign import Assignment, MaskCache, assign
from phalanx.sched.occupancy import BoolArray

__all__ = ["Ending", "quota_start", "said"]

Ending = tuple[Instant, int, QuotaNode, Mapping[FlavorResource, int]]
"""(expected end, job id, its ClusterQueue's quota node, what it holds there)."""


def quota_start(
    cq: ClusterQueue,
    node: QuotaNode,
    request: Mapping[str, int],
    queues: Queues,
    masks: Mapping[str, BoolArray],
    allowed: BoolArray,
    endings: Iterable[Ending],
    within: MaskCache,
) -> tuple[Instant, int] | None:
    """(when, after which job's end) ``request`` first fits ``cq``'s quota, or None if the
    running jobs of its cohort tree ending do not make room for it."""
    root = node.cohort_root()
    short = _shortfalls(cq, request)
    undo: list[tuple[QuotaNode, FlavorResource, int]] = []
    try:
        for end, job_id, holder, charge in endings:  # in order of expected end
            if holder.cohort_root() is not root:
                continue
            for fr, amount in charge.items():
                holder.remove(fr, amount)
                undo.append((holder, fr, amount))
            if not _room(node, short):
                continue  # ``assign`` would refuse: no flavor has room for this resource yet
            result = assign(
                cq, node, request, queues.flavors, masks, allowed, lambda mask: True, within
            )
            if isinstance(result, Assignment):
                return end, job_id
        return None
    finally:
        for holder, fr, amount in reversed(undo):
            holder.add(fr, amount)


def _shortfalls(
    cq: ClusterQueue, request: Mapping[str, int]
) -> list[tuple[list[FlavorResource], int]]:
    """Per requested resource ``cq`` covers: the (flavor, resource) pairs it may take it from
    and the amount. A flavor fits only where each of these has room (``assign``'s
    ``_fits``), so while one resource has room in none, ``assign`` refuses: a cheap test
    that spares the whole assignment after most of the ends ``quota_start`` walks past."""
    out = []
    for resource, amount in request.items():
        group = cq.group_of(resource)
        if group is not None:
            out.append(([(f.name, resource) for f in group.flavors], amount))
    return out


def _room(node: QuotaNode, short: list[tuple[list[FlavorResource], int]]) -> bool:
    """Whether each resource of ``short`` (``_shortfalls``) has room in one of its flavors
    (loops, not generators: this is asked after every end ``quota_start`` walks past)."""
    for options, amount in short:
        for fr in options:
            if amount <= node.available(fr):
                break
        else:
            return False
    return True


def said(found: tuple[Instant, int] | None, now: Instant) -> str:
    """The forecast as the pending message ends: "expected start in 0:40:00, when job 812
    ends", or that no running job's end makes room."""
    if found is None:
        return "no running job's end makes room for it"
    end, job_id = found
    return f"expected start in {format_duration(max(0, end - now))}, when job {job_id} ends"
