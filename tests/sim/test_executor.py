"""What the simulated executor records beyond GPU time: placements and idle-while-pending."""

from __future__ import annotations

from phalanx.config.clusterspec import regular_cluster
from phalanx.domain.jobspec import JobSpec
from phalanx.domain.time import HOUR, MINUTE
from phalanx.engine.decisions import Requeued, Submitted
from phalanx.policies.catalog import profile
from phalanx.sim.executor import SimulatedExecutor
from phalanx.sim.metrics import alloc_integral
from phalanx.sim.records import JobRecord
from phalanx.sim.simulator import Simulator
from phalanx.sim.workload import TraceJob


def _executor(records: dict[int, JobRecord]) -> SimulatedExecutor:
    # 6 nodes of 8 GPUs, 2 per leaf: 3 leaves.
    return SimulatedExecutor(
        records,
        dict.fromkeys(records, HOUR),
        dict.fromkeys(records),
        launch_latency_ms=0,
        cleanup_ms=0,
        total_gpus=48.0,
        node_gpus=(8,) * 6,
        leaf_of=(0, 0, 1, 1, 2, 2),
        fewest_leaves=(0, 1, 1, 2, 2, 3, 3),
    )


def test_a_gang_spread_over_more_leaves_than_needed_is_marked() -> None:
    records = {i: JobRecord(i, "a", "u", 16.0, 0, HOUR) for i in (1, 2, 3)}
    ex = _executor(records)
    ex.launch(0, 1, 1, 16.0, (0, 1))  # one leaf: as tight as it gets
    ex.launch(0, 2, 1, 16.0, (2, 4))  # two leaves where one would do
    ex.launch(0, 3, 1, 8.0, (5,))
    assert [records[i].extra_leaves for i in (1, 2, 3)] == [0, 1, 0]


def test_idle_gpus_wanted_by_a_pending_gang_are_counted() -> None:
    # 4 nodes x 8 GPUs. A one-node job runs an hour; a 4-node gang, submitted a minute later,
    # waits for it: meanwhile 24 GPUs are idle and it asks for 32, so min(24, 32) = 24.
    one = JobSpec(gpus_per_task=8, time_limit=2 * HOUR)
    gang = JobSpec(nodes_min=4, nodes_max=4, gpus_per_task=8, time_limit=2 * HOUR)
    work = [TraceJob(0, one, HOUR, "one"), TraceJob(MINUTE, gang, HOUR, "gang")]
    sim = Simulator(regular_cluster(4, 8, 2), profile("slurm"), work)
    run = sim.run()
    first, second = run.jobs
    assert second.first_start is not None and first.end is not None
    assert second.first_start >= first.end
    integral = alloc_integral(run.idle_pending_timeline, 0, second.first_start)
    assert integral == 24 * (second.first_start - MINUTE)
    assert run.idle_pending_timeline[-1][1] == 0.0


def test_a_requeued_job_waits_again_until_its_next_launch() -> None:
    records = {1: JobRecord(1, "a", "u", 8.0, 0, HOUR)}
    ex = _executor(records)
    ex.observe([Submitted(0, 1, 1)])
    ex.launch(5, 1, 1, 8.0, (0,))
    ex.observe([Requeued(100, 1, 1)])
    assert ex.pending == {1: 8.0}
    ex.launch(160, 1, 2, 8.0, (1,))
    assert records[1].requeue_wait_ms == 60 and records[1].restarts == 1
    assert ex.pending == {}
