"""Serving pools in the simulator (``run_serving_setup(..., pool=...)``): a burst of four
8-GPU replicas over three 8-GPU training jobs on 4 nodes x 8 GPUs, under each pool mode; and
the run's efficiency figures count the replicas' GPU-time, busy and idle."""

from __future__ import annotations

import bisect
import math

from phalanx.config.clusterspec import regular_cluster
from phalanx.config.serving_pool import ServingPool
from phalanx.domain.jobspec import JobSpec
from phalanx.domain.time import HOUR, MINUTE, SECOND, Instant
from phalanx.policies.catalog import profile
from phalanx.sim.metrics import summarize
from phalanx.sim.records import RunRecord
from phalanx.sim.serving.compare import ServingResult, run_serving_setup, serving_first
from phalanx.sim.serving.latency import LatencyModel
from phalanx.sim.serving.load import RateSeries
from phalanx.sim.serving.run import ServiceTimeline, ServingSimulator, held_gpu_ms
from phalanx.sim.serving.spec import ServiceSpec, ServingSpec
from phalanx.sim.workload import TraceJob

BURST = (2 * HOUR, 3 * HOUR)
IN_BURST = BURST[0] + 10 * MINUTE


def serving() -> ServingSpec:
    """One replica's worth of load (4 rps at 10 rps x 0.5), four in the burst, for 6 h."""
    chat = ServiceSpec(
        name="chat",
        gpus=8,
        latency=LatencyModel(capacity_rps=10, slo_s=0.5),
        min_replicas=1,
        max_replicas=4,
        target_utilization=0.5,
        priority_class="high",
        startup=60 * SECOND,
        load=RateSeries((0, BURST[0], BURST[1]), (4.0, 18.0, 4.0), 6 * HOUR),
    )
    return ServingSpec((chat,), sync=15 * SECOND)


def training() -> list[TraceJob]:
    spec = JobSpec(gpus_per_task=8, time_limit=12 * HOUR, checkpoint_interval=30 * MINUTE)
    return [TraceJob(i * SECOND, spec, 5 * HOUR, trace_id=str(i)) for i in range(3)]


def run(pool: ServingPool) -> ServingResult:
    cluster = regular_cluster(4, 8, 4)
    return run_serving_setup(pool.label, cluster, training(), serving(), pool=pool)


def ready_at(line: ServiceTimeline, at: Instant) -> int:
    return line.ready[bisect.bisect_right(line.at, at) - 1]


def training_at(result: ServingResult, at: Instant) -> float:
    times = [t for t, _ in result.training_gpus]
    return result.training_gpus[bisect.bisect_right(times, at) - 1][1]


def test_guaranteed_serving_gets_its_pool_back_and_borrows_only_idle_gpus() -> None:
    result = run(ServingPool("guaranteed", 16))
    line = result.services["chat"]
    # Before the burst training borrows half of serving's idle 16 GPUs.
    assert ready_at(line, BURST[0] - MINUTE) == 1
    assert training_at(result, BURST[0] - MINUTE) == 24
    # In the burst serving takes its 16 back (one training job preempted, with its
    # grace: it saves and loses nothing); beyond them no GPU is idle to borrow.
    assert ready_at(line, IN_BURST) == 2
    assert training_at(result, IN_BURST) == 16
    f = result.figures
    assert f.training_preemptions == 1 and f.training_lost_gpu_hours == 0
    assert f.training_unfinished == 0


def test_borrowable_serving_preempts_all_the_training_it_needs() -> None:
    result = run(ServingPool("borrowable", None))
    line = result.services["chat"]
    assert ready_at(line, IN_BURST) == 4
    assert training_at(result, IN_BURST) == 0
    f = result.figures
    assert f.training_preemptions == 3 and f.training_lost_gpu_hours == 0
    assert f.slo_attainment > 0.9


def test_static_split_neither_lends_nor_preempts() -> None:
    result = run(ServingPool("static", 16))
    line = result.services["chat"]
    # Training never gets more than its 16, even with serving's idle.
    assert max(g for _, g in result.training_gpus) == 16
    assert ready_at(line, IN_BURST) == 2
    f = result.figures
    assert f.training_preemptions == 0 and f.training_unfinished == 0


def test_efficiency_figures_count_the_replicas_busy_and_idle() -> None:
    cluster = regular_cluster(4, 8, 4)
    ran = ServingSimulator(cluster, serving_first(profile("phalanx")), training(), serving()).run()
    replicas = [j for j in ran.run.jobs if j.job_id in ran.replicas]
    held_h = sum(held_gpu_ms(j) for j in replicas) / HOUR
    busy_h = sum(line.busy_gpu_hours for line in ran.services.values())
    assert 0 < busy_h < held_h  # replicas idle part of the time (load below capacity)
    whole = summarize(ran.run)
    trained = summarize(
        RunRecord(
            policy="t",
            total_gpus=ran.run.total_gpus,
            node_count=ran.run.node_count,
            jobs=[j for j in ran.run.jobs if j.job_id not in ran.replicas],
            alloc_timeline=[],
            segments=[],
        )
    )
    total = whole.compute_gpu_hours + whole.launch_gpu_hours + whole.cleanup_gpu_hours
    rest = trained.compute_gpu_hours + trained.launch_gpu_hours + trained.cleanup_gpu_hours
    extra = whole.evict_gpu_hours + whole.lost_gpu_hours + whole.gang_wait_gpu_hours
    extra -= trained.evict_gpu_hours + trained.lost_gpu_hours + trained.gang_wait_gpu_hours
    # Every GPU-hour the replicas held, busy or idle, is in the run's efficiency model.
    assert math.isclose(total - rest + extra, held_h, rel_tol=1e-9)
    assert whole.compute_gpu_hours > trained.compute_gpu_hours + busy_h
    assert whole.eta_sched != trained.eta_sched or whole.preemptions == 0
