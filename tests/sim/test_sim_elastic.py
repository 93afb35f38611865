"""Elastic jobs in the simulator: the throughput model, the executor moving a resized run's
end, marking trace jobs elastic, and a whole replay where a job grows and ends sooner."""

from __future__ import annotations

import dataclasses
import math

import pytest

from phalanx.config.clusterspec import regular_cluster
from phalanx.domain.jobspec import ArraySpec, JobSpec
from phalanx.domain.time import HOUR, MINUTE
from phalanx.errors import InputError
from phalanx.policies.catalog import profile
from phalanx.sim.elastic import Scaling, make_elastic
from phalanx.sim.executor import SimulatedExecutor
from phalanx.sim.records import JobRecord
from phalanx.sim.simulator import Simulator
from phalanx.sim.workload import TraceJob


def test_throughput_is_linear_with_an_efficiency_per_added_node() -> None:
    s = Scaling(base_nodes=2, efficiency=0.8)
    assert s.rate(2) == 1.0
    assert math.isclose(s.rate(4), (1 + 0.8 * 3) / (1 + 0.8))
    assert math.isclose(s.rate(1), 1 / 1.8)
    assert Scaling(1, 1.0).rate(3) == 3.0
    with pytest.raises(InputError, match="efficiency"):
        Scaling(1, 0.0)


def executor(scaling: Scaling | None, checkpoint: int | None = None) -> SimulatedExecutor:
    records = {1: JobRecord(1, "a", "u", 8.0, 0, HOUR)}
    ex = SimulatedExecutor(records, {1: HOUR}, {1: checkpoint}, launch_latency_ms=0, cleanup_ms=0)
    if scaling is not None:
        ex.scaling[1] = scaling
    return ex


def test_a_resize_moves_the_end_by_the_work_left_at_the_new_rate() -> None:
    ex = executor(Scaling(1, 1.0))
    first = ex.launch(0, 1, 1, 8.0, (0,))
    assert first.at == HOUR
    moved = ex.resize(30 * MINUTE, 1, 1, 16.0, (0, 1))  # twice as fast from 30 min
    assert moved is not None and moved[0] is first
    assert moved[1].at == 45 * MINUTE
    # Shrunk again at 40 min: 30 + 2 x 10 = 50 min of work done, 10 left at the old pace.
    again = ex.resize(40 * MINUTE, 1, 1, 8.0, (0,))
    assert again is not None and again[0] is moved[1]
    assert again[1].at == 50 * MINUTE
    assert ex.exited(50 * MINUTE, 1, 1)
    # GPU time is what it held: 8 GPUs for 40 min and 16 for 10.
    assert ex.records[1].compute_gpu_ms == (8 * 40 + 16 * 10) * MINUTE


def test_a_job_without_a_throughput_model_keeps_its_end() -> None:
    ex = executor(None)
    ex.launch(0, 1, 1, 8.0, (0,))
    assert ex.resize(30 * MINUTE, 1, 1, 16.0, (0, 1)) is None


def test_a_killed_elastic_job_keeps_the_work_of_its_last_checkpoint() -> None:
    ex = executor(Scaling(1, 1.0), checkpoint=20 * MINUTE)
    ex.launch(0, 1, 1, 8.0, (0,))
    ex.resize(10 * MINUTE, 1, 1, 16.0, (0, 1))
    # Killed at 25 min: 10 + 2 x 15 = 40 min of work, two 20-min checkpoints kept.
    assert ex.kill(25 * MINUTE, 1, 1) is not None
    assert ex.remaining[1] == HOUR - 40 * MINUTE
    rec = ex.records[1]
    # The end books 25 min at the last size (16 GPUs), less what the resize owed back.
    assert rec.compute_gpu_ms + rec.lost_gpu_ms == (8 * 10 + 16 * 15) * MINUTE
    assert rec.lost_gpu_ms == 0  # all the work done was checkpointed


def jobs(count: int) -> list[TraceJob]:
    spec = JobSpec(gpus_per_task=8, time_limit=4 * HOUR)
    array = dataclasses.replace(spec, array=ArraySpec((0, 1)))
    out = [TraceJob(i * MINUTE, spec, HOUR, str(i)) for i in range(count)]
    return [*out, TraceJob(count * MINUTE, array, HOUR, "array")]


def test_make_elastic_marks_a_seeded_share_of_the_jobs_it_can() -> None:
    assert make_elastic(jobs(20), 0.0) == jobs(20)
    every = make_elastic(jobs(20), 1.0, efficiency=0.9)
    assert all(tj.spec.elastic for tj in every[:-1]) and not every[-1].spec.elastic
    one = every[0]
    assert (one.spec.nodes_min, one.spec.nodes_max) == (1, 2)
    assert one.scaling == Scaling(1, 0.9) and one.runtime == HOUR
    half = make_elastic(jobs(200), 0.5, seed=3)
    assert half == make_elastic(jobs(200), 0.5, seed=3)
    assert 60 < sum(tj.spec.elastic for tj in half) < 140
    with pytest.raises(InputError, match="--elastic"):
        make_elastic(jobs(2), 1.5)


def test_an_elastic_job_alone_grows_and_ends_sooner() -> None:
    cluster = regular_cluster(2, 8, 2)
    [plain] = [tj for tj in jobs(1) if tj.spec.array is None]
    [grown] = make_elastic([plain], 1.0, efficiency=1.0)
    ends = []
    for tj in (plain, grown):
        run = Simulator(cluster, profile("phalanx"), [tj]).run()
        [rec] = run.jobs
        assert rec.end is not None and rec.state == "COMPLETED"
        ends.append(rec.end)
    # Twice the nodes, twice the speed (from when it grew, within its launch latency).
    assert ends[0] >= HOUR
    assert ends[1] < HOUR * 0.55
