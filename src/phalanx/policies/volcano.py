"""``sched/drf``: Volcano's allocate action with gang and DRF job ordering.

Accounts (Volcano queues) are served in order of dominant resource share, lowest first
(GPUs are the dominant resource here), recomputed after every job started; within an account,
jobs in priority order. A gang starts whole where the select plugin (binpack for Volcano) fits
it; a gang that does not fit is skipped (minAvailable not met), with no reservation.
"""

from __future__ import annotations

import heapq
from collections.abc import Mapping

from phalanx.domain.state import Reason
from phalanx.sched.job import Job
from phalanx.sched.protocols import PassContext
from phalanx.sched.status import Status

__all__ = ["DrfScheduler"]


class DrfScheduler:
    plugin = "sched/drf"

    def __init__(self, params: Mapping[str, object]) -> None:
        del params

    def schedule(self, ctx: PassContext) -> None:
        state = ctx.state
        total = max(ctx.cluster.total_gpus, 1)
        queues: dict[str, list[Job]] = {}
        for job in ctx.pending():
            queues.setdefault(job.account, []).append(job)
        heap = [(state.account_gpus.get(acct, 0.0) / total, acct, 0) for acct in sorted(queues)]
        heapq.heapify(heap)
        failed: dict[object, Status] = {}
        only_whole = not ctx.more_than_whole_gpus_pending()
        while heap:
            if only_whole and state.free_gpus == 0:
                break
            _, acct, pos = heapq.heappop(heap)
            jobs = queues[acct]
            while pos < len(jobs):
                job = jobs[pos]
                pos += 1
                known = failed.get(job.key)
                if known is not None:
                    ctx.wait(job, known)
                    continue
                alloc = None
                if job.shape.nodes_min * job.shape.gpus <= state.free_gpus:
                    alloc = ctx.place(job, None)
                if alloc is None:
                    status = Status.wait(Reason.RESOURCES, self.plugin)
                    failed[job.key] = status
                    ctx.wait(job, status)
                    continue
                ctx.start(job, alloc)
                share = state.account_gpus.get(acct, 0.0) / total
                heapq.heappush(heap, (share, acct, pos))
                break
