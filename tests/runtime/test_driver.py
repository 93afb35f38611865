"""One driver loop: with a fake clock and a fake executor it gives the simulator's decision
log; inputs are journaled before they are queued, and a replay of the journal continues
exactly."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest

from phalanx.config.clusterspec import regular_cluster
from phalanx.domain.jobspec import JobSpec
from phalanx.domain.time import HOUR, MINUTE
from phalanx.engine import Engine, Event, Launch, Submit, TimerFired
from phalanx.engine.timers import is_stale
from phalanx.live.journal import SqliteJournal
from phalanx.policies.catalog import profile
from phalanx.runtime import (
    Driver,
    FakeClock,
    FakeExecutor,
    Journal,
    JournalError,
    MemoryJournal,
    VirtualClock,
)
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


def _run_live(
    policy: str, workload: list[TraceJob], journal: Journal | None = None, stop: int | None = None
) -> tuple[Engine, Driver]:
    """Replay ``workload`` through the live loop with a fake clock, up to instant ``stop``."""
    clock = FakeClock()
    engine = Engine(regular_cluster(16, 8, 4), profile(policy))
    loop = Driver(engine, clock, journal)
    runtimes = {i + 1: tj.runtime for i, tj in enumerate(workload)}
    loop.attach(FakeExecutor(loop.report, runtimes, launch_latency_ms=2_000, cleanup_ms=1_000))
    for tj in workload:
        loop.accept([Submit(tj.submit, tj.spec)])
    _drive(loop, clock, stop)
    return engine, loop


def _drive(loop: Driver, clock: FakeClock, stop: int | None = None) -> None:
    while (due := loop.next_due()) is not None and (stop is None or due <= stop):
        clock.set(due)
        loop.run_due()


# Every profile whose runs are not preempted here: the fake executor, unlike the simulated
# one, keeps no checkpoints, so a requeued run would end at another time.
@pytest.mark.parametrize("policy", ["fifo", "slurm", "k8s-default", "kueue", "volcano", "phalanx"])
def test_live_loop_with_fake_clock_gives_the_simulators_decision_log(policy: str) -> None:
    workload = _workload()
    assert len(workload) > 100
    sim = Simulator(regular_cluster(16, 8, 4), profile(policy), workload)
    sim.run()
    live, _ = _run_live(policy, workload)
    assert live.decisions.entries == sim.engine.decisions.entries


def test_a_replay_of_the_journal_after_a_crash_continues_exactly(tmp_path: Path) -> None:
    """Stop half way (a crash: only the journal survives), rebuild a new loop from the
    journal, go on: the decision log is the uninterrupted run's."""
    workload = _workload()
    whole, _ = _run_live("phalanx", workload)
    stop = workload[len(workload) // 2].submit
    path = str(tmp_path / "state.db")
    _run_live("phalanx", workload, SqliteJournal(path), stop=stop)
    # The new controller: a fresh engine and clock, the old journal.
    clock = FakeClock(stop)
    engine = Engine(regular_cluster(16, 8, 4), profile("phalanx"))
    loop = Driver(engine, clock, SqliteJournal(path))
    runtimes = {i + 1: tj.runtime for i, tj in enumerate(workload)}
    executor = FakeExecutor(loop.report, runtimes, launch_latency_ms=2_000, cleanup_ms=1_000)
    loop.attach(executor)
    assert loop.replay(stop) > len(workload)  # the submissions and the ends reported
    before = len(engine.decisions.entries)
    assert engine.decisions.entries == whole.decisions.entries[:before]
    _drive(loop, clock)
    assert engine.decisions.entries == whole.decisions.entries


def test_every_launch_follows_the_commit_of_its_inputs() -> None:
    events: list[str] = []

    class Recorder(MemoryJournal):
        def write(self, batch: Sequence[Event]) -> None:
            events.extend(f"commit {type(e).__name__}" for e in batch)
            super().write(batch)

    class Launcher(FakeExecutor):
        def launch(self, cmd: Launch, at: int) -> None:
            events.append(f"launch {cmd.job_id}")
            super().launch(cmd, at)

    clock = FakeClock()
    engine = Engine(regular_cluster(2, 8, 2), profile("slurm"))
    loop = Driver(engine, clock, Recorder())
    loop.attach(Launcher(loop.report, {1: 60_000, 2: 60_000}))
    spec = JobSpec(gpus_per_task=8, command=("true",))
    assert loop.submit_many([spec, spec]) == [[1], [2]]
    assert events == ["commit Submit", "commit Submit"]
    clock.advance(1)
    loop.run_due()
    assert [e for e in events[2:] if e.startswith("launch")] == ["launch 1", "launch 2"]


def test_a_full_journal_refuses_a_submission_and_queues_nothing() -> None:
    journal = MemoryJournal()
    engine = Engine(regular_cluster(2, 8, 2), profile("slurm"))
    loop = Driver(engine, FakeClock(), journal)
    loop.attach(FakeExecutor(loop.report, {}))
    journal.fail = True
    with pytest.raises(JournalError):
        loop.submit(JobSpec(command=("true",)))
    assert loop.next_due() is None
    journal.fail = False
    assert loop.submit(JobSpec(command=("true",))) == [1]


def test_fake_clock_never_goes_back() -> None:
    clock = FakeClock(10)
    clock.advance(5)
    assert clock.now() == 15
    with pytest.raises(ValueError, match="cannot go back"):
        clock.set(3)


def test_a_virtual_clock_jumps_to_each_event_and_runs_everything() -> None:
    clock = VirtualClock()
    engine = Engine(regular_cluster(2, 8, 2), profile("slurm"))
    driver = Driver(engine, clock)
    driver.attach(FakeExecutor(driver.deliver, {1: HOUR, 2: HOUR}, cleanup_ms=1_000))
    spec = JobSpec(gpus_per_task=8, nodes_min=2, nodes_max=2, time_limit=2 * HOUR)
    driver.deliver(Submit(0, spec))
    driver.deliver(Submit(MINUTE, spec))
    driver.run_due()
    assert driver.next_due() is None
    assert [j.state.value for j in engine.jobs.values()] == ["COMPLETED", "COMPLETED"]
    # The second waited for the first: 2 s launch + 1 h + 1 s epilog, then its own run.
    assert engine.jobs[2].first_start == 2_000 + HOUR + 1_000
    assert clock.now() == driver.last_at >= engine.jobs[2].end


def test_a_fake_clock_holds_back_what_is_not_due() -> None:
    clock = FakeClock()
    engine = Engine(regular_cluster(2, 8, 2), profile("fifo"))
    driver = Driver(engine, clock)
    driver.attach(FakeExecutor(driver.report, {1: HOUR}))
    [job_id] = driver.submit(JobSpec(gpus_per_task=8, time_limit=2 * HOUR))
    assert driver.run_due() == 2  # the submission and the pass of its instant
    assert engine.jobs[job_id].state.value == "RUNNING"
    assert driver.next_due() == 2_000 + HOUR  # the run's end (its time limit comes later)
    clock.set(HOUR)
    assert driver.run_due() == 0
    clock.set(2_000 + HOUR)
    driver.run_due()
    assert engine.jobs[job_id].state.value == "COMPLETING"


def test_run_due_stops_after_limit_or_when_told() -> None:
    engine = Engine(regular_cluster(2, 8, 2), profile("fifo"))
    driver = Driver(engine, VirtualClock())
    driver.attach(FakeExecutor(driver.deliver, {}))
    for at in range(5):
        driver.deliver(Submit(at * MINUTE, JobSpec(gpus_per_task=1, time_limit=HOUR)))
    assert driver.run_due(limit=3) == 3
    assert driver.run_due(stop=lambda: len(engine.jobs) == 4) >= 1
    assert len(engine.jobs) == 4


def test_commands_need_an_executor() -> None:
    engine = Engine(regular_cluster(2, 8, 2), profile("fifo"))
    driver = Driver(engine, VirtualClock())
    driver.deliver(Submit(0, JobSpec(gpus_per_task=1)))
    with pytest.raises(RuntimeError, match="no executor attached to carry out Launch"):
        driver.run_due()


@pytest.mark.parametrize("policy", ["slurm", "phalanx"])
def test_compacting_after_every_step_changes_no_decision(policy: str) -> None:
    """Runs that end before their time limit leave their limit timers behind; ``compact``
    drops them (and the priority rows of jobs gone), and the decision log is the one of the
    loop that keeps them all."""
    # And runs that reach their limit, whose limit timers must stay.
    over = [
        TraceJob(
            i * 13 * MINUTE, JobSpec(name=f"over{i}", gpus_per_task=2, time_limit=HOUR), 2 * HOUR
        )
        for i in range(40)
    ]
    workload = sorted(_workload() + over, key=lambda tj: tj.submit)
    whole, _ = _run_live(policy, workload)
    assert sum(type(e).__name__ == "TimedOut" for e in whole.decisions.entries) >= 40
    clock = FakeClock()
    engine = Engine(regular_cluster(16, 8, 4), profile(policy))
    loop = Driver(engine, clock)
    runtimes = {i + 1: tj.runtime for i, tj in enumerate(workload)}
    loop.attach(FakeExecutor(loop.report, runtimes, launch_latency_ms=2_000, cleanup_ms=1_000))
    for tj in workload:
        loop.accept([Submit(tj.submit, tj.spec)])
    dropped = 0
    while (due := loop.next_due()) is not None:
        clock.set(due)
        loop.run_due()
        dropped += loop.compact()
        timers = [e[3].key for e in loop.checkpoint().heap if isinstance(e[3], TimerFired)]
        assert not any(is_stale(key, engine.jobs) for key in timers)
    assert dropped > 100
    assert engine.decisions.entries == whole.decisions.entries


def test_a_withdrawn_event_is_never_handled() -> None:
    engine = Engine(regular_cluster(2, 8, 2), profile("slurm"))
    loop = Driver(engine, VirtualClock())
    loop.attach(FakeExecutor(loop.report, {}))
    kept, dropped = Submit(5, JobSpec(name="kept")), Submit(6, JobSpec(name="dropped"))
    loop.deliver(kept)
    loop.deliver(dropped)
    loop.withdraw(dropped)
    assert loop.queued() == [kept]
    loop.run_due()
    assert [job.spec.name for job in engine.jobs.values()] == ["kept"]
    assert loop.next_due() is None


@pytest.mark.parametrize("checkpoint", [False, True])
def test_preloaded_submissions_are_handled_as_delivered_ones(checkpoint: bool) -> None:
    """``preload`` queues a batch beside the heap (the simulator's whole trace): the order of
    handling, so the decision log, is ``deliver``'s, interleaved with the events queued
    meanwhile; a checkpoint moves what is left of the batch into the heap it holds."""
    workload = _workload()
    runtimes = {i + 1: tj.runtime for i, tj in enumerate(workload)}
    stop = workload[len(workload) // 2].submit
    logs = []
    for preload in (False, True):
        engine = Engine(regular_cluster(16, 8, 4), profile("phalanx"))
        driver = Driver(engine, VirtualClock())
        driver.attach(
            FakeExecutor(driver.deliver, runtimes, launch_latency_ms=2_000, cleanup_ms=1_000)
        )
        submits = [Submit(tj.submit, tj.spec) for tj in workload]
        if preload:
            driver.preload(submits)
        else:
            for event in submits:
                driver.deliver(event)
        assert driver.next_due() == workload[0].submit
        driver.run_due(stop)
        queued = sorted(map(id, driver.queued()))
        if checkpoint:
            saved = driver.checkpoint()
            assert sorted(id(entry[3]) for entry in saved.heap) == queued
        assert sorted(map(id, driver.queued())) == queued
        driver.run_due()
        assert driver.next_due() is None
        logs.append(engine.decisions.entries)
    assert len(logs[0]) > 3 * len(workload)
    assert logs[1] == logs[0]
