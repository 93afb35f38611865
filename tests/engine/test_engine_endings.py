"""Endings: the state a run ends in follows what was asked of it, in Slurm's precedence."""

from __future__ import annotations

import dataclasses

from phalanx.domain.cluster import PreemptMode
from phalanx.domain.state import JobState
from phalanx.domain.time import HOUR, SECOND
from phalanx.engine.endings import Endings, preempt_mode
from phalanx.sched.job import Job
from phalanx.testing import make_job, small_cluster


def _job(requeue: bool = True, exit_code: int = 0) -> Job:
    job = Job(7, 7, make_job(requeue=requeue), 0, "gpu", 0, HOUR)
    job.exit_code = exit_code
    return job


def test_a_requeue_asked_wins_and_clears_every_mark() -> None:
    endings = Endings()
    endings.requeue_asked.add(7)
    endings.cancelled[7] = "alice"
    endings.preempting[7] = (PreemptMode.REQUEUE, 9)
    endings.failing.add(7)
    endings.timeouts.add(7)
    assert endings.final_state(_job()) is JobState.REQUEUED
    assert not (endings.cancelled or endings.preempting or endings.failing or endings.timeouts)
    # With no mark left, the exit status decides.
    assert endings.final_state(_job(exit_code=3)) is JobState.FAILED


def test_each_mark_gives_its_state() -> None:
    endings = Endings()
    endings.cancelled[7] = "alice"
    endings.timeouts.add(7)
    assert endings.final_state(_job()) is JobState.CANCELLED
    endings.preempting[7] = (PreemptMode.REQUEUE, 9)
    assert endings.final_state(_job(requeue=False)) is JobState.PREEMPTED
    endings.failing.add(7)
    assert endings.final_state(_job(requeue=False)) is JobState.NODE_FAIL
    endings.timeouts.add(7)
    assert endings.final_state(_job()) is JobState.TIMEOUT
    assert endings.final_state(_job()) is JobState.COMPLETED


def test_the_partitions_preemption_mode_wins_over_the_qos() -> None:
    cluster = small_cluster()  # partition gpu: no mode of its own; QOS normal: REQUEUE, 0
    assert preempt_mode(cluster, _job()) == (PreemptMode.REQUEUE, 0)
    part = cluster.partitions["gpu"]
    cluster.partitions["gpu"] = dataclasses.replace(
        part, preempt_mode=PreemptMode.CANCEL, grace_time=5 * SECOND
    )
    assert preempt_mode(cluster, _job()) == (PreemptMode.CANCEL, 5 * SECOND)
