"""A job's life in the engine: start, time limit, cancel, node failure, rejects, launches."""

from __future__ import annotations

import dataclasses

import pytest

from phalanx.domain.jobspec import SIGNALS
from phalanx.domain.state import JobState, Reason
from phalanx.domain.time import HOUR, MINUTE, SECOND
from phalanx.engine.commands import PASS, Cleanup, Kill, Launch, Signal, WakeAt
from phalanx.engine.decisions import (
    Cancelled,
    Ended,
    LaunchLost,
    NodeFailure,
    Rejected,
    Requeued,
    Started,
    Submitted,
    TimedOut,
)
from phalanx.engine.engine import Engine
from phalanx.engine.events import Cancel, Submit, TimerFired, Update
from phalanx.engine.timers import KILL_WAIT, LimitTimer
from phalanx.policies.catalog import POLICIES
from phalanx.testing import EngineDriver, make_job, run_engine, small_cluster


def test_submit_asks_for_a_pass_and_the_pass_launches() -> None:
    engine = Engine(small_cluster(), POLICIES["slurm"])
    out = engine.handle(Submit(5, make_job(gpus=8, nodes=2)))
    assert WakeAt(5, PASS) in out
    out = engine.handle(TimerFired(5, PASS))
    launches = [c for c in out if isinstance(c, Launch)]
    assert len(launches) == 1 and launches[0].job_id == 1 and launches[0].run == 1
    assert len(launches[0].alloc.nodes) == 2 and launches[0].alloc.gpus == 16
    assert WakeAt(5 + HOUR, LimitTimer(1, 1)) in out
    assert engine.jobs[1].state is JobState.RUNNING
    assert engine.state.free_gpus == 32 - 16
    assert [type(e) for e in engine.decisions.entries] == [Submitted, Started]


def test_completion_frees_the_gpus_and_records_the_end() -> None:
    d = EngineDriver(small_cluster(), "fifo")
    [j] = d.submit(make_job(gpus=8, nodes=4), runtime=10 * MINUTE)
    d.settle()
    assert d.engine.state.free_gpus == 0
    d.advance(10 * MINUTE)
    assert d.state(j) is JobState.COMPLETED and d.job(j).end == 10 * MINUTE
    assert d.engine.state.free_gpus == 32 and d.engine.state.running == {}
    assert d.sent(Cleanup, j)
    assert d.decisions(Ended, j)[0].state is JobState.COMPLETED


def test_nonzero_exit_is_failed_and_cleanup_keeps_gpus_until_done() -> None:
    d = EngineDriver(small_cluster(), "fifo", cleanup_ms=5 * SECOND)
    [j] = d.submit(make_job(gpus=8))
    d.settle()
    d.finish(j, exit_code=3)
    assert d.state(j) is JobState.COMPLETING and d.engine.state.free_gpus == 24
    d.advance(5 * SECOND)
    assert d.state(j) is JobState.FAILED and d.job(j).exit_code == 3
    assert d.engine.state.free_gpus == 32


def test_time_limit_signals_then_kills_and_ends_in_timeout() -> None:
    d = EngineDriver(small_cluster(), "slurm")
    [j] = d.submit(make_job(gpus=8, time_limit=10 * MINUTE))  # runs until killed
    d.settle()
    d.advance(10 * MINUTE)
    assert d.sent(Signal, j) == [Signal(j, 1, SIGNALS["TERM"])]
    assert not d.sent(Kill, j) and d.state(j) is JobState.RUNNING
    assert d.decisions(TimedOut, j)
    d.advance(10 * MINUTE + KILL_WAIT)
    assert d.sent(Kill, j) == [Kill(j, 1)]
    assert d.state(j) is JobState.TIMEOUT
    assert d.engine.state.free_gpus == 32


def test_signal_lead_sends_the_users_signal_before_the_limit() -> None:
    d = EngineDriver(small_cluster(), "slurm")
    spec = make_job(gpus=8, time_limit=10 * MINUTE, signal=SIGNALS["USR1"], signal_lead=MINUTE)
    [j] = d.submit(spec)
    d.settle()
    d.advance(9 * MINUTE)
    assert d.sent(Signal, j) == [Signal(j, 1, SIGNALS["USR1"])]
    d.advance(10 * MINUTE)
    assert d.sent(Signal, j)[-1] == Signal(j, 1, SIGNALS["TERM"])
    d.advance(10 * MINUTE + KILL_WAIT)
    assert d.state(j) is JobState.TIMEOUT


def test_job_that_exits_before_the_kill_after_its_limit_is_still_timeout() -> None:
    d = EngineDriver(small_cluster(), "slurm")
    [j] = d.submit(make_job(gpus=8, time_limit=10 * MINUTE))
    d.settle()
    d.advance(10 * MINUTE + SECOND)
    d.finish(j)  # exits on the TERM, before KillWait
    assert d.state(j) is JobState.TIMEOUT
    d.advance(20 * MINUTE)  # the stale kill timer does nothing
    assert d.sent(Kill, j) == []


def test_cancel_pending_and_running() -> None:
    d = EngineDriver(small_cluster(nodes=1, gpus=8, per_leaf=1), "fifo")
    [running] = d.submit(make_job(gpus=8))
    [pending] = d.submit(make_job(gpus=8))
    d.settle()
    d.cancel(pending)
    assert d.state(pending) is JobState.CANCELLED and d.job(pending).end == 0
    assert d.engine.pending_count() == 0
    assert d.decisions(Ended, pending)[0].state is JobState.CANCELLED
    d.cancel(running)
    assert [s.signal for s in d.sent(Signal, running)] == [15]  # SIGTERM first
    assert d.state(running) is JobState.RUNNING  # this fake job ignores it
    d.advance(d.now + 30 * SECOND)  # KillWait
    assert d.sent(Kill, running)
    assert d.state(running) is JobState.CANCELLED
    assert d.engine.state.free_gpus == 8
    d.cancel(running)  # cancelling a finished job changes nothing
    assert len(d.decisions(Cancelled, running)) == 1


def test_node_failure_requeues_a_running_job_and_it_restarts_elsewhere() -> None:
    d = EngineDriver(small_cluster(nodes=2, gpus=8, per_leaf=2), "fifo")
    [j] = d.submit(make_job(gpus=8))
    d.settle()
    alloc = d.job(j).alloc
    assert alloc is not None
    failed = alloc.nodes[0]
    d.node_down(failed)
    assert d.decisions(NodeFailure, j) and d.decisions(Requeued, j)
    job = d.job(j)
    assert job.restarts == 1 and job.state is JobState.RUNNING and job.run == 2
    assert job.alloc is not None and failed not in job.alloc.nodes
    assert d.engine.state.cap.gpus[failed] == 8 and not d.engine.state.up[failed]
    d.node_up(failed)
    assert d.engine.state.free_gpus == 8


def test_node_failure_without_requeue_is_node_fail() -> None:
    d = EngineDriver(small_cluster(nodes=2, gpus=8, per_leaf=2), "slurm")
    [j] = d.submit(make_job(gpus=8, nodes=2, requeue=False))
    d.settle()
    d.node_down(1)
    assert d.state(j) is JobState.NODE_FAIL
    assert d.engine.state.cap.gpus.tolist() == [8, 8]


def test_free_gpus_leaves_out_a_down_node_after_its_job_ends() -> None:
    d = EngineDriver(small_cluster(nodes=2, gpus=8, per_leaf=2), "slurm")
    d.submit(make_job(gpus=8, nodes=2, requeue=False))
    d.settle()
    d.node_down(1)
    state = d.engine.state
    assert state.free_gpus == int(state.cap.gpus[state.up].sum()) == 8


def test_requeued_job_waits_while_its_nodes_are_down() -> None:
    d = EngineDriver(small_cluster(nodes=1, gpus=8, per_leaf=1), "slurm")
    [j] = d.submit(make_job(gpus=8))
    d.settle()
    d.node_down(0)
    assert d.state(j) is JobState.PENDING and d.job(j).restarts == 1
    d.advance(10 * MINUTE)
    assert d.state(j) is JobState.PENDING
    d.node_up(0)
    assert d.state(j) is JobState.RUNNING and d.job(j).run == 2


def test_a_job_bigger_than_the_cluster_is_rejected_at_submit() -> None:
    enforcing = dataclasses.replace(
        small_cluster(nodes=2, gpus=8, per_leaf=2), enforce_part_limits=True
    )
    d = EngineDriver(enforcing, "slurm")
    too_many_nodes, too_many_gpus = (
        d.submit(make_job(gpus=1, nodes=3))[0],
        d.submit(make_job(gpus=9))[0],
    )
    bad_partition = d.submit(make_job(gpus=1, partition="nope"))[0]
    for j in (too_many_nodes, too_many_gpus, bad_partition):
        assert d.state(j) is JobState.FAILED
        assert d.decisions(Rejected, j)
    assert d.decisions(Rejected, bad_partition)[0].problem == "InvalidPartition"
    d.settle()
    assert d.sent(Launch) == []


def test_more_nodes_than_the_partition_has_waits_for_partition_config() -> None:
    # Slurm without EnforcePartLimits: queued, never started, never reserved for.
    d = EngineDriver(small_cluster(nodes=2, gpus=8, per_leaf=2), "slurm")
    [big] = d.submit(make_job(gpus=1, nodes=3, time_limit=HOUR))
    [nine] = d.submit(make_job(gpus=9))  # no node could ever hold one task: refused
    assert d.state(nine) is JobState.FAILED and d.decisions(Rejected, nine)
    [small] = d.submit(make_job(gpus=8, nodes=2), runtime=10 * MINUTE)
    d.settle()
    assert d.state(big) is JobState.PENDING and d.job(big).reason == Reason.PARTITION_CONFIG
    assert d.job(big).expected_start is None and not d.decisions(Rejected, big)
    assert d.state(small) is JobState.RUNNING and d.job(small).first_start == 0
    d.advance(HOUR)
    assert d.state(small) is JobState.COMPLETED
    assert d.state(big) is JobState.PENDING and d.job(big).reason == Reason.PARTITION_CONFIG
    assert d.engine.will_run(make_job(gpus=1, nodes=3), d.now) is None
    d.feed(Cancel(d.now, big, "user"))
    assert d.state(big) is JobState.CANCELLED


@pytest.mark.parametrize("policy", sorted(POLICIES))
def test_a_job_over_the_partition_neither_reserves_nor_delays_lower_jobs(policy: str) -> None:
    # The big job is submitted before ``later`` while the cluster is half busy: at the head of
    # a FIFO queue, or holding a reservation, it would keep ``later`` waiting.
    d = EngineDriver(small_cluster(nodes=2, gpus=8, per_leaf=2), policy)
    [busy] = d.submit(make_job(gpus=8, nodes=1, time_limit=HOUR), runtime=HOUR)
    d.settle()
    [big] = d.submit(make_job(gpus=8, nodes=3, time_limit=10 * MINUTE))
    [later] = d.submit(make_job(gpus=8, nodes=1, time_limit=2 * HOUR), runtime=2 * HOUR)
    d.settle()
    assert d.state(later) is JobState.RUNNING and d.state(busy) is JobState.RUNNING
    assert d.job(big).reason == Reason.PARTITION_CONFIG and d.job(big).expected_start is None
    assert d.engine.pending() == []
    held = d.engine.handle(Update(d.now, big, "user", True, None, None, False))
    assert d.job(big).reason == Reason.HELD_USER and not any(isinstance(c, Launch) for c in held)
    d.engine.handle(Update(d.now, big, "user", False, None, None, False))
    assert d.job(big).reason == Reason.PARTITION_CONFIG and d.engine.pending() == []


def test_launch_failure_forgets_the_allocation_requeues_held_and_runs_once_released() -> None:
    d = EngineDriver(small_cluster(nodes=1, gpus=8, per_leaf=1), "fifo")
    [j] = d.submit(make_job(gpus=8))
    d.settle()
    d.fail_launch(j)
    assert d.decisions(LaunchLost, j)
    # As Slurm: requeued and held, so a launch that cannot succeed does not loop.
    assert d.state(j) is JobState.PENDING and d.job(j).reason == "launch failed requeued held"
    d.settle()
    assert len(d.sent(Launch, j)) == 1
    d.feed(Update(d.now, j, hold=False))  # scontrol release
    d.settle()
    assert d.state(j) is JobState.RUNNING and d.job(j).run == 2
    assert len(d.sent(Launch, j)) == 2
    assert d.job(j).spec.extra == ()  # released: the failure is no longer its reason


def test_a_run_cancelled_before_its_launch_failed_ends_cancelled_not_requeued() -> None:
    d = EngineDriver(small_cluster(nodes=1, gpus=8, per_leaf=1), "fifo")
    [j] = d.submit(make_job(gpus=8))
    d.settle()
    d.engine.handle(Cancel(d.now, j, "alice"))  # SIGTERM sent; the launch is still on its way
    d.fail_launch(j)
    assert d.decisions(LaunchLost, j)
    assert d.state(j) is JobState.CANCELLED and d.job(j).run == 1
    assert len(d.sent(Launch, j)) == 1  # never launched again
    [k] = d.submit(make_job(gpus=8))
    d.settle()
    assert d.state(k) is JobState.RUNNING  # the node is free for the next job


def test_partition_limits_default_and_max_time() -> None:
    cluster = small_cluster(nodes=1, gpus=8, per_leaf=1, default_time=HOUR, max_time=2 * HOUR)
    d = EngineDriver(cluster, "slurm")
    [dflt] = d.submit(make_job(gpus=1, time_limit=None))
    [toolong] = d.submit(make_job(gpus=1, time_limit=3 * HOUR))
    d.settle()
    assert d.job(dflt).time_limit == HOUR and d.state(dflt) is JobState.RUNNING
    assert d.state(toolong) is JobState.PENDING
    assert d.job(toolong).reason == Reason.PARTITION_TIME


def test_held_and_begin_time_jobs_wait() -> None:
    d = EngineDriver(small_cluster(), "slurm")
    [held] = d.submit(make_job(gpus=1, hold=True))
    [later] = d.submit(make_job(gpus=1, begin=HOUR))
    d.settle()
    assert d.job(held).reason == Reason.HELD_USER and d.state(held) is JobState.PENDING
    assert d.job(later).reason == Reason.BEGIN_TIME
    d.advance(HOUR)
    assert d.state(later) is JobState.RUNNING and d.job(later).start == HOUR
    assert d.state(held) is JobState.PENDING


def test_run_engine_replays_to_the_end() -> None:
    spec = make_job(gpus=8, nodes=4, time_limit=HOUR)
    d = run_engine(small_cluster(), "slurm", [(0, spec, 30 * MINUTE), (MINUTE, spec, HOUR)])
    first, second = (ids[0] for ids in d.submitted)
    assert d.state(first) is JobState.COMPLETED and d.state(second) is JobState.COMPLETED
    assert d.job(second).first_start == 30 * MINUTE and d.job(second).end == 90 * MINUTE
