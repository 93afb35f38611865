"""What a running job counts against its ClusterQueue's quota (Kueue records a workload's
flavor assignment; here it is read back from where the job runs), and the record the pass's
accounting keeps of it per run, so that each pass does not work it out again."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from mypy_extensions import mypyc_attr

from phalanx.domain.jobspec import JobSpec
from phalanx.domain.queues import ClusterQueue, ResourceGroup
from phalanx.domain.queues.quota import FlavorResource
from phalanx.policies.clusterqueue.amounts import held
from phalanx.sched.capacity import Allocation
from phalanx.sched.job import Job
from phalanx.sched.occupancy import BoolArray

__all__ = ["Charge", "Run", "charge_of", "retally"]

Run = tuple[int, int]
"""(job id, run): one run of a job."""


@mypyc_attr(allow_interpreted_subclasses=True)
class Charge:
    """What one run of a running job counts against its ClusterQueue ``cq``: unchanged while
    the job runs on the same allocation with the same spec (an elastic job grown or shrunk
    holds another ``Allocation``), which is what a user of a kept one checks."""

    __slots__ = ("alloc", "charge", "cq", "spec")

    def __init__(
        self,
        alloc: Allocation,
        spec: JobSpec,
        cq: ClusterQueue,
        charge: dict[FlavorResource, int],
    ) -> None:
        self.alloc = alloc
        self.spec = spec
        self.cq = cq
        self.charge = charge


def charge_of(
    masks: Mapping[str, BoolArray], cq: ClusterQueue, job: Job, alloc: Allocation
) -> dict[FlavorResource, int]:
    """What ``alloc`` counts against ``cq``: each resource in the first flavor of its group
    whose nodes (``masks``) hold the whole allocation (else the first holding any of it, else
    the group's first). Resources ``cq`` does not cover count nowhere."""
    nodes = list(alloc.nodes)
    charge: dict[FlavorResource, int] = {}
    chosen: dict[int, str] = {}  # by group: one look at the masks per group, not resource
    for resource, amount in held(job, alloc).items():
        group = cq.group_of(resource)
        if group is None:
            continue
        flavor = chosen.get(id(group))
        if flavor is None:
            flavor = chosen[id(group)] = _flavor_holding(masks, group, nodes)
        charge[(flavor, resource)] = charge.get((flavor, resource), 0) + amount
    return charge


def _flavor_holding(masks: Mapping[str, BoolArray], group: ResourceGroup, nodes: list[int]) -> str:
    """The first flavor of ``group`` whose nodes hold all of ``nodes`` (else the first
    holding any, else the group's first); a group of one flavor has no choice to make."""
    names = [f.name for f in group.flavors]
    if len(names) == 1:
        return names[0]
    flavor = next((f for f in names if masks[f][nodes].all()), None)
    if flavor is None:
        flavor = next((f for f in names if masks[f][nodes].any()), names[0])
    return flavor


def retally(
    totals: dict[str, dict[FlavorResource, int]],
    before: Mapping[Run, Charge],
    after: Mapping[Run, Charge],
    replaced: Iterable[tuple[Run, Charge]],
) -> None:
    """Bring ``totals`` (ClusterQueue -> the sum of its runs' charges, no zero amount kept)
    from the runs counted in ``before`` to those in ``after``: runs only in one of them, and
    ``replaced`` runs (in both, ``before``'s charge given, ``after`` holding a new one)."""
    for run in before.keys() - after.keys():
        _count(totals, before[run], -1)
    for run in after.keys() - before.keys():
        _count(totals, after[run], 1)
    for run, old in replaced:
        _count(totals, old, -1)
        _count(totals, after[run], 1)


def _count(totals: dict[str, dict[FlavorResource, int]], run: Charge, sign: int) -> None:
    name = run.cq.name
    total = totals.setdefault(name, {})
    for fr, amount in run.charge.items():
        left = total.get(fr, 0) + sign * amount
        if left:
            total[fr] = left
        else:
            del total[fr]
    if not total:
        del totals[name]
