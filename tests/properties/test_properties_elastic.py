"""Elastic jobs: no node over-committed, nodes_min <= nodes <= nodes_max at every step, a grown
job never delays a reservation, and a job that shrinking elastic jobs could start is started
(and nothing is preempted for it)."""

from __future__ import annotations

from collections import defaultdict

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from phalanx.domain.cluster import Cluster
from phalanx.domain.jobspec import MILLI, JobSpec
from phalanx.domain.state import JobState
from phalanx.domain.time import MINUTE, Instant
from phalanx.engine.decisions import Preempted, Resized
from phalanx.engine.events import TimerFired
from phalanx.engine.timers import PASS
from phalanx.testing import EngineDriver, make_job, small_cluster

_SETTINGS = settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@st.composite
def clusters(draw: st.DrawFn) -> Cluster:
    return small_cluster(
        nodes=draw(st.integers(2, 6)), gpus=draw(st.sampled_from([4, 8])), per_leaf=2
    )


@st.composite
def specs(draw: st.DrawFn, high: bool = True) -> tuple[Instant, JobSpec]:
    low = draw(st.integers(1, 3))
    elastic = draw(st.booleans())
    qos = draw(st.sampled_from(["normal", "normal", "high"])) if high else "normal"
    spec = make_job(
        gpus=draw(st.integers(1, 8)),
        nodes=low,
        nodes_max=low + (draw(st.integers(0, 3)) if elastic else 0),
        time_limit=draw(st.integers(1, 120)) * MINUTE,
        elastic=elastic,
        qos=qos,
    )
    return draw(st.integers(0, 60)) * MINUTE, spec


def _check(d: EngineDriver) -> None:
    """The engine's books agree with the running jobs, no device is given twice, no node is
    over-committed, and every running job holds a node count it asked for."""
    state = d.engine.state
    used: dict[int, int] = defaultdict(int)
    cpus: dict[int, int] = defaultdict(int)
    devices: set[tuple[int, int]] = set()
    for job in d.engine.jobs.values():
        if job.state not in (JobState.RUNNING, JobState.COMPLETING):
            continue
        alloc = job.alloc
        assert alloc is not None and state.running[job.id].alloc == alloc
        assert len(set(alloc.nodes)) == len(alloc.nodes)
        if job.state is JobState.RUNNING:
            assert job.spec.nodes_min <= len(alloc.nodes) <= job.spec.nodes_max, job
        for node, devs in zip(alloc.nodes, alloc.devices, strict=True):
            used[node] += len(devs)
            cpus[node] += alloc.cpus
            for dev in devs:
                assert (node, dev) not in devices, (job, node, dev)
                devices.add((node, dev))
    for node in d.engine.cluster.nodes:
        assert used[node.index] <= node.gpus and cpus[node.index] <= node.cpus
        assert int(state.cap.gpus[node.index]) == node.gpus - used[node.index]
    assert (state.cap.dev[state.cap.dev >= 0] <= MILLI).all()


@_SETTINGS
@given(cluster=clusters(), jobs=st.lists(specs(), min_size=1, max_size=10))
def test_no_node_is_over_committed_and_node_counts_stay_in_range(
    cluster: Cluster, jobs: list[tuple[Instant, JobSpec]]
) -> None:
    d = EngineDriver(cluster, "slurm")
    for at, spec in sorted(jobs, key=lambda j: j[0]):
        d.submit_at(at, spec)  # each runs to its limit (killed there)
    for _ in range(100_000):
        if d.step() is None:
            break
        _check(d)
    else:
        pytest.fail("the run did not end")
    assert all(
        j.state.is_final or j.spec.nodes_min > len(cluster.nodes) for j in d.engine.jobs.values()
    )


@_SETTINGS
@given(cluster=clusters(), jobs=st.lists(specs(high=False), min_size=1, max_size=10))
def test_a_grown_job_never_delays_a_reservation(
    cluster: Cluster, jobs: list[tuple[Instant, JobSpec]]
) -> None:
    """Every job submitted at 0 runs exactly to its limit, so the timeline's promises are
    exact: the reserved head starts no later than the first expected start it was given,
    with elastic jobs growing around it."""
    d = EngineDriver(cluster, "slurm")
    for _, spec in jobs:
        d.submit(spec, runtime=spec.time_limit)
    promised: dict[int, Instant] = {}
    for _ in range(100_000):
        event = d.step()
        if event is None:
            break
        if isinstance(event, TimerFired) and event.key == PASS:
            for job in d.engine.jobs.values():
                if job.state is JobState.PENDING and job.expected_start is not None:
                    promised.setdefault(job.id, job.expected_start)
    else:
        pytest.fail("the run did not end")
    for job_id, expected in promised.items():
        start = d.job(job_id).first_start
        assert start is not None and start <= expected, (job_id, start, expected)


@_SETTINGS
@given(
    nodes=st.integers(2, 8),
    bounds=st.lists(st.tuples(st.integers(1, 3), st.integers(0, 3)), min_size=1, max_size=4),
    ask=st.integers(1, 8),
)
def test_a_job_that_shrinking_could_start_is_started(
    nodes: int, bounds: list[tuple[int, int]], ask: int
) -> None:
    """Whole-node elastic jobs fill what they can; a high-QOS job of ``ask`` whole nodes
    that fits in the free nodes plus what the elastic jobs hold above their minimums starts
    at once, by shrinking them: nothing is preempted."""
    gpus = 8
    d = EngineDriver(small_cluster(nodes=nodes, gpus=gpus, per_leaf=2), "slurm")
    for low, extra in bounds:
        d.submit(make_job(gpus=gpus, nodes=low, nodes_max=low + extra, elastic=True,
                          time_limit=600 * MINUTE))  # fmt: skip
        d.settle()
    d.advance(MINUTE)
    running = [j for j in d.engine.jobs.values() if j.state is JobState.RUNNING]
    surplus = sum(len(j.alloc.nodes) - j.spec.nodes_min for j in running if j.alloc)
    free = int((d.engine.state.cap.gpus == gpus).sum())
    [high] = d.submit(make_job(gpus=gpus, nodes=ask, qos="high", time_limit=60 * MINUTE))
    d.settle()
    _check(d)
    if ask <= free + surplus:
        assert d.state(high) is JobState.RUNNING
        assert not d.decisions(Preempted)
        shrunk = [r for r in d.decisions(Resized) if r.for_job == high]
        assert sum(len(r.removed) for r in shrunk) <= max(0, ask - free)
    for job in running:
        assert job.state is JobState.RUNNING or d.decisions(Preempted, job.id)
