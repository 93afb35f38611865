"""``priority/basic`` (submit order) and ``priority/las`` (Tiresias' discretised 2D-LAS).

2D-LAS (Tiresias, NSDI'19): a job's attained service is GPUs x time it has run. Jobs are
placed in K queues by thresholds on attained service; a lower queue index is served first,
FIFO (submit order) within a queue. A job that has waited longer than ``promote_knob`` times
the time it has run is promoted to the first queue, so long jobs are not starved.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from mypy_extensions import mypyc_attr

from phalanx.domain.time import SECOND, Instant
from phalanx.sched.context import PassContext
from phalanx.sched.job import Job

__all__ = ["BasicPriority", "LasPriority", "las_queue"]


@mypyc_attr(allow_interpreted_subclasses=True)
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


DEFAULT_THRESHOLDS: tuple[int, ...] = (3250 * SECOND, 7200 * SECOND)
"""GPU-ms of LAS service that move a job down to the next queue: three queues, as the
authors' release runs ``dlas-gpu`` (SymbioticLab/Tiresias, ``simulator/jobs.py``:
``num_queue = 3``, ``queue_limit = [3250, 7200, ...]`` GPU-seconds)."""
DEFAULT_PROMOTE_KNOB = 8.0
"""PromoteKnob: a job waiting longer than this many times its LAS run time is promoted."""


def las_queue(attained_gpu_ms: int, thresholds: Sequence[int]) -> int:
    for i, limit in enumerate(thresholds):
        if attained_gpu_ms < limit:
            return i
    return len(thresholds)


@mypyc_attr(allow_interpreted_subclasses=True)
class LasPriority:
    """Discretised 2D-LAS with starvation promotion, as the authors' release does it
    (``run_sim.py: dlas_sim_jobs``): a job's LAS service is the GPU-time it attained since it
    was last promoted; a job in a lower queue that has waited, since it first ran or was last
    promoted, ``promote_knob`` times as long as it ran in that span goes back to the first
    queue with its LAS service counted from zero again. 0 turns promotion off.

    Where the service was last reset is kept in the job's factors (``service_base_gpu_ms``,
    ``service_base_at``), which the engine stores with the priority, so that the scheduler and
    ``sprio`` see the same queue."""

    def __init__(self, params: Mapping[str, object]) -> None:
        raw = params.get("thresholds_gpu_ms", DEFAULT_THRESHOLDS)
        self.thresholds = (
            tuple(int(x) for x in raw) if isinstance(raw, list | tuple) else (DEFAULT_THRESHOLDS)
        )
        knob = params.get("promote_knob", DEFAULT_PROMOTE_KNOB)
        self.promote_knob = float(knob) if isinstance(knob, int | float) else DEFAULT_PROMOTE_KNOB

    @staticmethod
    def _base(job: Job) -> tuple[int, Instant | None]:
        base = job.factors.get("service_base_gpu_ms")
        at = job.factors.get("service_base_at")
        if base is None or at is None:
            return 0, job.first_start
        return int(base), int(at)

    def service(self, job: Job, now: Instant) -> int:
        """GPU-ms of LAS service: attained since the last promotion."""
        return job.attained_at(now) - self._base(job)[0]

    def queue(self, job: Job, now: Instant) -> int:
        """The queue ``job`` is in now (0 first); promotion is decided by ``compute``."""
        return las_queue(self.service(job, now), self.thresholds)

    def compute(
        self, job: Job, ctx: PassContext, now: Instant
    ) -> tuple[float, Mapping[str, float]]:
        base, base_at = self._base(job)
        attained = job.attained_at(now)
        q = las_queue(attained - base, self.thresholds)
        if q > 0 and job.start is None and base_at is not None and self.promote_knob > 0:
            ran = (attained - base) / max(job.gpus, 1e-9)
            waited = now - base_at - ran
            if ran > 0 and waited >= self.promote_knob * ran:
                base, base_at, q = attained, now, 0
        factors = {"queue": float(q)}
        if base_at is not None:
            factors["service_base_gpu_ms"] = float(base)
            factors["service_base_at"] = float(base_at)
        return float(-q), factors

    def compute_many(
        self, jobs: Sequence[Job], ctx: PassContext, now: Instant
    ) -> list[tuple[float, Mapping[str, float]]]:
        return [self.compute(job, ctx, now) for job in jobs]

    def order(self, jobs: Sequence[Job], ctx: PassContext) -> Iterable[Job]:
        return jobs  # the queue's own order
