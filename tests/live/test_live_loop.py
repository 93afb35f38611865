"""The control loop drives the engine exactly as the simulator does, persisting first."""

from __future__ import annotations

from pathlib import Path

import pytest

from phalanx.domain.clusterspec import regular_cluster
from phalanx.domain.job import JobSpec
from phalanx.domain.time import HOUR, MINUTE
from phalanx.engine import Engine, Launch, Submit
from phalanx.live.clock import FakeClock
from phalanx.live.executor import FakeExecutor
from phalanx.live.loop import ControlLoop
from phalanx.live.store import MemoryStore, Record, SqliteStore
from phalanx.policies.catalog import profile
from phalanx.sim.generator import generate
from phalanx.sim.simulator import Simulator
from phalanx.sim.workload import TraceJob


def _workload() -> list[TraceJob]:
    """A day of the synthetic AI workload, plus gangs and GPU shares to place."""
    jobs = generate(7, days=1.0, scale=0.5)
    extra = [
        TraceJob(
            i * 37 * MINUTE,
            JobSpec(
                name=f"gang{i}",
                nodes_min=2 + i % 3,
                nodes_max=2 + i % 3,
                gpus_per_task=8,
                time_limit=6 * HOUR,
            ),
            (1 + i % 4) * HOUR,
        )
        for i in range(30)
    ] + [
        TraceJob(
            i * 11 * MINUTE, JobSpec(name=f"share{i}", gpu_milli=250, time_limit=HOUR), 20 * MINUTE
        )
        for i in range(60)
    ]
    return sorted(jobs + extra, key=lambda tj: tj.submit)


def _replay_live(policy: str, workload: list[TraceJob]) -> tuple[Engine, MemoryStore]:
    clock = FakeClock()
    engine = Engine(regular_cluster(16, 8, 4), profile(policy), persist=True)
    store = MemoryStore()
    loop = ControlLoop(engine, clock, store)
    runtimes = {i + 1: tj.runtime for i, tj in enumerate(workload)}
    loop.attach(FakeExecutor(loop.deliver, runtimes, launch_latency_ms=2_000, cleanup_ms=1_000))
    for tj in workload:
        loop.deliver(Submit(tj.submit, tj.spec))
    while (due := loop.next_due()) is not None:
        clock.set(due)
        loop.run_due()
    return engine, store


# Every profile whose runs are not preempted here: the fake executor, unlike the simulated
# one, keeps no checkpoints, so a requeued run would end at another time.
@pytest.mark.parametrize("policy", ["fifo", "slurm", "k8s-default", "kueue", "volcano", "phalanx"])
def test_live_loop_with_fake_clock_gives_the_simulators_decision_log(policy: str) -> None:
    workload = _workload()
    assert len(workload) > 100
    sim = Simulator(regular_cluster(16, 8, 4), profile(policy), workload)
    sim.run()
    live, _ = _replay_live(policy, workload)
    assert live.decisions.entries == sim.engine.decisions.entries


def test_every_start_is_persisted_before_its_launch() -> None:
    events: list[str] = []

    class Recorder(MemoryStore):
        def append(self, record: Record) -> None:
            events.append(f"persist {record.what} {record.job_id}")
            super().append(record)

    class Launcher(FakeExecutor):
        def launch(self, cmd: Launch, at: int) -> None:
            events.append(f"launch {cmd.job_id}")
            super().launch(cmd, at)

    clock = FakeClock()
    engine = Engine(regular_cluster(2, 8, 2), profile("slurm"), persist=True)
    loop = ControlLoop(engine, clock, Recorder())
    loop.attach(Launcher(loop.deliver, {1: 60_000, 2: 60_000}))
    spec = _workload()[0].spec
    loop.deliver(Submit(0, spec))
    loop.deliver(Submit(0, spec))
    loop.run_due()
    launches = [e for e in events if e.startswith("launch")]
    assert launches
    for launch in launches:
        job = launch.split()[1]
        assert events.index(f"persist start {job}") < events.index(launch)


def test_sqlite_store_is_wal_and_keeps_records_across_reopen(tmp_path: Path) -> None:
    path = str(tmp_path / "state.db")
    store = SqliteStore(path)
    assert store.journal_mode == "wal"
    store.append(Record(5, 1, "submit", {}))
    store.append(Record(9, 1, "start", {"nodes": [0, 1]}))
    store.close()
    again = SqliteStore(path)
    assert list(again.records()) == [
        Record(5, 1, "submit", {}),
        Record(9, 1, "start", {"nodes": [0, 1]}),
    ]
    again.close()


def test_fake_clock_never_goes_back() -> None:
    clock = FakeClock(10)
    clock.advance(5)
    assert clock.now() == 15
    with pytest.raises(ValueError, match="cannot go back"):
        clock.set(3)
