"""The dashboard's memory of the recent past: a small time series the controller samples
every few seconds (efficiency, utilisation, idle GPUs while jobs wait, GPUs and fair-share
factor per account, GPUs per ClusterQueue against its nominal quota, and, where the
controller serves workloads, each one's replicas and load), kept in a bounded ring, for the
"over time" charts.

The sampler is an asyncio task on the controller's event loop, started by the first
dashboard request (nobody looking, nothing sampled) and reading the service port (and the
serving port, ``phalanx.api.serving``, where one is attached) only: a sample costs one pass
over the running jobs and the nodes (and one over the Deployments).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import deque
from dataclasses import dataclass, field

from phalanx.api.service import Service
from phalanx.api.serving import Served, ServingSource
from phalanx.api.ui.views import quota_rows
from phalanx.domain.state import JobState
from phalanx.policies.clusterqueue.fairshare import UNBOUNDED

__all__ = ["EFFICIENCY_WINDOW_MS", "QueueUse", "Sample", "Series", "take_sample"]

log = logging.getLogger(__name__)

EFFICIENCY_WINDOW_MS = 300_000
"""eta_sched and theta_overhead are measured over the last 5 minutes."""


@dataclass(frozen=True, slots=True)
class QueueUse:
    """A ClusterQueue's GPUs at a sample: in use by its running jobs, and its nominal quota
    then (quotas may change while the series runs)."""

    used: float
    nominal: float
    weighted_share: float | None = None
    """Its weighted share then (Kueue's fair sharing; None while that is off)."""

    @property
    def borrowed(self) -> float:
        """Use above nominal: GPUs borrowed from the cohort."""
        return max(0.0, self.used - self.nominal)


@dataclass(frozen=True, slots=True)
class Sample:
    at_ms: int
    """Wall clock, ms since the epoch."""
    eta_sched: float
    theta_overhead: float
    gpus: int
    """GPUs on nodes in service: not down, and not drained (a draining node's count)."""
    gpus_alloc: float
    pending: int
    running: int
    by_account: dict[str, float] = field(default_factory=dict)
    """GPUs held by each account's running jobs."""
    fairshare: dict[str, float] = field(default_factory=dict)
    """Each account's fair-share factor (``sshare``'s FairShare, in [0, 1]); root left out."""
    by_queue: dict[str, QueueUse] = field(default_factory=dict)
    """Each configured ClusterQueue's GPUs (none without Kueue queues)."""
    served: tuple[Served, ...] = ()
    """Each served workload (replicas, load) where the controller serves workloads."""

    @property
    def utilization(self) -> float:
        return self.gpus_alloc / self.gpus if self.gpus else 0.0

    @property
    def idle_while_pending(self) -> float:
        """The fraction of GPUs in service left idle while some job waits."""
        if not self.pending or not self.gpus:
            return 0.0
        return max(0.0, self.gpus - self.gpus_alloc) / self.gpus


def _finite(share: int | None) -> float | None:
    # A weight-0 queue that borrows has Kueue's MaxInt: drawn at no height rather than
    # flattening every other line.
    return None if share is None or share == UNBOUNDED else float(share)


def take_sample(service: Service, at_ms: int, serving: ServingSource | None = None) -> Sample:
    """One sample of ``service`` (and of ``serving``, where given) at ``at_ms``."""
    cluster = service.cluster
    usage = service.node_usage()
    in_service = 0
    alloc = 0.0
    for node in cluster.nodes:
        held = usage[node.index][0]
        alloc += held
        # A down node is out; a drained one is out once its jobs have left (while they
        # run, it is draining and its GPUs still work).
        out = service.node_down(node.name) or (
            service.node_note(node.name) is not None and not held
        )
        if not out:
            in_service += node.gpus
    pending = running = 0
    for (state, _), n in service.counts().items():
        if state == "PENDING":
            pending += n
        elif state == "RUNNING":
            running += n
    by_account: dict[str, float] = {}
    jobs = service.jobs()  # not final: those holding quota, as the ClusterQueue status counts
    for job in jobs:
        if job.state is JobState.RUNNING and job.alloc is not None:
            by_account[job.account] = by_account.get(job.account, 0.0) + job.alloc.gpus
    fairshare = {r.account: r.fairshare for r in service.fairshare() if r.parent is not None}
    by_queue = {
        q.name: QueueUse(q.used, q.nominal, _finite(q.weighted_share))
        for q in quota_rows(cluster, jobs)
    }
    served = tuple(serving.served()) if serving is not None else ()
    eta, theta = service.efficiency(EFFICIENCY_WINDOW_MS)
    return Sample(
        at_ms,
        eta,
        theta,
        in_service,
        alloc,
        pending,
        running,
        by_account,
        fairshare,
        by_queue,
        served,
    )


class Series:
    """Samples, oldest first, at most ``keep`` of them, every ``every_s`` seconds; and the
    productive GPU-hours since sampling began (allocated GPU-hours x (1 - theta), MFU not
    being known to the controller)."""

    def __init__(self, service: Service, every_s: float = 5.0, keep: int = 720) -> None:
        self.service = service
        self.serving: ServingSource | None = None
        """Set where the controller serves workloads (``phalanx.api.ui.attach_serving``)."""
        self.every_s = every_s
        self.samples: deque[Sample] = deque(maxlen=keep)
        self.productive_gpu_h = 0.0
        self._task: asyncio.Task[None] | None = None

    def sample(self) -> Sample:
        """Take a sample now and keep it."""
        now = take_sample(self.service, int(time.time() * 1000), self.serving)
        if self.samples:
            last = self.samples[-1]
            hours = max(0, now.at_ms - last.at_ms) / 3_600_000
            self.productive_gpu_h += last.gpus_alloc * hours * (1.0 - last.theta_overhead)
        self.samples.append(now)
        return now

    def start(self) -> None:
        """Start sampling on the running event loop (once; later calls do nothing)."""
        if self._task is None or self._task.done():
            if not self.samples:
                self.sample()
            self._task = asyncio.get_running_loop().create_task(self._run())

    async def _run(self) -> None:
        while True:
            await asyncio.sleep(self.every_s)
            try:
                self.sample()
            except Exception:  # a failing read must not end the series: the next tick retries
                log.exception("dashboard sample failed")

    def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            self._task = None
