"""``priority/drf``: Volcano's DRF job order (queue sort) over gangs.

Accounts (Volcano queues) are served in order of dominant resource share, lowest first
(GPUs are the dominant resource here), recomputed after every job started; within an account,
jobs in queue order (submit order: every job's priority is equal, as ``priority/basic``).
The order is lazy: after each job it looks whether the job started. Volcano's profile puts
binpack at score and ``sched/greedy`` at the reservation step: a gang that does not fit is
skipped (minAvailable not met), with no reservation.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable, Iterator, Mapping, Sequence

from mypy_extensions import mypyc_attr

from phalanx.domain.state import JobState
from phalanx.domain.time import Instant
from phalanx.policies.priority_simple import BasicPriority
from phalanx.sched.context import PassContext
from phalanx.sched.job import Job

__all__ = ["DrfOrder"]


@mypyc_attr(allow_interpreted_subclasses=True)
class DrfOrder(BasicPriority):
    plugin = "priority/drf"

    def __init__(self, params: Mapping[str, object]) -> None:
        super().__init__(params)

    def compute(
        self, job: Job, ctx: PassContext, now: Instant
    ) -> tuple[float, Mapping[str, float]]:
        return 0.0, {}

    def order(self, jobs: Sequence[Job], ctx: PassContext) -> Iterable[Job]:
        return self._drf(jobs, ctx)

    @staticmethod
    def _drf(jobs: Sequence[Job], ctx: PassContext) -> Iterator[Job]:
        state = ctx.state
        total = max(ctx.cluster.total_gpus, 1)
        queues: dict[str, list[Job]] = {}
        for job in jobs:
            queues.setdefault(job.account, []).append(job)
        heap = [(state.account_gpus.get(acct, 0.0) / total, acct, 0) for acct in sorted(queues)]
        heapq.heapify(heap)
        while heap:
            _, acct, pos = heapq.heappop(heap)
            members = queues[acct]
            while pos < len(members):
                job = members[pos]
                pos += 1
                yield job
                if job.state is not JobState.PENDING:  # it started: the account's share grew
                    share = state.account_gpus.get(acct, 0.0) / total
                    heapq.heappush(heap, (share, acct, pos))
                    break
