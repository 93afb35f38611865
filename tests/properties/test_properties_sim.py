"""Properties of every profile over random small clusters and random job streams.

(a) never more GPUs allocated than exist, in total and per node; (b) never a partial gang;
(d) the same workload gives the same decision log. Every run also ends every job.
"""

from __future__ import annotations

from collections import defaultdict

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from phalanx.domain.cluster import Cluster
from phalanx.domain.time import MINUTE
from phalanx.policies.catalog import POLICIES
from phalanx.sim.records import RunRecord
from phalanx.sim.simulator import Simulator
from phalanx.sim.workload import TraceJob
from phalanx.testing import make_job, small_cluster

PROFILES = sorted(POLICIES)
SETTINGS = settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)


@st.composite
def clusters(draw: st.DrawFn) -> Cluster:
    nodes = draw(st.integers(1, 6))
    gpus = draw(st.sampled_from([4, 8, 16]))
    per_leaf = draw(st.integers(1, 4))
    return small_cluster(nodes=nodes, gpus=gpus, per_leaf=per_leaf, leaves_per_spine=2)


@st.composite
def trace_jobs(draw: st.DrawFn) -> TraceJob:
    nodes = draw(st.integers(1, 3))
    limit = draw(st.integers(1, 240)) * MINUTE
    spec = make_job(
        gpus=draw(st.integers(1, 16)),
        nodes=nodes,
        nodes_max=nodes + draw(st.sampled_from([0, 0, 0, 1])),
        time_limit=limit,
        account=draw(st.sampled_from(["a", "b", "c"])),
        qos=draw(st.sampled_from(["normal", "normal", "normal", "high"])),
        checkpoint_interval=draw(st.sampled_from([None, 10 * MINUTE])),
    )
    runtime = max(1, limit * draw(st.integers(1, 10)) // 10)
    return TraceJob(draw(st.integers(0, 180)) * MINUTE, spec, runtime)


workloads = st.lists(trace_jobs(), min_size=1, max_size=12).map(
    lambda jobs: sorted(jobs, key=lambda j: j.submit)
)


def simulate(cluster: Cluster, profile: str, jobs: list[TraceJob]) -> tuple[Simulator, RunRecord]:
    sim = Simulator(cluster, POLICIES[profile], jobs)
    return sim, sim.run()


def check_capacity(sim: Simulator, record: RunRecord) -> None:
    """(a): the allocation timeline and per-node use rebuilt from the decision log."""
    cluster = sim.cluster
    for at, allocated in record.alloc_timeline:
        assert -1e-9 <= allocated <= cluster.total_gpus + 1e-9, (at, allocated)
    used: dict[int, float] = defaultdict(float)
    held: dict[int, list[tuple[int, ...]]] = defaultdict(list)
    current: dict[int, tuple[int, ...]] = {}
    jobs = sim.engine.jobs
    for at, kind, job_id, detail in sim.engine.decisions.entries:
        if kind == "start":
            nodes = detail[1]
            assert isinstance(nodes, tuple)
            current[job_id] = nodes
            for n in nodes:
                used[n] += jobs[job_id].spec.gpus_per_node
        elif kind in ("end", "requeue", "launch_failed") and job_id in current:
            for n in current.pop(job_id):
                used[n] -= jobs[job_id].spec.gpus_per_node
        elif kind == "hold":
            nodes, gpus = detail
            assert isinstance(nodes, tuple) and isinstance(gpus, float)
            held[job_id].append(nodes)
            for n in nodes:
                used[n] += gpus / len(nodes)
        elif kind == "unhold":
            nodes, gpus = detail
            assert isinstance(nodes, tuple) and isinstance(gpus, float)
            for n in nodes:
                used[n] -= gpus / len(nodes)
        for n, gpus in used.items():
            assert -1e-9 <= gpus <= cluster.nodes[n].gpus + 1e-9, (at, kind, job_id, n, gpus)
    assert not current and all(abs(g) < 1e-9 for g in used.values())


def check_whole_gangs(sim: Simulator, record: RunRecord) -> None:
    """(b): every start has the job's node count, distinct nodes, and all its GPUs."""
    held: dict[tuple[int, int], list[tuple[int, float]]] = defaultdict(list)
    for seg in record.segments:
        held[(seg.job_id, seg.start)].append((seg.node, seg.gpus))
    for at, kind, job_id, detail in sim.engine.decisions.entries:
        if kind != "start":
            continue
        spec = sim.engine.jobs[job_id].spec
        nodes = detail[1]
        assert isinstance(nodes, tuple)
        assert spec.nodes_min <= len(nodes) <= spec.nodes_max
        assert len(set(nodes)) == len(nodes)
        segs = held[(job_id, at)]
        assert sorted(n for n, _ in segs) == sorted(nodes)
        assert sum(g for _, g in segs) == pytest.approx(len(nodes) * spec.gpus_per_node)


def check_all_end(record: RunRecord) -> None:
    unfinished = [(j.job_id, j.state) for j in record.jobs if j.end is None]
    assert not unfinished


@pytest.mark.parametrize("profile", PROFILES)
@SETTINGS
@given(cluster=clusters(), jobs=workloads)
def test_never_more_gpus_than_exist_and_never_a_partial_gang(
    profile: str, cluster: Cluster, jobs: list[TraceJob]
) -> None:
    sim, record = simulate(cluster, profile, jobs)
    check_capacity(sim, record)
    if profile != "k8s-default":
        check_whole_gangs(sim, record)
    check_all_end(record)


@pytest.mark.parametrize("profile", PROFILES)
@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cluster=clusters(), jobs=workloads)
def test_same_workload_same_decision_log(
    profile: str, cluster: Cluster, jobs: list[TraceJob]
) -> None:
    first, _ = simulate(cluster, profile, jobs)
    second, _ = simulate(cluster, profile, jobs)
    assert first.engine.decisions.entries == second.engine.decisions.entries
