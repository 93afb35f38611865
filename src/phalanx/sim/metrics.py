"""Figures of merit for one simulated run: the efficiency model platform teams use.

Only jobs that were not rejected count; rejected jobs are reported as ``rejected``. With sums over
those jobs (all GPU x milliseconds):

- ``T_compute``, ``T_gang_wait``, ``T_launch``, ``T_cleanup``, ``T_evict``, ``T_lost``: the sums
  of the matching ``JobRecord`` fields; ``T_preempt_penalty = T_lost + T_evict``.
- ``eta_sched = T_compute / (T_compute + T_gang_wait + T_preempt_penalty + T_cleanup)``
  (1.0 when the denominator is 0): the share of the GPU time the scheduler shaped that did work.
- ``T_total = T_compute + T_gang_wait + T_launch + T_evict + T_cleanup + T_lost``: all GPU time
  held by jobs; ``theta_overhead = (T_gang_wait + T_launch + T_evict) / T_total``.
- ``productive_gpu_hours = T_total[h] x (1 - theta_overhead) x run.mfu``.
- ``utilization``: the integral of ``run.alloc_timeline`` over [first submit, last end] divided
  by ``total_gpus`` x that span.
- JCT = end - submit per finished job (jobs without an end count as ``unfinished``): mean, p50,
  p95, p99 (linear percentiles). Queue wait = first_start - submit per started job: mean, p95.
  Bounded slowdown = max(1, JCT / max(runtime, tau)), tau = 10 s: mean.
- ``makespan_s = (last end - first submit) / 1000``.
- ``wait_by_size``: time pending per size class of the job's GPUs (``SIZE_CLASSES``: "1" holds
  fractional jobs too, "2-4" jobs of more than 1 and up to 4 GPUs, and so on; jobs asking no GPU
  are in none): jobs started, mean, p95 and max in seconds. A job's time pending is its queue
  wait plus ``requeue_wait_ms``, the waits after its requeues: a preempted gang waiting again is
  waiting, and a policy that preempts must not look better for it.
- ``jct_by_size``: mean JCT in seconds of the finished jobs of each size class (0 without).
- ``idle_while_pending``: the integral of ``run.idle_pending_timeline`` (min(idle GPUs, GPUs
  asked by pending jobs)) over [first submit, last end] divided by ``total_gpus`` x that span:
  the share of capacity left idle while it could have served waiting work.
- ``multinode_extra_leaves``: multi-node jobs placed (at least once) on more leaf switches than
  the fewest that hold that many nodes on this cluster.
- Jain's fairness over accounts: x_a = mean over the account's finished jobs of
  min(1, runtime / JCT) (the service share the account got); J = (sum x)^2 / (n sum x^2),
  1.0 with one account.
- ``jobs`` counts every job, rejected ones included; ``jobs_per_s = jobs / sim_wall_s``.

``docs/metrics.md`` holds the same definitions for readers of the README.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from phalanx.domain.time import HOUR, SECOND, Instant
from phalanx.sim.queue_metrics import queue_figures
from phalanx.sim.records import JobRecord, RunRecord, Segment

__all__ = [
    "SIZE_CLASSES",
    "PolicyMetrics",
    "SizeWait",
    "alloc_integral",
    "jct_by_size",
    "per_account",
    "summarize",
    "to_json_dict",
    "wait_by_size",
]

FloatArray = npt.NDArray[np.float64]

SIZE_CLASSES: tuple[str, ...] = ("1", "2-4", "5-8", "9-64", "65+")
"""Size classes of ``wait_by_size``, by the job's GPUs: (0, 1], (1, 4], (4, 8], (8, 64], > 64."""
_SIZE_EDGES = np.array([0.0, 1.0, 4.0, 8.0, 64.0])


@dataclass(frozen=True, slots=True)
class SizeWait:
    """Queue wait of the started jobs of one size class; times in seconds (0 without jobs)."""

    jobs: int
    mean_s: float
    p95_s: float
    max_s: float


@dataclass(frozen=True, slots=True)
class PolicyMetrics:
    """The figures of one run (or of one account's share of it); times in seconds."""

    policy: str
    jobs: int
    rejected: int
    unfinished: int
    eta_sched: float
    theta_overhead: float
    utilization: float
    jct_mean_s: float
    jct_p50_s: float
    jct_p95_s: float
    jct_p99_s: float
    wait_mean_s: float
    wait_p95_s: float
    bounded_slowdown_mean: float
    makespan_s: float
    compute_gpu_hours: float
    gang_wait_gpu_hours: float
    launch_gpu_hours: float
    evict_gpu_hours: float
    cleanup_gpu_hours: float
    lost_gpu_hours: float
    preempt_penalty_gpu_hours: float
    productive_gpu_hours: float
    preemptions: int
    node_failures: int
    restarts: int
    deadlocks: int
    fairness_jain: float
    sim_wall_s: float
    jobs_per_s: float
    passes: int
    idle_while_pending: float = 0.0
    multinode_extra_leaves: int = 0
    wait_by_size: Mapping[str, SizeWait] = dataclasses.field(default_factory=dict)
    """By size class (``SIZE_CLASSES``, every class present)."""
    jct_by_size: Mapping[str, float] = dataclasses.field(default_factory=dict)
    """Mean JCT (s) of the finished jobs by size class (``SIZE_CLASSES``, every class)."""
    queues: Mapping[str, Mapping[str, float | int]] = dataclasses.field(default_factory=dict)
    """By ClusterQueue, under queues (``phalanx.sim.queue_metrics``); empty without."""


def to_json_dict(m: PolicyMetrics) -> dict[str, Any]:
    """Every figure of ``m`` by field name (the policy name is the caller's key);
    ``wait_by_size`` as ``{class: {"jobs", "mean_s", "p95_s", "max_s"}}``; ``queues`` (by
    ClusterQueue) only when the run had ClusterQueues."""
    out: dict[str, Any] = {}
    for f in dataclasses.fields(m):
        if f.name == "policy":
            continue
        value = getattr(m, f.name)
        if f.name == "wait_by_size":
            value = {k: dataclasses.asdict(v) for k, v in value.items()}
        elif f.name == "jct_by_size":
            value = dict(value)
        elif f.name == "queues":
            if not value:
                continue  # a run without ClusterQueues keeps its keys as they were
            value = {k: dict(v) for k, v in value.items()}
        out[f.name] = value
    return out


class _Columns:
    """The job records of a run as numpy columns, built once (82k jobs: tens of milliseconds)."""

    def __init__(self, jobs: Sequence[JobRecord]) -> None:
        nan = float("nan")
        rows = [
            (
                j.submit,
                nan if j.first_start is None else j.first_start,
                nan if j.end is None else j.end,
                j.runtime_ms,
                j.compute_gpu_ms,
                j.gang_wait_gpu_ms,
                j.launch_gpu_ms,
                j.cleanup_gpu_ms,
                j.evict_gpu_ms,
                j.lost_gpu_ms,
                j.preemptions,
                j.node_failures,
                j.restarts,
                j.gpus,
                j.extra_leaves,
                j.requeue_wait_ms,
            )
            for j in jobs
        ]
        table = np.array(rows, dtype=np.float64).reshape(len(rows), 16)
        (
            self.submit,
            self.first_start,
            self.end,
            self.runtime,
            self.compute,
            self.gang_wait,
            self.launch,
            self.cleanup,
            self.evict,
            self.lost,
            self.preemptions,
            self.node_failures,
            self.restarts,
            self.gpus,
            self.extra_leaves,
            self.requeue_wait,
        ) = (np.ascontiguousarray(table[:, i]) for i in range(16))
        self.accounts = np.array([j.account for j in jobs], dtype=object)


def alloc_integral(timeline: Sequence[tuple[Instant, float]], start: float, end: float) -> float:
    """GPU x ms allocated over [start, end] by a step timeline of (t, GPUs from t) points.

    Before the first point nothing is allocated; the last value holds until ``end``.
    """
    if not timeline or end <= start:
        return 0.0
    points = np.asarray(timeline, dtype=np.float64).reshape(len(timeline), 2)
    # Clipping the change points to the window keeps only the part of each step inside it:
    # a step that began before ``start`` now begins at ``start``, steps after ``end`` vanish.
    times = np.clip(points[:, 0], start, end)
    widths = np.diff(np.append(times, end))
    return float(np.dot(points[:, 1], widths))


def summarize(run: RunRecord, bounded_slowdown_tau_s: float = 10.0) -> PolicyMetrics:
    """The figures of merit of ``run`` (definitions in the module docstring)."""
    rejected = sum(1 for j in run.jobs if j.rejected is not None)
    kept = [j for j in run.jobs if j.rejected is None]
    figures = _summarize(
        run, kept, len(run.jobs), rejected, run.alloc_timeline, bounded_slowdown_tau_s
    )
    if run.queues is None:
        return figures
    return dataclasses.replace(figures, queues=queue_figures(run))


def wait_by_size(gpus: FloatArray, waits_ms: FloatArray) -> dict[str, SizeWait]:
    """Waits (ms) of started jobs grouped by their GPUs into ``SIZE_CLASSES``."""
    # right=True puts a job on a class's upper edge in that class: 4 GPUs is "2-4".
    cls = np.digitize(gpus, _SIZE_EDGES, right=True)
    out: dict[str, SizeWait] = {}
    for k, name in enumerate(SIZE_CLASSES, start=1):
        w = waits_ms[cls == k]
        out[name] = SizeWait(
            jobs=int(w.size),
            mean_s=_mean(w) / SECOND,
            p95_s=_pct(w, 95) / SECOND,
            max_s=float(w.max()) / SECOND if w.size else 0.0,
        )
    return out


def jct_by_size(gpus: FloatArray, jcts_ms: FloatArray) -> dict[str, float]:
    """Mean JCT (s) of finished jobs grouped by their GPUs into ``SIZE_CLASSES``."""
    cls = np.digitize(gpus, _SIZE_EDGES, right=True)  # as ``wait_by_size``
    return {name: _mean(jcts_ms[cls == k]) / SECOND for k, name in enumerate(SIZE_CLASSES, start=1)}


def per_account(run: RunRecord, bounded_slowdown_tau_s: float = 10.0) -> dict[str, PolicyMetrics]:
    """The same figures per account, restricted to the account's jobs.

    Utilisation is the account's GPU time (from its segments, or from first start to end of its
    jobs when the run recorded no segments) over the whole cluster and the account's span.
    Deadlocks, passes and the simulator's wall time belong to the run and are repeated as-is;
    ``idle_while_pending`` is the run's, over the account's span.
    """
    by_account: dict[str, list[JobRecord]] = {}
    for j in run.jobs:
        by_account.setdefault(j.account, []).append(j)
    owner = {j.job_id: j.account for j in run.jobs}
    segments_of: dict[str, list[Segment]] = {}
    for s in run.segments:
        segments_of.setdefault(owner.get(s.job_id, ""), []).append(s)
    out: dict[str, PolicyMetrics] = {}
    for account in sorted(by_account):
        jobs = by_account[account]
        kept = [j for j in jobs if j.rejected is None]
        if run.segments:
            timeline = _timeline_of(
                [(s.start, s.end, s.gpus) for s in segments_of.get(account, [])]
            )
        else:
            timeline = _timeline_of(
                [
                    (j.first_start, j.end, j.gpus)
                    for j in kept
                    if j.first_start is not None and j.end is not None
                ]
            )
        out[account] = _summarize(
            run, kept, len(jobs), len(jobs) - len(kept), timeline, bounded_slowdown_tau_s
        )
    return out


def _timeline_of(intervals: Sequence[tuple[Instant, Instant, float]]) -> list[tuple[int, float]]:
    """The (t, allocated from t) change points of a set of (start, end, GPUs) holdings."""
    if not intervals:
        return []
    arr = np.asarray(intervals, dtype=np.float64).reshape(len(intervals), 3)
    times = np.concatenate([arr[:, 0], arr[:, 1]])
    deltas = np.concatenate([arr[:, 2], -arr[:, 2]])
    order = np.argsort(times, kind="stable")
    times, level = times[order], np.cumsum(deltas[order])
    # Several changes at one instant: the level after the last of them is the one that holds.
    last = np.append(times[1:] != times[:-1], True)
    return [(int(t), float(g)) for t, g in zip(times[last], level[last], strict=True)]


def _summarize(
    run: RunRecord,
    kept: Sequence[JobRecord],
    jobs: int,
    rejected: int,
    timeline: Sequence[tuple[Instant, float]],
    tau_s: float,
) -> PolicyMetrics:
    c = _Columns(kept)
    t_compute = float(c.compute.sum())
    t_gang = float(c.gang_wait.sum())
    t_launch = float(c.launch.sum())
    t_cleanup = float(c.cleanup.sum())
    t_evict = float(c.evict.sum())
    t_lost = float(c.lost.sum())
    t_penalty = t_lost + t_evict
    shaped = t_compute + t_gang + t_penalty + t_cleanup
    eta = t_compute / shaped if shaped > 0 else 1.0
    t_total = t_compute + t_gang + t_launch + t_evict + t_cleanup + t_lost
    theta = (t_gang + t_launch + t_evict) / t_total if t_total > 0 else 0.0

    finished = ~np.isnan(c.end)
    jct = c.end[finished] - c.submit[finished]
    started = ~np.isnan(c.first_start)
    wait = c.first_start[started] - c.submit[started]
    tau_ms = tau_s * SECOND
    slowdown = np.maximum(1.0, _safe_div(jct, np.maximum(c.runtime[finished], tau_ms)))

    first_submit = float(c.submit.min()) if len(kept) else 0.0
    last_end = float(c.end[finished].max()) if finished.any() else first_submit
    span = last_end - first_submit
    capacity = run.total_gpus * span
    util = alloc_integral(timeline, first_submit, last_end) / capacity if capacity > 0 else 0.0
    idle_pending = (
        alloc_integral(run.idle_pending_timeline, first_submit, last_end) / capacity
        if capacity > 0
        else 0.0
    )
    wall = run.sim_wall_s
    return PolicyMetrics(
        policy=run.policy,
        jobs=jobs,
        rejected=rejected,
        unfinished=int((~finished).sum()),
        eta_sched=eta,
        theta_overhead=theta,
        utilization=util,
        jct_mean_s=_mean(jct) / SECOND,
        jct_p50_s=_pct(jct, 50) / SECOND,
        jct_p95_s=_pct(jct, 95) / SECOND,
        jct_p99_s=_pct(jct, 99) / SECOND,
        wait_mean_s=_mean(wait) / SECOND,
        wait_p95_s=_pct(wait, 95) / SECOND,
        bounded_slowdown_mean=_mean(slowdown),
        makespan_s=span / SECOND,
        compute_gpu_hours=t_compute / HOUR,
        gang_wait_gpu_hours=t_gang / HOUR,
        launch_gpu_hours=t_launch / HOUR,
        evict_gpu_hours=t_evict / HOUR,
        cleanup_gpu_hours=t_cleanup / HOUR,
        lost_gpu_hours=t_lost / HOUR,
        preempt_penalty_gpu_hours=t_penalty / HOUR,
        productive_gpu_hours=t_total / HOUR * (1.0 - theta) * run.mfu,
        preemptions=int(c.preemptions.sum()),
        node_failures=int(c.node_failures.sum()),
        restarts=int(c.restarts.sum()),
        deadlocks=run.deadlocks,
        fairness_jain=_jain(c, finished, jct),
        sim_wall_s=wall,
        jobs_per_s=jobs / wall if wall > 0 else 0.0,
        passes=run.passes,
        idle_while_pending=idle_pending,
        multinode_extra_leaves=int((c.extra_leaves > 0).sum()),
        wait_by_size=wait_by_size(c.gpus[started], wait + c.requeue_wait[started]),
        jct_by_size=jct_by_size(c.gpus[finished], jct),
    )


def _jain(c: _Columns, finished: npt.NDArray[np.bool_], jct: FloatArray) -> float:
    """Jain's index over the accounts' mean service share (see the module docstring)."""
    if not finished.any():
        return 1.0
    # A job that ended before its full runtime (failed, cancelled) got no more than all of its
    # service, hence the cap at 1; a zero JCT means it was served at once.
    share = np.minimum(1.0, _safe_div(c.runtime[finished], jct, zero=1.0))
    accounts, index = np.unique(c.accounts[finished], return_inverse=True)
    if len(accounts) <= 1:
        return 1.0
    x = np.bincount(index, weights=share) / np.bincount(index)
    squares = float(np.dot(x, x))
    if squares == 0.0:
        return 1.0  # every account got nothing: equally unfair to all
    return float(x.sum() ** 2 / (len(x) * squares))


def _safe_div(num: FloatArray, den: FloatArray, zero: float = 1.0) -> FloatArray:
    """num / den elementwise, ``zero`` where den is 0 (a job that took no time at all)."""
    out = np.full(num.shape, zero, dtype=np.float64)
    np.divide(num, den, out=out, where=den > 0)
    return out


def _mean(values: FloatArray) -> float:
    # Empty sets report 0 rather than NaN so the JSON stays valid and tables stay readable.
    return float(values.mean()) if values.size else 0.0


def _pct(values: FloatArray, q: float) -> float:
    return float(np.percentile(values, q)) if values.size else 0.0
