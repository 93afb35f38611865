"""Metrics on hand-built runs whose figures are worked out by hand in each test."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from phalanx.domain.time import HOUR, SECOND
from phalanx.sim.metrics import (
    PolicyMetrics,
    alloc_integral,
    per_account,
    summarize,
    to_json_dict,
)
from phalanx.sim.records import JobRecord, RunRecord, Segment

_ids = iter(range(1, 10**9))


def job(**kw: Any) -> JobRecord:
    """A finished 1-GPU job submitted at 0 that ran 10 s, unless told otherwise."""
    fields: dict[str, Any] = {
        "job_id": next(_ids),
        "account": "a",
        "user": "u",
        "gpus": 1.0,
        "submit": 0,
        "runtime_ms": 10 * SECOND,
        "first_start": 0,
        "end": 10 * SECOND,
        "state": "COMPLETED",
    }
    fields.update(kw)
    return JobRecord(**fields)


def run_of(jobs: list[JobRecord], **kw: Any) -> RunRecord:
    return RunRecord(policy="p", total_gpus=8, node_count=1, jobs=jobs, **kw)


def test_eta_theta_and_productive_hours_with_gang_wait_and_lost_work() -> None:
    j = job(
        compute_gpu_ms=8000,
        gang_wait_gpu_ms=2000,
        lost_gpu_ms=1000,
        evict_gpu_ms=500,
        cleanup_gpu_ms=500,
        launch_gpu_ms=1000,
        preemptions=2,
    )
    m = summarize(run_of([j], mfu=0.5))
    # eta = 8000 / (8000 + 2000 + (1000 + 500) + 500)
    assert m.eta_sched == pytest.approx(8000 / 12000)
    # T_total = 8000 + 2000 + 1000 + 500 + 500 + 1000; overhead = gang + launch + evict
    assert m.theta_overhead == pytest.approx(3500 / 13000)
    assert m.productive_gpu_hours == pytest.approx(13000 / HOUR * (1 - 3500 / 13000) * 0.5)
    assert m.gang_wait_gpu_hours == pytest.approx(2000 / HOUR)
    assert m.lost_gpu_hours == pytest.approx(1000 / HOUR)
    assert m.preempt_penalty_gpu_hours == pytest.approx(1500 / HOUR)
    assert m.cleanup_gpu_hours == pytest.approx(500 / HOUR)
    assert m.preemptions == 2


def test_eta_is_one_without_any_gpu_time() -> None:
    m = summarize(run_of([job()]))
    assert m.eta_sched == 1.0
    assert m.theta_overhead == 0.0


def test_utilization_integrates_a_step_timeline_over_submit_to_last_end() -> None:
    # 4 GPUs for 5 s, then 8 GPUs for 5 s, on 8 GPUs over [0, 10 s]: (20 + 40) / 80.
    timeline = [(0, 4.0), (5 * SECOND, 8.0), (10 * SECOND, 0.0)]
    m = summarize(run_of([job()], alloc_timeline=timeline))
    assert m.utilization == pytest.approx(0.75)
    assert m.makespan_s == pytest.approx(10.0)


def test_alloc_integral_clips_to_the_window_and_holds_the_last_level() -> None:
    timeline = [(-5, 2.0), (10, 4.0), (30, 1.0)]
    # [0,10): 2, [10,30): 4, [30,40]: 1
    assert alloc_integral(timeline, 0, 40) == pytest.approx(2 * 10 + 4 * 20 + 1 * 10)
    assert alloc_integral(timeline, 12, 20) == pytest.approx(4 * 8)
    assert alloc_integral([], 0, 10) == 0.0
    assert alloc_integral([(5, 3.0)], 0, 10) == pytest.approx(15)


def test_jct_percentiles_wait_and_unfinished() -> None:
    jobs = [job(submit=0, first_start=k * SECOND, end=k * SECOND) for k in range(1, 101)]
    jobs.append(job(first_start=None, end=None))
    m = summarize(run_of(jobs))
    assert m.jct_mean_s == pytest.approx(50.5)
    # numpy's linear percentiles over 1..100: rank q/100 * 99 from 1
    assert m.jct_p50_s == pytest.approx(50.5)
    assert m.jct_p95_s == pytest.approx(95.05)
    assert m.jct_p99_s == pytest.approx(99.01)
    assert m.wait_mean_s == pytest.approx(50.5)
    assert m.wait_p95_s == pytest.approx(95.05)
    assert m.unfinished == 1
    assert m.jobs == 101


def test_bounded_slowdown_uses_tau_for_short_jobs() -> None:
    short = job(runtime_ms=1 * SECOND, end=20 * SECOND)  # 20 / max(1, 10) = 2
    fast = job(runtime_ms=100 * SECOND, end=50 * SECOND)  # max(1, 0.5) = 1
    m = summarize(run_of([short, fast]))
    assert m.bounded_slowdown_mean == pytest.approx(1.5)
    assert summarize(run_of([short]), bounded_slowdown_tau_s=1.0).bounded_slowdown_mean == 20.0


def test_jain_is_one_for_equal_accounts_and_below_for_unequal() -> None:
    equal = [job(account="a"), job(account="b"), job(account="b")]
    assert summarize(run_of(equal)).fairness_jain == pytest.approx(1.0)
    # a gets full service (x=1), b waited as long as it ran (x=0.5): 1.5^2 / (2 * 1.25)
    unequal = [job(account="a"), job(account="b", end=20 * SECOND)]
    assert summarize(run_of(unequal)).fairness_jain == pytest.approx(0.9)
    assert summarize(run_of([job(end=40 * SECOND)])).fairness_jain == 1.0


def test_rejected_jobs_are_counted_apart_and_excluded() -> None:
    good = job(compute_gpu_ms=1000)
    bad = job(rejected="too big", gang_wait_gpu_ms=10**9, end=99 * SECOND)
    m = summarize(run_of([good, bad], sim_wall_s=2.0))
    assert m.rejected == 1
    assert m.jobs == 2
    assert m.eta_sched == 1.0
    assert m.jct_mean_s == pytest.approx(10.0)
    assert m.makespan_s == pytest.approx(10.0)
    assert m.jobs_per_s == pytest.approx(1.0)


def test_run_wide_counters_are_copied() -> None:
    m = summarize(run_of([job(node_failures=1, restarts=3)], deadlocks=4, passes=7))
    assert (m.deadlocks, m.passes, m.node_failures, m.restarts) == (4, 7, 1, 3)
    assert m.jobs_per_s == 0.0


def test_empty_run_gives_finite_figures() -> None:
    d = to_json_dict(summarize(run_of([])))
    by_size = d.pop("wait_by_size")
    jct_by_size = d.pop("jct_by_size")
    assert all(np.isfinite(v) for v in d.values())
    assert all(np.isfinite(v) for c in by_size.values() for v in c.values())
    assert all(np.isfinite(v) for v in jct_by_size.values())


def test_per_account_restricts_jobs_and_uses_the_accounts_segments() -> None:
    a = job(account="a", gpus=4.0, compute_gpu_ms=40_000)
    b = job(account="b", gpus=2.0, end=5 * SECOND, compute_gpu_ms=10_000)
    segments = [
        Segment(a.job_id, 0, 0, 10 * SECOND, 4.0),
        Segment(b.job_id, 0, 0, 5 * SECOND, 2.0),
    ]
    result = per_account(run_of([a, b], segments=segments))
    assert sorted(result) == ["a", "b"]
    # a: 4 GPUs over its whole 10 s span of an 8-GPU cluster; b: 2 GPUs over its 5 s span.
    assert result["a"].utilization == pytest.approx(0.5)
    assert result["b"].utilization == pytest.approx(0.25)
    assert result["b"].jct_mean_s == pytest.approx(5.0)
    assert result["a"].jobs == 1
    assert result["a"].fairness_jain == 1.0


def test_per_account_without_segments_uses_job_intervals() -> None:
    a = job(account="a", gpus=8.0, first_start=5 * SECOND)
    assert per_account(run_of([a]))["a"].utilization == pytest.approx(0.5)


def test_to_json_dict_has_the_documented_keys() -> None:
    keys = set(to_json_dict(summarize(run_of([job()]))))
    assert {
        "jobs",
        "eta_sched",
        "theta_overhead",
        "utilization",
        "jct_mean_s",
        "jct_p50_s",
        "jct_p95_s",
        "jct_p99_s",
        "wait_mean_s",
        "wait_p95_s",
        "bounded_slowdown_mean",
        "makespan_s",
        "gang_wait_gpu_hours",
        "lost_gpu_hours",
        "preempt_penalty_gpu_hours",
        "cleanup_gpu_hours",
        "productive_gpu_hours",
        "preemptions",
        "deadlocks",
        "fairness_jain",
        "rejected",
        "unfinished",
        "sim_wall_s",
        "jobs_per_s",
        "passes",
        "wait_by_size",
        "idle_while_pending",
        "multinode_extra_leaves",
    } <= keys
    assert "policy" not in keys
    assert isinstance(summarize(run_of([])), PolicyMetrics)


def test_summarize_covers_a_large_trace() -> None:
    # How long it takes is measured by bench/sim_report.py (target: under 0.5 s).
    rng = np.random.default_rng(0)
    n = 82_000
    submits = np.sort(rng.integers(0, 30 * 24 * HOUR, n))
    jobs = [
        job(
            account=f"acct{k % 50}",
            submit=int(s),
            first_start=int(s) + 1000,
            end=int(s) + 60_000,
            runtime_ms=59_000,
            compute_gpu_ms=59_000,
        )
        for k, s in enumerate(submits)
    ]
    timeline = [(int(s), float(k % 64)) for k, s in enumerate(submits)]
    run = run_of(jobs, alloc_timeline=timeline)
    metrics = summarize(run)
    assert (metrics.jobs, metrics.unfinished, metrics.rejected) == (n, 0, 0)
    assert metrics.eta_sched == 1.0  # every job computes from its start: no waste counted


def test_wait_by_size_groups_started_jobs_by_their_gpus() -> None:
    # Waits of 10 s per GPU-class step; the 0-GPU job and the never-started job are in no class.
    jobs = [
        job(gpus=0.5, first_start=2 * SECOND),
        job(gpus=1.0, first_start=4 * SECOND),
        job(gpus=4.0, first_start=10 * SECOND),  # 4 is the top of "2-4"
        job(gpus=8.0, first_start=20 * SECOND),
        job(gpus=16.0, first_start=30 * SECOND),
        job(gpus=64.0, first_start=50 * SECOND),
        job(gpus=128.0, first_start=40 * SECOND),
        job(gpus=0.0, first_start=99 * SECOND),
        job(gpus=2.0, first_start=None, end=None),
    ]
    by = summarize(run_of(jobs)).wait_by_size
    assert list(by) == ["1", "2-4", "5-8", "9-64", "65+"]
    assert [by[k].jobs for k in by] == [2, 1, 1, 2, 1]
    assert by["1"].mean_s == pytest.approx(3.0)
    assert by["1"].max_s == pytest.approx(4.0)
    assert by["1"].p95_s == pytest.approx(2 + 0.95 * 2)
    assert by["9-64"].mean_s == pytest.approx(40.0)
    assert by["65+"].p95_s == pytest.approx(40.0)


def test_wait_by_size_is_zero_for_an_empty_class_and_nested_in_json() -> None:
    m = summarize(run_of([job(first_start=3 * SECOND)]))
    doc = to_json_dict(m)["wait_by_size"]
    assert doc["1"] == {"jobs": 1, "mean_s": 3.0, "p95_s": 3.0, "max_s": 3.0}
    assert doc["65+"] == {"jobs": 0, "mean_s": 0.0, "p95_s": 0.0, "max_s": 0.0}


def test_idle_while_pending_integrates_its_timeline_over_the_span() -> None:
    # 8 GPUs, span [0, 10 s]: 4 idle GPUs wanted for 5 s, then 2 for 5 s -> (20 + 10) / 80.
    timeline = [(0, 4.0), (5 * SECOND, 2.0), (10 * SECOND, 0.0)]
    m = summarize(run_of([job()], idle_pending_timeline=timeline))
    assert m.idle_while_pending == pytest.approx(30 / 80)
    assert summarize(run_of([job()])).idle_while_pending == 0.0


def test_multinode_extra_leaves_counts_jobs_spread_beyond_the_fewest_leaves() -> None:
    jobs = [job(extra_leaves=1), job(extra_leaves=2), job(extra_leaves=0), job()]
    assert summarize(run_of(jobs)).multinode_extra_leaves == 2


def test_wait_by_size_counts_the_waits_after_requeues_too() -> None:
    j = job(gpus=16.0, first_start=10 * SECOND, requeue_wait_ms=30 * SECOND, restarts=1)
    m = summarize(run_of([j]))
    assert m.wait_by_size["9-64"].mean_s == pytest.approx(40.0)
    assert m.wait_mean_s == pytest.approx(10.0)  # the queue wait is to the first start only


def test_jct_by_size_is_the_mean_jct_of_finished_jobs_per_size_class() -> None:
    small = [job(gpus=1.0, end=10 * SECOND), job(gpus=0.5, end=30 * SECOND)]
    big = job(gpus=16.0, end=100 * SECOND)
    running = job(gpus=16.0, end=None, state="RUNNING")  # not finished: not counted
    m = summarize(run_of([*small, big, running]))
    assert m.jct_by_size["1"] == pytest.approx(20.0)  # (10 + 30) / 2, submitted at 0
    assert m.jct_by_size["9-64"] == pytest.approx(100.0)
    assert m.jct_by_size["65+"] == 0.0
    assert to_json_dict(m)["jct_by_size"]["9-64"] == pytest.approx(100.0)
