"""Seeded node failures and GPU faults in the simulator: jobs on a failed node requeue and
lose work; a drained node lets its jobs finish."""

from __future__ import annotations

import dataclasses

from phalanx.config.clusterspec import regular_cluster
from phalanx.domain.jobspec import JobSpec
from phalanx.domain.time import HOUR, MINUTE
from phalanx.engine.decisions import NodeFailure, NodeWentDown
from phalanx.engine.events import NodeDown, NodeUpdate
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


def _gpu_faults(fatal_fraction: float) -> Simulator:
    faults = FaultModel(None, 0, seed=5, gpu_mtbf=8 * HOUR, gpu_repair=2 * HOUR)
    faults = dataclasses.replace(faults, fatal_fraction=fatal_fraction)
    # slurm: no preemption here, so every requeue and every loss is the faults'.
    sim = Simulator(regular_cluster(4, 8, 2), profile("slurm"), _workload(), faults=faults)
    sim.run()
    return sim


def test_gpu_faults_drain_nodes_and_only_fatal_ones_end_jobs() -> None:
    events = FaultModel(None, 0, seed=5, gpu_mtbf=8 * HOUR, gpu_repair=2 * HOUR).events(
        4, 50 * HOUR
    )
    drains = [e for e in events if isinstance(e, NodeUpdate) and e.state == "drain"]
    assert drains and len(drains) == sum(
        1 for e in events if isinstance(e, NodeUpdate) and e.state == "resume"
    )
    assert not any(isinstance(e, NodeDown) for e in events)  # no --mtbf: no node failures
    # Only degradations: drained nodes let their jobs finish, nothing is lost.
    gentle = _gpu_faults(0.0)
    assert gentle.engine.decisions and not any(
        isinstance(d, NodeFailure) for d in gentle.engine.decisions.entries
    )
    assert sum(r.lost_gpu_ms for r in gentle.records.values()) == 0
    assert any(isinstance(d, NodeWentDown) for d in gentle.engine.decisions.entries)
    # Only fatal Xids: jobs on the faulty node are requeued at once and lose work.
    fatal = _gpu_faults(1.0)
    records = list(fatal.records.values())
    assert sum(r.node_failures for r in records) > 0 and sum(r.lost_gpu_ms for r in records) > 0
    assert all(r.state == "COMPLETED" for r in records)
