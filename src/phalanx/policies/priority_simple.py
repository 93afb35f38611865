"""``priority/basic`` (submit order) and ``priority/las`` (Tiresias' discretised 2D-LAS).

2D-LAS (Tiresias, NSDI'19): a job's attained service is GPUs x time it has run. Jobs are
placed in K queues by thresholds on attained service; a lower queue index is served first,
FIFO within a queue. A job that has waited longer than ``starve_factor`` times the time it has
run is promoted to the first queue, so long jobs are not starved.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from phalanx.domain.time import HOUR, Instant
from phalanx.sched.context import PassContext
from phalanx.sched.job import Job

__all__ = ["BasicPriority", "LasPriority", "las_queue"]


class BasicPriority:
    """Everyone equal: order falls back to the submit sequence."""

    def __init__(self, params: Mapping[str, object]) -> None:
        del params

    def compute(
        self, job: Job, ctx: PassContext, now: Instant
    ) -> tuple[float, Mapping[str, float]]:
        return 0.0, {}

    def compute_many(
        self, jobs: Sequence[Job], ctx: PassContext, now: Instant
    ) -> list[tuple[float, Mapping[str, float]]]:
        return [(0.0, {})] * len(jobs)

    def order(self, jobs: Sequence[Job], ctx: PassContext) -> Iterable[Job]:
        return jobs  # the queue's own order


DEFAULT_THRESHOLDS: tuple[int, ...] = (1 * HOUR, 10 * HOUR)
"""GPU-ms of attained service that move a job to the next queue (1 and 10 GPU-hours)."""


def las_queue(attained_gpu_ms: int, thresholds: Sequence[int]) -> int:
    for i, limit in enumerate(thresholds):
        if attained_gpu_ms < limit:
            return i
    return len(thresholds)


class LasPriority:
    def __init__(self, params: Mapping[str, object]) -> None:
        raw = params.get("thresholds_gpu_ms", DEFAULT_THRESHOLDS)
        self.thresholds = (
            tuple(int(x) for x in raw) if isinstance(raw, list | tuple) else (DEFAULT_THRESHOLDS)
        )
        starve = params.get("starve_factor", 8.0)
        self.starve_factor = float(starve) if isinstance(starve, int | float) else 8.0

    def queue(self, job: Job, now: Instant) -> int:
        q = las_queue(job.attained_at(now), self.thresholds)
        if job.start is None and job.attained_gpu_ms > 0 and job.end is not None:
            # Pending after a preemption: promote if it has waited long relative to its run.
            waited = now - job.end
            ran = job.attained_gpu_ms / max(job.gpus, 1e-9)
            if waited > self.starve_factor * ran:
                return 0
        return q

    def compute(
        self, job: Job, ctx: PassContext, now: Instant
    ) -> tuple[float, Mapping[str, float]]:
        q = self.queue(job, now)
        return float(-q), {"queue": float(q)}

    def compute_many(
        self, jobs: Sequence[Job], ctx: PassContext, now: Instant
    ) -> list[tuple[float, Mapping[str, float]]]:
        return [self.compute(job, ctx, now) for job in jobs]

    def order(self, jobs: Sequence[Job], ctx: PassContext) -> Iterable[Job]:
        return jobs  # the queue's own order
