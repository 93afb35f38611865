"""A profile's default ``--switches=fewest@wait`` for multi-node jobs (select param
``gang_switches_wait_ms``): a gang waits that long for the fewest leaves, then takes any."""

from __future__ import annotations

import dataclasses

from phalanx.config.clusterspec import regular_cluster
from phalanx.domain.cluster import Cluster
from phalanx.domain.jobspec import JobSpec
from phalanx.domain.time import HOUR, MINUTE
from phalanx.policies.catalog import profile
from phalanx.sched.profile import Profile
from phalanx.sim.simulator import Simulator
from phalanx.sim.workload import TraceJob


def _cluster() -> Cluster:
    # 6 nodes of 8 GPUs, 2 per leaf; node i has feature "n<i>" so jobs can be pinned.
    base = regular_cluster(6, 8, 2)
    nodes = tuple(dataclasses.replace(n, features=frozenset({f"n{n.index}"})) for n in base.nodes)
    return dataclasses.replace(base, nodes=nodes)


def _on(node: int, runtime: int) -> TraceJob:
    spec = JobSpec(gpus_per_task=8, time_limit=runtime, features=frozenset({f"n{node}"}))
    return TraceJob(0, spec, runtime, f"on{node}")


def _run(wait_ms: int | None) -> tuple[int, int]:
    """Long jobs on nodes 0 and 2, hour-long ones on 4 and 5: at one minute only nodes 1 and 3
    (two leaves) are free for a 2-node gang. Returns its (wait, extra leaves)."""
    gang = JobSpec(nodes_min=2, nodes_max=2, gpus_per_task=8, time_limit=2 * HOUR)
    work = [_on(0, 10 * HOUR), _on(2, 10 * HOUR), _on(4, HOUR), _on(5, HOUR)]
    work.append(TraceJob(MINUTE, gang, HOUR, "gang"))
    prof: Profile = profile("slurm")
    if wait_ms is not None:
        params = {**prof.params, "select/topology": {"gang_switches_wait_ms": wait_ms}}
        prof = dataclasses.replace(prof, params=params)
    run = Simulator(_cluster(), prof, work).run()
    rec = run.jobs[-1]
    assert rec.first_start is not None
    return rec.first_start - rec.submit, rec.extra_leaves


def test_without_a_default_the_gang_spans_two_leaves_at_once() -> None:
    wait, extra = _run(None)
    assert extra == 1 and wait < MINUTE


def test_with_a_default_the_gang_waits_for_a_whole_leaf() -> None:
    wait, extra = _run(2 * HOUR)
    assert extra == 0
    assert HOUR - MINUTE <= wait < HOUR + MINUTE  # the hour-long jobs on leaf 3 end


def test_once_the_wait_is_over_the_gang_takes_any_leaves() -> None:
    wait, extra = _run(10 * MINUTE)
    assert extra == 1
    assert 9 * MINUTE <= wait <= 11 * MINUTE
