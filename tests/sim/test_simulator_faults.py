"""Seeded node failures in the simulator: jobs on a failed node requeue and lose work."""

from __future__ import annotations

from phalanx.config.clusterspec import regular_cluster
from phalanx.domain.jobspec import JobSpec
from phalanx.domain.time import HOUR, MINUTE
from phalanx.policies.catalog import profile
from phalanx.sim.faults import FaultModel
from phalanx.sim.simulator import Simulator
from phalanx.sim.workload import TraceJob


def _workload() -> list[TraceJob]:
    spec = JobSpec(gpus_per_task=8, time_limit=20 * HOUR, checkpoint_interval=30 * MINUTE)
    return [TraceJob(i * MINUTE, spec, 6 * HOUR, f"j{i}") for i in range(8)]


def _run() -> Simulator:
    sim = Simulator(
        regular_cluster(4, 8, 2),
        profile("phalanx"),
        _workload(),
        faults=FaultModel(mtbf=10 * HOUR, repair=1 * HOUR, seed=3),
    )
    sim.run()
    return sim


def test_failed_nodes_requeue_their_jobs_which_lose_work_and_still_finish() -> None:
    sim = _run()
    records = list(sim.records.values())
    assert sum(r.node_failures for r in records) > 0
    assert all(r.state == "COMPLETED" for r in records)
    failed = [r for r in records if r.node_failures]
    assert all(r.restarts >= r.node_failures for r in failed)
    assert sum(r.lost_gpu_ms for r in records) > 0
    # Work kept at checkpoints plus the final run adds up to exactly what the job needed.
    assert all(r.compute_gpu_ms == r.runtime_ms * r.gpus for r in records)


def test_faults_are_seeded() -> None:
    assert _run().engine.decisions.entries == _run().engine.decisions.entries
