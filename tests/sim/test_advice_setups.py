"""Set-ups: names, the two-cluster split and merging its two runs."""

from __future__ import annotations

import pytest

from phalanx.config.clusterspec import regular_cluster
from phalanx.domain.jobspec import JobSpec
from phalanx.errors import ConfigError
from phalanx.sim.records import JobRecord, RunRecord
from phalanx.sim.setups import (
    SETUPS,
    merge_runs,
    merge_timelines,
    peak_gpus,
    setup,
    split_clusters,
)
from phalanx.sim.workload import TraceJob


def test_every_setup_names_profiles_of_the_catalog() -> None:
    assert list(SETUPS) == ["slurm", "k8s", "kueue", "volcano", "split", "phalanx"]
    for s in SETUPS.values():
        assert [p.name for p in s.profiles()] == (
            [s.profile] if s.serving_profile is None else [s.profile, s.serving_profile]
        )
    with pytest.raises(ConfigError, match="unknown setup 'lsf'"):
        setup("lsf")


def test_peak_counts_overlapping_demand_once_at_a_handover() -> None:
    def job(at: int, runtime: int, gpus: int) -> TraceJob:
        return TraceJob(at, JobSpec(gpus_per_task=gpus), runtime)

    # The second ends exactly when the third starts: 6 at most, never 4 + 2 + 2.
    jobs = [job(0, 100, 4), job(0, 50, 2), job(50, 50, 2)]
    assert peak_gpus(jobs) == 6
    assert peak_gpus([]) == 0


def test_split_gives_serving_the_fewest_nodes_for_its_peak() -> None:
    cluster = regular_cluster(16, 8, 4)
    train, serve = split_clusters(cluster, 20)  # 20 GPUs: 3 nodes of 8
    assert (len(train.nodes), len(serve.nodes)) == (13, 3)
    assert train.total_gpus + serve.total_gpus == cluster.total_gpus
    with pytest.raises(ConfigError, match="leaves no node"):
        split_clusters(cluster, 16 * 8)


def test_merged_timelines_add_step_functions() -> None:
    a = [(0, 2.0), (10, 0.0)]
    b = [(5, 3.0), (10, 1.0), (20, 0.0)]
    assert merge_timelines(a, b) == [(0, 2.0), (5, 5.0), (10, 1.0), (20, 0.0)]
    assert merge_timelines([], b) == b


def test_merged_runs_hold_both_sides() -> None:
    one = RunRecord("slurm", 8, 1, [JobRecord(1, "a", "u", 8, 0, 10)], [(0, 8.0)], deadlocks=1)
    two = RunRecord("k8s-default", 16, 2, [JobRecord(1, "b", "u", 4, 0, 10)], [(3, 4.0)])
    merged = merge_runs("split", one, two)
    assert (merged.policy, merged.total_gpus, merged.node_count) == ("split", 24, 3)
    assert [j.account for j in merged.jobs] == ["a", "b"]
    assert merged.alloc_timeline == [(0, 8.0), (3, 12.0)]
    assert merged.deadlocks == 1
