"""The simulated executor's checkpoint on a signal: save, exit, restore at the next launch."""

from __future__ import annotations

from phalanx.domain.cluster import PreemptMode
from phalanx.domain.jobspec import SIGNALS
from phalanx.domain.time import HOUR, MINUTE, SECOND
from phalanx.engine.decisions import Preempted
from phalanx.sim.executor import SimulatedExecutor
from phalanx.sim.records import JobRecord

TERM = SIGNALS["TERM"]
SAVE = 20 * SECOND
RESTORE = 10 * SECOND


def _executor(saver: bool = True) -> SimulatedExecutor:
    records = {1: JobRecord(1, "a", "u", 8.0, 0, 10 * HOUR)}
    ex = SimulatedExecutor(
        records,
        {1: 10 * HOUR},
        {1: 30 * MINUTE},
        launch_latency_ms=2 * SECOND,
        cleanup_ms=0,
        checkpoint_save_ms=SAVE,
        checkpoint_restore_ms=RESTORE,
    )
    if saver:
        ex.savers.add(1)
    return ex


def _preempt(ex: SimulatedExecutor, at: int) -> None:
    ex.observe([Preempted(at, 1, 1, 2, PreemptMode.REQUEUE)])


def test_a_saver_keeps_its_work_up_to_the_signal_and_restores_at_relaunch() -> None:
    ex = _executor()
    ex.launch(0, 1, 1, 8.0, (0,))
    _preempt(ex, HOUR)
    exit_ = ex.signal(HOUR, 1, 1, TERM)
    assert exit_ is not None and exit_.at == HOUR + SAVE
    assert ex.saved(exit_.at, 1, 1)
    rec = ex.records[1]
    assert rec.lost_gpu_ms == 0
    assert rec.compute_gpu_ms == 8 * (HOUR - 2 * SECOND)
    assert rec.evict_gpu_ms == 8 * SAVE
    assert ex.remaining[1] == 10 * HOUR - (HOUR - 2 * SECOND)
    ex.cleanup_done(exit_.at, 1)
    end = ex.launch(2 * HOUR, 1, 2, 8.0, (0,))
    assert end.at == 2 * HOUR + 2 * SECOND + RESTORE + ex.remaining[1]
    assert ex.exited(end.at, 1, 2)
    assert rec.compute_gpu_ms == 8 * 10 * HOUR
    assert rec.launch_gpu_ms == 8 * (2 * SECOND + 2 * SECOND + RESTORE)


def test_a_kill_before_the_save_is_done_loses_the_work_since_the_periodic_checkpoint() -> None:
    ex = _executor()
    ex.launch(0, 1, 1, 8.0, (0,))
    _preempt(ex, HOUR)
    exit_ = ex.signal(HOUR, 1, 1, TERM)
    assert exit_ is not None
    assert ex.kill(HOUR + 5 * SECOND, 1, 1) is not None  # grace shorter than the save
    assert not ex.saved(exit_.at, 1, 1)  # the run is over: the save never completed
    rec = ex.records[1]
    assert rec.compute_gpu_ms == 8 * 30 * MINUTE
    assert rec.lost_gpu_ms == 8 * (30 * MINUTE - 2 * SECOND)
    assert rec.evict_gpu_ms == 8 * 5 * SECOND


def test_a_job_that_does_not_checkpoint_on_signal_ignores_it() -> None:
    ex = _executor(saver=False)
    ex.launch(0, 1, 1, 8.0, (0,))
    assert ex.signal(HOUR, 1, 1, TERM) is None
    saver = _executor()
    saver.launch(0, 1, 1, 8.0, (0,))
    assert saver.signal(HOUR, 1, 1, SIGNALS["USR1"]) is None  # only SIGTERM means "save now"
    assert saver.signal(HOUR, 1, 2, TERM) is None  # a stale run


def test_a_suspension_asks_any_job_to_checkpoint_at_the_signal() -> None:
    ex = _executor(saver=False)
    ex.launch(0, 1, 1, 8.0, (0,))
    ex.observe([Preempted(HOUR, 1, 1, 2, PreemptMode.REQUEUE, True)])
    exit_ = ex.signal(HOUR, 1, 1, TERM)
    assert exit_ is not None and ex.saved(exit_.at, 1, 1)
    assert ex.records[1].lost_gpu_ms == 0 and ex.suspending == set()
    plain = _executor(saver=False)
    plain.launch(0, 1, 1, 8.0, (0,))
    plain.observe([Preempted(HOUR, 1, 1, 2, PreemptMode.REQUEUE, False)])
    assert plain.signal(HOUR, 1, 1, TERM) is None


def test_a_job_that_ends_during_its_save_ends_normally() -> None:
    ex = _executor()
    ex.remaining[1] = 10 * MINUTE
    end = ex.launch(0, 1, 1, 8.0, (0,))
    _preempt(ex, end.at - 5 * SECOND)
    exit_ = ex.signal(end.at - 5 * SECOND, 1, 1, TERM)
    assert exit_ is not None and exit_.at > end.at
    assert ex.exited(end.at, 1, 1)
    assert not ex.saved(exit_.at, 1, 1)
    rec = ex.records[1]
    assert rec.compute_gpu_ms == 8 * 10 * MINUTE and rec.evict_gpu_ms == 0
    assert ex.preempted_at == {}
