"""Hold, release, time-limit and priority updates, and requeue (``scontrol``)."""

from __future__ import annotations

from phalanx.domain.state import JobState, Reason
from phalanx.domain.time import MINUTE
from phalanx.engine import Kill, Requeue, Signal, Update
from phalanx.testing import EngineDriver, make_job, small_cluster


def _driver() -> EngineDriver:
    return EngineDriver(small_cluster(2, 8, 2), "slurm")


def test_a_held_job_waits_until_released() -> None:
    d = _driver()
    [job] = d.submit(make_job(8, hold=True))
    d.settle()
    assert d.state(job) is JobState.PENDING and d.job(job).reason == Reason.HELD_USER
    d.feed(Update(d.now, job, hold=False))
    d.settle()
    assert d.state(job) is JobState.RUNNING


def test_holding_a_queued_job_takes_it_out_of_the_queue() -> None:
    d = _driver()
    [big] = d.submit(make_job(8, nodes=2), runtime=60 * MINUTE)
    [waiting] = d.submit(make_job(8))
    d.settle()
    assert d.state(waiting) is JobState.PENDING
    d.feed(Update(d.now, waiting, hold=True, admin=True))
    d.settle()
    assert d.job(waiting).reason == Reason.HELD_ADMIN
    d.finish(big)
    assert d.state(waiting) is JobState.PENDING  # the resources are free: still held
    d.feed(Update(d.now, waiting, hold=False))
    d.settle()
    assert d.state(waiting) is JobState.RUNNING


def test_a_lowered_time_limit_ends_the_job_sooner_and_a_raised_one_later() -> None:
    d = _driver()
    [short] = d.submit(make_job(1, time_limit=60 * MINUTE), runtime=10 * 60 * MINUTE)
    [long] = d.submit(make_job(1, time_limit=10 * MINUTE), runtime=10 * 60 * MINUTE)
    d.settle()
    d.feed(Update(d.now, short, time_limit=5 * MINUTE))
    d.feed(Update(d.now, long, time_limit=30 * MINUTE))
    d.run(until=12 * MINUTE)
    assert d.state(short) is JobState.TIMEOUT
    # The timer of the old 10-minute limit came and went without a signal.
    assert d.state(long) is JobState.RUNNING
    assert not [s for s in d.sent(Signal, long)]
    d.run(until=40 * MINUTE)
    assert d.state(long) is JobState.TIMEOUT


def test_a_fixed_priority_puts_a_job_first() -> None:
    d = _driver()
    [blocker] = d.submit(make_job(8, nodes=2), runtime=60 * MINUTE)
    [first] = d.submit(make_job(8, nodes=2))
    [second] = d.submit(make_job(8, nodes=2))
    d.settle()
    d.feed(Update(d.now, second, priority=1e9))
    d.finish(blocker)
    assert d.state(second) is JobState.RUNNING and d.state(first) is JobState.PENDING


def test_requeue_of_a_running_job_kills_it_and_queues_it_again() -> None:
    d = _driver()
    [job] = d.submit(make_job(8), runtime=60 * MINUTE)
    d.settle()
    d.feed(Requeue(d.now, job))
    assert d.sent(Kill, job)
    d.settle()
    assert d.job(job).restarts == 1 and d.job(job).run == 2
    assert d.state(job) is JobState.RUNNING  # back in the queue, and there is room


def test_requeue_of_a_finished_job_runs_it_again() -> None:
    d = _driver()
    [job] = d.submit(make_job(8), runtime=MINUTE)
    d.run()
    assert d.state(job) is JobState.COMPLETED
    d.feed(Requeue(d.now, job))
    d.settle()
    assert d.state(job) is JobState.RUNNING and d.job(job).restarts == 1


def test_will_run_says_now_or_when_a_running_job_must_end() -> None:
    d = _driver()
    assert d.engine.will_run(make_job(8), d.now)[0] == d.now  # type: ignore[index]
    [a] = d.submit(make_job(8, nodes=2, time_limit=60 * MINUTE), runtime=60 * MINUTE)
    d.settle()
    start, alloc = d.engine.will_run(make_job(8), d.now)  # type: ignore[misc]
    assert start == d.job(a).start + 60 * MINUTE and len(alloc.nodes) == 1  # type: ignore[operator]
    assert d.engine.will_run(make_job(8, nodes=3), d.now) is None  # never fits
    assert d.engine.pending_count() == 0  # nothing was submitted
