"""Serving pools in the engine (``phalanx.config.serving_pool``): two nodes of 8 GPUs, 8-GPU
training jobs (QOS ``normal``, saving a checkpoint on the signal) and 8-GPU replicas (QOS
``high``, WorkloadPriorityClass ``high``), under the ``phalanx`` profile. Each mode's
promise, checked in the decisions: who runs, who is preempted, with what grace."""

from __future__ import annotations

import pytest

from phalanx.config.serving_pool import ServingPool, with_pool
from phalanx.domain.cluster import PreemptMode
from phalanx.domain.jobspec import SIGNALS, JobSpec
from phalanx.domain.queues import PRIORITY_CLASS_LABEL
from phalanx.domain.state import JobState
from phalanx.domain.time import HOUR, MINUTE, SECOND
from phalanx.engine.commands import Signal
from phalanx.engine.decisions import Preempted
from phalanx.testing import EngineDriver, make_job, small_cluster

GRACE = 60 * SECOND


def driver(mode: str, gpus: int | None) -> EngineDriver:
    cluster = small_cluster(nodes=2, gpus=8, preempt_mode=PreemptMode.REQUEUE, grace_time=GRACE)
    return EngineDriver(with_pool(cluster, ServingPool(mode, gpus)), "phalanx")


def training() -> JobSpec:
    return make_job(gpus=8, account="research", time_limit=10 * HOUR, checkpoint_on_signal=True)


def replica() -> JobSpec:
    return make_job(
        gpus=8,
        account="chat",
        qos="high",
        time_limit=100 * HOUR,
        extra=((PRIORITY_CLASS_LABEL, "high"),),
    )


def start_training(d: EngineDriver, count: int) -> list[int]:
    ids = [d.submit(training())[0] for _ in range(count)]
    d.settle()
    return ids


def preempted(d: EngineDriver) -> list[int]:
    return [e.job_id for e in d.decisions(Preempted)]


def test_guaranteed_training_borrows_the_idle_pool_and_gives_it_back_with_a_grace() -> None:
    d = driver("guaranteed", 8)
    jobs = start_training(d, 2)
    # Training's own quota is 8 GPUs: the second job runs on serving's idle 8.
    assert [d.state(j) for j in jobs] == [JobState.RUNNING, JobState.RUNNING]
    [r] = d.submit(replica())
    d.settle()
    [victim] = preempted(d)
    assert victim in jobs
    # The victim gets its grace signal (it checkpoints), not a kill.
    terms = [s for s in d.sent(Signal, victim) if s.signal == SIGNALS["TERM"]]
    assert terms and d.state(r) is JobState.PENDING
    d.finish(victim)  # it saved and exited within its grace
    d.settle()
    assert d.state(r) is JobState.RUNNING
    assert d.state(victim) is JobState.PENDING  # requeued, waits for its quota back


def test_guaranteed_serving_beyond_its_pool_borrows_only_idle_gpus() -> None:
    d = driver("guaranteed", 8)
    [r1] = d.submit(replica())
    d.settle()
    [t] = start_training(d, 1)
    [r2] = d.submit(replica())
    d.settle()
    d.advance(d.now + 5 * MINUTE)
    assert d.state(r1) is JobState.RUNNING and d.state(t) is JobState.RUNNING
    assert d.state(r2) is JobState.PENDING and preempted(d) == []
    d.finish(t)
    d.settle()
    assert d.state(r2) is JobState.RUNNING  # borrowed once idle


def test_borrowable_serving_has_no_quota_and_preempts_training_by_priority() -> None:
    d = driver("borrowable", None)
    jobs = start_training(d, 2)
    assert [d.state(j) for j in jobs] == [JobState.RUNNING, JobState.RUNNING]
    [r1] = d.submit(replica())
    [r2] = d.submit(replica())
    d.settle()
    assert sorted(preempted(d)) == sorted(jobs)
    for j in jobs:
        d.finish(j)
    d.settle()
    assert d.state(r1) is JobState.RUNNING and d.state(r2) is JobState.RUNNING


def test_borrowable_serving_takes_idle_gpus_without_preempting() -> None:
    d = driver("borrowable", None)
    [t] = start_training(d, 1)
    [r] = d.submit(replica())
    d.settle()
    assert d.state(r) is JobState.RUNNING and d.state(t) is JobState.RUNNING
    assert preempted(d) == []


def test_static_split_lends_nothing_and_preempts_nothing() -> None:
    d = driver("static", 8)
    jobs = start_training(d, 2)
    # Training is held to its 8 GPUs though serving's 8 are idle.
    assert [d.state(j) for j in jobs] == [JobState.RUNNING, JobState.PENDING]
    [r1] = d.submit(replica())
    [r2] = d.submit(replica())
    d.settle()
    d.advance(d.now + 5 * MINUTE)
    assert d.state(r1) is JobState.RUNNING and d.state(r2) is JobState.PENDING
    assert preempted(d) == []


@pytest.mark.parametrize("mode", ["guaranteed", "static"])
def test_a_pool_cannot_be_larger_than_the_cluster(mode: str) -> None:
    from phalanx.errors import ConfigError

    with pytest.raises(ConfigError, match="pool"):
        driver(mode, 17)
