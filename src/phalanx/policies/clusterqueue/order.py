"""``priority/kueue`` (queue sort): Kueue's order of admission among ClusterQueues.

Priorities are equal (``priority/basic``: submit order) unless a job names a
WorkloadPriorityClass; each pass then takes first the jobs that fit their ClusterQueue's
nominal quota, before those that would borrow (``ClusterQueueAdmission.kueue_order``). With
no ClusterQueue configured it is ``priority/basic``. With Kueue's fair sharing on, the order
is ``fairshare.fair_order``'s instead: lowest share after admission first.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from mypy_extensions import mypyc_attr

from phalanx.policies.clusterqueue.admission import ClusterQueueAdmission
from phalanx.policies.clusterqueue.fairshare import fair_order
from phalanx.policies.priority_simple import BasicPriority
from phalanx.sched.context import PassContext
from phalanx.sched.job import Job

__all__ = ["KueueOrder"]


@mypyc_attr(allow_interpreted_subclasses=True)
class KueueOrder(BasicPriority):
    plugin = "priority/kueue"

    def __init__(self, params: Mapping[str, object]) -> None:
        super().__init__(params)
        self._admission = ClusterQueueAdmission({})

    def order(self, jobs: Sequence[Job], ctx: PassContext) -> Iterable[Job]:
        if not ctx.cluster.queues.cluster_queues:
            return jobs
        if ctx.cluster.queues.fair_sharing.enable:
            return fair_order(self._admission, jobs, ctx)
        return self._admission.kueue_order(jobs, ctx)
