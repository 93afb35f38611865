"""The live efficiency ledger: where GPU time went, booked from the engine's decision log."""

from __future__ import annotations

import pytest

from phalanx.domain.cluster import PreemptMode
from phalanx.domain.state import JobState, transition
from phalanx.domain.time import HOUR, MINUTE, SECOND
from phalanx.engine.decisions import (
    Cancelled,
    Decision,
    Ended,
    Exited,
    Held,
    LaunchLost,
    Preempted,
    Requeued,
    Started,
    Submitted,
    Unheld,
)
from phalanx.live.ledger import Ledger, Share
from phalanx.sched.capacity import Allocation
from phalanx.sched.job import Job
from phalanx.testing import EngineDriver, make_job, small_cluster


def _job(
    job_id: int,
    gpus: int,
    checkpoint_interval: int | None = None,
    *,
    checkpoint_on_signal: bool = False,
) -> Job:
    """A running job holding ``gpus`` GPUs on node 0."""
    spec = make_job(
        gpus=gpus,
        checkpoint_interval=checkpoint_interval,
        checkpoint_on_signal=checkpoint_on_signal,
    )
    job = Job(job_id, job_id, spec, 0, "gpu", 0, HOUR)
    job.alloc = Allocation((0,), (tuple(range(gpus)),), 0, 1, 0)
    transition(job, JobState.RUNNING)
    return job


def _share(ledger: Ledger, now: int, length: int = HOUR) -> Share:
    return ledger.window(now, length)


def test_an_empty_ledger_is_fully_efficient() -> None:
    share = Ledger().window(10 * HOUR, HOUR)
    assert share == Share()
    assert share.eta_sched == 1.0
    assert share.theta_overhead == 0.0


def test_share_ratios() -> None:
    share = Share(compute=60.0, gang_wait=10.0, evict=10.0, lost=15.0, cleanup=5.0)
    assert share.eta_sched == pytest.approx(0.6)
    assert share.theta_overhead == pytest.approx(0.2)


def test_a_completed_run_books_compute_and_cleanup() -> None:
    jobs = {1: _job(1, 8)}
    ledger = Ledger()
    decisions: list[Decision] = [
        Submitted(0, 1, 1),
        Started(0, 1, 1, (0,)),
        Exited(1_000, 1, 1, 0, 0),
        Ended(1_500, 1, 1, JobState.COMPLETED),
    ]
    ledger.consume(decisions, jobs)
    share = _share(ledger, 1_500)
    assert share.compute == 8 * 1_000
    assert share.cleanup == 8 * 500
    assert share.gang_wait == share.evict == share.lost == 0
    assert share.eta_sched == pytest.approx(8_000 / 12_000)
    assert share.theta_overhead == 0.0


def test_a_piece_still_open_counts_as_if_it_ended_now() -> None:
    jobs = {1: _job(1, 4)}
    ledger = Ledger()
    ledger.consume([Started(0, 1, 1, (0,))], jobs)
    assert _share(ledger, 300) == Share(compute=4 * 300)  # running: compute so far
    ledger.consume([Exited(500, 1, 1, 0, 0)], jobs)
    assert _share(ledger, 550) == Share(compute=4 * 500, cleanup=4 * 50)  # in cleanup
    ledger.consume([Ended(600, 1, 1, JobState.COMPLETED)], jobs)
    assert _share(ledger, 600) == Share(compute=4 * 500, cleanup=4 * 100)
    assert _share(ledger, 700) == Share(compute=4 * 500, cleanup=4 * 100)  # booked once


def test_a_gang_still_running_does_not_read_as_all_overhead() -> None:
    # The live dashboard's first seconds: pods held, then the gang starts and runs on.
    jobs = {1: _job(1, 8)}
    ledger = Ledger()
    ledger.consume([Held(0, 1, (0,), 4.0), Started(1_000, 1, 1, (0,))], jobs)
    share = _share(ledger, 5_000)
    assert share.gang_wait == 4 * 1_000
    assert share.compute == 8 * 4_000
    assert share.eta_sched == pytest.approx(32_000 / 36_000)


def test_open_eviction_and_holds_count_up_to_now() -> None:
    jobs = {1: _job(1, 2, checkpoint_interval=250), 2: _job(2, 4)}
    ledger = Ledger()
    ledger.consume(
        [
            Started(0, 1, 1, (0,)),
            Preempted(600, 1, 1, 2, PreemptMode.REQUEUE),
            Held(0, 2, (1,), 4.0),
        ],
        jobs,
    )
    share = _share(ledger, 800)
    assert share.compute == 2 * 600
    assert share.evict == 2 * 200
    assert share.gang_wait == 4 * 800


def test_a_preempted_run_books_eviction_and_loses_work_since_its_checkpoint() -> None:
    # 2 GPUs, checkpoint every 250 ms: preempted at 600 ms, killed at 1000 ms.
    jobs = {1: _job(1, 2, checkpoint_interval=250)}
    ledger = Ledger()
    ledger.consume(
        [
            Started(0, 1, 1, (0,)),
            Preempted(600, 1, 1, 2, PreemptMode.REQUEUE),
            Exited(1_000, 1, 1, 0, 9),
            Requeued(1_000, 1, 1),
        ],
        jobs,
    )
    share = _share(ledger, 1_000)
    assert share.evict == 2 * 400
    # Useful work is the 600 ms before the signal; 100 ms of it came after the last checkpoint.
    assert share.lost == 2 * 100
    assert share.compute == 2 * 500
    assert share.cleanup == 0
    assert share.theta_overhead == pytest.approx(800 / 2_000)
    assert share.eta_sched == pytest.approx(1_000 / 2_000)


def test_a_job_that_saved_on_the_signal_and_exited_by_itself_loses_nothing() -> None:
    # It checkpoints on SIGTERM: preempted at 600 ms, saved and exited at 700 ms (no kill).
    jobs = {1: _job(1, 2, checkpoint_interval=250, checkpoint_on_signal=True)}
    ledger = Ledger()
    ledger.consume(
        [
            Started(0, 1, 1, (0,)),
            Preempted(600, 1, 1, 2, PreemptMode.REQUEUE),
            Exited(700, 1, 1, 0, 0),
            Requeued(700, 1, 1),
        ],
        jobs,
    )
    share = _share(ledger, 700)
    assert share.lost == 0
    assert share.compute == 2 * 600 and share.evict == 2 * 100
    killed = {1: _job(1, 2, checkpoint_interval=250, checkpoint_on_signal=True)}
    ledger = Ledger()
    ledger.consume(
        [
            Started(0, 1, 1, (0,)),
            Preempted(600, 1, 1, 2, PreemptMode.REQUEUE),
            Exited(700, 1, 1, 0, 9),  # killed before its save was done
            Requeued(700, 1, 1),
        ],
        killed,
    )
    assert _share(ledger, 700).lost == 2 * 100
    asked = {1: _job(1, 2, checkpoint_interval=250)}  # a suspension asked it to save
    ledger = Ledger()
    ledger.consume(
        [
            Started(0, 1, 1, (0,)),
            Preempted(600, 1, 1, 2, PreemptMode.REQUEUE, True),
            Exited(700, 1, 1, 0, 0),
            Requeued(700, 1, 1),
        ],
        asked,
    )
    assert _share(ledger, 700).lost == 0


def test_a_requeue_without_checkpoints_loses_the_whole_run() -> None:
    jobs = {1: _job(1, 4)}
    ledger = Ledger()
    ledger.consume(
        [Started(0, 1, 1, (0,)), Exited(300, 1, 1, 0, 9), Requeued(300, 1, 1)],
        jobs,
    )
    share = _share(ledger, 300)
    assert share.lost == 4 * 300
    assert share.compute == 0
    assert share.eta_sched == 0.0


def test_held_pods_book_gang_wait_when_the_gang_starts() -> None:
    jobs = {1: _job(1, 8)}
    ledger = Ledger()
    ledger.consume(
        [
            Held(0, 1, (0,), 4.0),
            Held(100, 1, (1,), 4.0),
            Started(300, 1, 1, (0, 1)),
        ],
        jobs,
    )
    assert _share(ledger, 300).gang_wait == 4 * 300 + 4 * 200


def test_released_holds_book_gang_wait() -> None:
    ledger = Ledger()
    ledger.consume([Held(0, 1, (0,), 2.0), Unheld(1_000, 1, (0,), 2.0)], {1: _job(1, 2)})
    share = _share(ledger, 1_000)
    assert share.gang_wait == 2 * 1_000
    assert share.theta_overhead == 1.0
    # Released holds are gone: a later start books no more gang wait.
    ledger.consume([Started(2_000, 1, 1, (0,))], {1: _job(1, 2)})
    assert _share(ledger, 2_000).gang_wait == 2 * 1_000


def test_a_failed_launch_books_nothing() -> None:
    jobs = {1: _job(1, 8)}
    ledger = Ledger()
    ledger.consume(
        [
            Started(0, 1, 1, (0,)),
            LaunchLost(10, 1, 1, "no such user"),
            Exited(20, 1, 1, 0, 0),  # stale: no run is open
            Ended(30, 1, 1, JobState.COMPLETED),
        ],
        jobs,
    )
    assert _share(ledger, 30) == Share()


def test_a_pending_job_cancelled_books_nothing() -> None:
    ledger = Ledger()
    ledger.consume([Cancelled(0, 1, "alice"), Ended(0, 1, 0, JobState.CANCELLED)], {})
    assert _share(ledger, 0) == Share()


def test_the_window_counts_only_recent_bookings() -> None:
    jobs = {1: _job(1, 1), 2: _job(2, 1)}
    ledger = Ledger(keep=10 * HOUR)
    ledger.consume(
        [
            Started(0, 1, 1, (0,)),
            Exited(MINUTE, 1, 1, 0, 0),
            Ended(MINUTE, 1, 1, JobState.COMPLETED),  # booked at 1 min
            Started(HOUR, 2, 1, (0,)),
            Exited(2 * HOUR, 2, 1, 0, 0),
            Ended(2 * HOUR, 2, 1, JobState.COMPLETED),  # booked at 2 h
        ],
        jobs,
    )
    assert ledger.window(2 * HOUR, 30 * MINUTE).compute == HOUR
    assert ledger.window(2 * HOUR, 3 * HOUR).compute == HOUR + MINUTE
    # The start of the window is inclusive.
    assert ledger.window(2 * HOUR, 2 * HOUR - MINUTE).compute == HOUR + MINUTE
    assert ledger.window(2 * HOUR, 2 * HOUR - MINUTE - 1).compute == HOUR


def test_entries_older_than_keep_are_dropped_for_good() -> None:
    jobs = {1: _job(1, 1)}
    ledger = Ledger(keep=HOUR)
    ledger.consume(
        [Started(0, 1, 1, (0,)), Exited(10, 1, 1, 0, 0), Ended(10, 1, 1, JobState.FAILED)],
        jobs,
    )
    assert ledger.window(HOUR, 10 * HOUR).compute == 10
    assert ledger.window(HOUR + 11, 10 * HOUR).compute == 0
    # Dropped, not just outside the window: looking back further does not bring them back.
    assert ledger.window(HOUR + 11, 100 * HOUR) == Share()


# ---------------------------------------------------------------------------- with an engine


def _consume_as_it_runs(d: EngineDriver, ledger: Ledger, to: int, seen: int) -> int:
    """Like the controller: after every handled event, book the new decisions."""
    while (at := d.next_at()) is not None and at <= to:
        d.step()
        entries = d.engine.decisions.entries
        ledger.consume(entries[seen:], d.engine.jobs)
        seen = len(entries)
    d.advance(to)
    return seen


def test_engine_run_to_completion() -> None:
    d = EngineDriver(small_cluster(nodes=2, gpus=8, per_leaf=2), "slurm", cleanup_ms=MINUTE)
    ledger = Ledger()
    d.submit(make_job(gpus=8, nodes=2), runtime=10 * MINUTE)
    d.submit(make_job(gpus=4), runtime=20 * MINUTE)
    seen = _consume_as_it_runs(d, ledger, HOUR, 0)
    share = ledger.window(HOUR, HOUR)
    assert share.compute == 16 * 10 * MINUTE + 4 * 20 * MINUTE
    assert share.cleanup == (16 + 4) * MINUTE
    assert share.evict == share.lost == share.gang_wait == 0
    assert seen == len(d.engine.decisions.entries)


def _preemption(d: EngineDriver) -> tuple[int, int]:
    [victim] = d.submit(
        make_job(gpus=8, time_limit=10 * HOUR, checkpoint_interval=10 * MINUTE), runtime=None
    )
    d.settle()
    d.advance(25 * MINUTE)
    [high] = d.submit(make_job(gpus=8, qos="high"), runtime=None)
    return victim, high


def test_engine_preemption_with_grace_books_eviction_and_lost_work() -> None:
    cluster = small_cluster(
        nodes=1, gpus=8, per_leaf=1, preempt_mode=PreemptMode.REQUEUE, grace_time=30 * SECOND
    )
    d = EngineDriver(cluster, "slurm")
    ledger = Ledger()
    seen = _consume_as_it_runs(d, ledger, 0, 0)
    victim, high = _preemption(d)
    _consume_as_it_runs(d, ledger, 26 * MINUTE, seen)
    assert d.job(victim).restarts == 1 and d.state(high) is JobState.RUNNING
    share = ledger.window(26 * MINUTE, HOUR)
    assert share.evict == 8 * 30 * SECOND
    assert share.lost == 8 * 5 * MINUTE  # 25 min of work, checkpointed at 10 and 20
    # The victim's 20 checkpointed minutes, and the preemptor's first 30 s (still running:
    # counted as if it ended now).
    high_ran = 26 * MINUTE - d.job(high).start
    assert high_ran == 30 * SECOND
    assert share.compute == 8 * 20 * MINUTE + 8 * high_ran
    total = 8 * (25 * MINUTE + 30 * SECOND) + 8 * high_ran
    assert share.theta_overhead == pytest.approx(8 * 30 * SECOND / total)
    assert share.eta_sched == pytest.approx((8 * 20 * MINUTE + 8 * high_ran) / total)


def test_engine_log_consumed_in_one_batch_books_the_same() -> None:
    cluster = small_cluster(
        nodes=1, gpus=8, per_leaf=1, preempt_mode=PreemptMode.REQUEUE, grace_time=30 * SECOND
    )
    d = EngineDriver(cluster, "slurm")
    _preemption(d)
    d.advance(26 * MINUTE)
    ledger = Ledger()
    ledger.consume(d.engine.decisions.entries, d.engine.jobs)
    share = ledger.window(26 * MINUTE, HOUR)
    assert share.evict == 8 * 30 * SECOND
    assert share.lost == 8 * 5 * MINUTE
