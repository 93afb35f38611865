"""The simulator turns Python's cyclic garbage collector off for a run only, and back as it
was, even when the run fails."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from phalanx.config.clusterspec import regular_cluster
from phalanx.domain.jobspec import JobSpec
from phalanx.domain.time import HOUR, MINUTE
from phalanx.policies.catalog import profile
from phalanx.sim.simulator import Simulator
from phalanx.sim.workload import TraceJob


@pytest.fixture
def collector_on() -> Iterator[None]:
    was = gc.isenabled()
    gc.enable()
    yield
    if not was:
        gc.disable()


def _sim() -> Simulator:
    spec = JobSpec(gpus_per_task=8, time_limit=2 * HOUR)
    work = [TraceJob(i * MINUTE, spec, HOUR, f"j{i}") for i in range(4)]
    return Simulator(regular_cluster(2, 8, 2), profile("slurm"), work)


@pytest.mark.usefixtures("collector_on")
def test_the_collector_is_off_during_a_run_and_on_again_after() -> None:
    sim = _sim()
    seen: list[bool] = []
    sim.run(progress=lambda done, total: seen.append(gc.isenabled()))
    assert seen and not any(seen)
    assert gc.isenabled()
    assert all(r.state == "COMPLETED" for r in sim.records.values())


@pytest.mark.usefixtures("collector_on")
def test_the_collector_comes_back_when_a_run_fails() -> None:
    sim = _sim()

    def fail(done: int, total: int) -> None:
        raise RuntimeError("stop")

    with pytest.raises(RuntimeError):
        sim.run(progress=fail)
    assert gc.isenabled()


def test_a_collector_that_was_off_stays_off() -> None:
    was = gc.isenabled()
    gc.disable()
    try:
        _sim().run()
        assert not gc.isenabled()
    finally:
        if was:
            gc.enable()
