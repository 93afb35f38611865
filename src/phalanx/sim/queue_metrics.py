"""Figures per ClusterQueue of a run (the ``queues`` key of a policy's JSON figures).

A job's ClusterQueue is its namespace's LocalQueue ``default``'s (trace jobs name no other);
a queue's nominal GPUs are its ``nvidia.com/gpu`` nominal quotas over all flavors. Over the
run, per queue, from the jobs' holds (launch to end of cleanup, each run) and their pending
spans (submit to first hold, each requeue to the next hold, or to the end of the run):

- ``guarantee_violation_gpu_hours``: the integral of min(pending GPUs, nominal - used GPUs)
  while the queue uses less than its nominal quota: demand within the guarantee left waiting;
- ``borrowed_gpu_hours``: the integral of used GPUs beyond the nominal quota;
- ``reclaims``: preemptions of other queues' jobs for this queue's jobs;
- ``jct_mean_s``: mean submit-to-end of its finished jobs; ``wait_mean_s``: mean queue wait
  of its started jobs (first wait plus waits after requeues, as the run's ``wait_mean_s``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from phalanx.domain.quantity import GPU, MILLI_UNITS
from phalanx.domain.queues import Queues
from phalanx.domain.queues.model import DEFAULT_LOCAL_QUEUE
from phalanx.domain.time import HOUR, SECOND, Instant
from phalanx.sim.records import JobRecord, RunRecord

__all__ = ["QueueFigures", "queue_figures"]


@dataclass(frozen=True, slots=True)
class QueueFigures:
    nominal_gpus: float
    jobs: int
    guarantee_violation_gpu_hours: float
    borrowed_gpu_hours: float
    reclaims: int
    jct_mean_s: float
    wait_mean_s: float


def queue_figures(run: RunRecord) -> dict[str, dict[str, float | int]]:
    """Figures by ClusterQueue name (module docstring), as plain dicts; empty without
    queues. Jobs no ClusterQueue takes are left out."""
    queues = run.queues
    if queues is None or not queues.cluster_queues:
        return {}
    queue_of = {
        ns: lq.cluster_queue
        for (ns, name), lq in queues.local_queues.items()
        if name == DEFAULT_LOCAL_QUEUE
    }
    by_queue: dict[str, list[JobRecord]] = {name: [] for name in queues.cluster_queues}
    owner: dict[int, str] = {}
    for job in run.jobs:
        cq = queue_of.get(job.account)
        if cq is not None and cq in by_queue:
            by_queue[cq].append(job)
            owner[job.job_id] = cq
    reclaims = dict.fromkeys(by_queue, 0)
    for job in run.jobs:
        victim = owner.get(job.job_id)
        for preemptor in job.preempted_for:
            mine = owner.get(preemptor)
            if mine is not None and mine != victim:
                reclaims[mine] += 1
    horizon = max((j.end for j in run.jobs if j.end is not None), default=0)
    out: dict[str, dict[str, float | int]] = {}
    for name, jobs in by_queue.items():
        nominal = _nominal_gpus(queues, name)
        violation, borrowed = _integrals(jobs, nominal, horizon)
        figures = QueueFigures(
            nominal_gpus=nominal,
            jobs=len(jobs),
            guarantee_violation_gpu_hours=violation / HOUR,
            borrowed_gpu_hours=borrowed / HOUR,
            reclaims=reclaims[name],
            jct_mean_s=_mean([j.end - j.submit for j in jobs if j.end is not None and _finished(j)])
            / SECOND,
            wait_mean_s=_mean(
                [
                    j.first_start - j.submit + j.requeue_wait_ms
                    for j in jobs
                    if j.first_start is not None
                ]
            )
            / SECOND,
        )
        out[name] = dataclasses.asdict(figures)
    return out


def _finished(job: JobRecord) -> bool:
    return job.end is not None and job.rejected is None and job.first_start is not None


def _nominal_gpus(queues: Queues, name: str) -> float:
    return sum(q.nominal for _, q in queues.cluster_queues[name].quotas() if q.name == GPU) / (
        MILLI_UNITS
    )


def _mean(values: Sequence[float]) -> float:
    return float(np.mean(values)) if values else 0.0


def _integrals(jobs: Sequence[JobRecord], nominal: float, horizon: Instant) -> tuple[float, float]:
    """GPU-ms of guarantee violation and of borrowing (module docstring)."""
    times: list[float] = []
    used: list[float] = []
    pending: list[float] = []
    for job in jobs:
        if job.rejected is not None:
            continue
        g = job.gpus
        waiting_from: Instant | None = job.submit
        for start, end in job.held:
            if waiting_from is not None and start > waiting_from:
                times += [waiting_from, start]
                used += [0.0, 0.0]
                pending += [g, -g]
            times += [start, end]
            used += [g, -g]
            pending += [0.0, 0.0]
            waiting_from = end
        last = job.end if job.end is not None else horizon
        if (not job.held or job.end is None) and waiting_from is not None and last > waiting_from:
            times += [waiting_from, last]
            used += [0.0, 0.0]
            pending += [g, -g]
    if not times:
        return 0.0, 0.0
    t = np.asarray(times)
    order = np.argsort(t, kind="stable")
    t = t[order]
    u = np.cumsum(np.asarray(used)[order])
    p = np.cumsum(np.asarray(pending)[order])
    span = np.diff(t)
    u, p = u[:-1], p[:-1]
    short = np.minimum(np.maximum(p, 0.0), np.maximum(nominal - u, 0.0))
    return float(np.sum(short * span)), float(np.sum(np.maximum(u - nominal, 0.0) * span))
