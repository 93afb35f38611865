"""The experiment API: profiles run over one workload and cluster, results by profile name."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from phalanx.domain.jobspec import JobSpec
from phalanx.domain.time import HOUR, MINUTE
from phalanx.errors import TraceError
from phalanx.policies.catalog import profile
from phalanx.sim.experiment import (
    Experiment,
    Workload,
    generated_workload,
    run_experiment,
    trace_workload,
    uniform_cluster,
    write_results,
)
from phalanx.sim.metrics import summarize
from phalanx.sim.simulator import Simulator
from phalanx.sim.traces.options import TraceOptions
from phalanx.sim.workload import TraceJob


def _workload() -> Workload:
    one = JobSpec(gpus_per_task=8, time_limit=2 * HOUR, account="a")
    gang = JobSpec(nodes_min=2, nodes_max=2, gpus_per_task=8, time_limit=2 * HOUR, account="b")
    jobs = [TraceJob(i * MINUTE, gang if i % 3 == 0 else one, HOUR, f"j{i}") for i in range(9)]
    return Workload(jobs, "hand-made", "test", None)


def test_each_profile_runs_in_order_and_matches_a_simulator_of_its_own() -> None:
    cluster = uniform_cluster(4, 8, 2)
    work = _workload()
    experiment = Experiment(work, cluster, [profile("phalanx"), profile("fifo")])
    results = run_experiment(experiment)
    assert list(results) == ["phalanx", "fifo"]
    alone = summarize(Simulator(cluster.cluster, profile("fifo"), work.jobs).run())
    got = results["fifo"].metrics
    assert (got.jct_mean_s, got.wait_by_size) == (alone.jct_mean_s, alone.wait_by_size)
    assert results["fifo"].run is None and not results["fifo"].accounts


def test_runs_and_accounts_are_kept_when_asked_and_written_as_json(tmp_path: Path) -> None:
    experiment = Experiment(
        _workload(), uniform_cluster(4, 8, 2), [profile("slurm")], keep_runs=True, per_account=True
    )
    results = run_experiment(experiment)
    result = results["slurm"]
    assert result.run is not None and result.run.segments
    assert sorted(result.accounts) == ["a", "b"]
    path = tmp_path / "out.json"
    write_results(str(path), experiment, results)
    doc = json.loads(path.read_text())
    assert doc["cluster"]["nodes"] == 4 and doc["cluster"]["leaves"] == 2
    assert doc["policies"]["slurm"]["wait_by_size"]["9-64"]["jobs"] == 3
    assert set(doc["accounts"]["slurm"]) == {"a", "b"}


def test_workloads_apply_the_shared_trace_options(tmp_path: Path) -> None:
    generated = generated_workload(1.0, TraceOptions(limit=5, load=2.0, seed=3))
    assert len(generated.jobs) == 5 and generated.jobs[0].submit == 0
    assert generated.options.seed == 3
    with pytest.raises(TraceError):
        trace_workload(str(tmp_path / "missing.csv"))
