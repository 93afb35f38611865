"""Elastic jobs: grown onto nodes no waiting job could use, shrunk instead of preempted."""

from __future__ import annotations

import pickle

import pytest

from phalanx.domain.state import JobState
from phalanx.domain.time import HOUR, MINUTE
from phalanx.engine.commands import PASS, Kill, Launch, Resize
from phalanx.engine.decisions import Preempted, Resized
from phalanx.engine.events import CleanupDone, TasksExited, TimerFired
from phalanx.engine.timers import KILL_WAIT
from phalanx.errors import SpecError
from phalanx.testing import EngineDriver, make_job, small_cluster


def _nodes(d: EngineDriver, job_id: int) -> tuple[int, ...]:
    alloc = d.job(job_id).alloc
    assert alloc is not None
    return alloc.nodes


def _elastic(low: int, high: int, **extra: object) -> object:
    return make_job(gpus=8, nodes=low, nodes_max=high, time_limit=10 * HOUR, elastic=True, **extra)


def test_an_elastic_job_starts_with_what_fits_and_grows_when_a_node_frees() -> None:
    d = EngineDriver(small_cluster(nodes=4, gpus=8), "slurm")
    [blocker] = d.submit(make_job(gpus=8, nodes=2, time_limit=10 * HOUR))
    d.settle()
    [job] = d.submit(_elastic(2, 4))  # type: ignore[arg-type]
    d.settle()
    assert d.state(job) is JobState.RUNNING and len(_nodes(d, job)) == 2
    before = _nodes(d, job)
    d.finish(blocker)
    assert d.state(job) is JobState.RUNNING
    after = _nodes(d, job)
    assert len(after) == 4 and after[:2] == before  # added at the end: ranks 0-1 stay put
    [grown] = d.decisions(Resized, job)
    assert grown.added == after[2:] and grown.removed == ()
    [resize] = d.sent(Resize, job)
    assert resize.added == after[2:] and resize.alloc.nodes == after
    assert len(d.sent(Launch, job)) == 1  # one launch: the run goes on
    assert d.engine.state.free_gpus == 0


def test_growth_waits_while_a_job_waits_for_the_same_partition() -> None:
    d = EngineDriver(small_cluster(nodes=4, gpus=8), "slurm")
    [blocker] = d.submit(make_job(gpus=8, nodes=3, time_limit=10 * HOUR))
    d.settle()
    [job] = d.submit(_elastic(1, 4))  # type: ignore[arg-type]
    d.settle()
    assert len(_nodes(d, job)) == 1
    [waiter] = d.submit(make_job(gpus=8, nodes=2, time_limit=10 * HOUR))
    d.settle()
    assert d.state(waiter) is JobState.PENDING
    d.finish(blocker)  # three nodes free: the waiter takes two, the job may grow onto one
    assert d.state(waiter) is JobState.RUNNING
    assert len(_nodes(d, job)) == 2
    assert d.engine.state.free_gpus == 0


def test_no_growth_onto_a_node_while_a_larger_job_waits_for_it() -> None:
    d = EngineDriver(small_cluster(nodes=4, gpus=8), "slurm")
    [blocker] = d.submit(make_job(gpus=8, nodes=2, time_limit=10 * HOUR))
    [small] = d.submit(make_job(gpus=8, nodes=1, time_limit=10 * HOUR))
    d.settle()
    [job] = d.submit(_elastic(1, 4))  # type: ignore[arg-type]
    d.settle()
    [big] = d.submit(make_job(gpus=8, nodes=3, time_limit=10 * HOUR))
    d.settle()
    assert d.state(big) is JobState.PENDING
    d.finish(small)  # one node free: the big job needs three and waits; no growth onto it
    assert len(_nodes(d, job)) == 1 and d.engine.state.free_gpus == 8
    assert not d.decisions(Resized, job)
    d.finish(blocker)
    assert d.state(big) is JobState.RUNNING


def test_a_job_that_may_preempt_shrinks_an_elastic_job_instead_of_preempting_it() -> None:
    d = EngineDriver(small_cluster(nodes=4, gpus=8), "slurm")
    [job] = d.submit(_elastic(2, 4))  # type: ignore[arg-type]
    d.settle()
    assert len(_nodes(d, job)) == 4
    d.advance(10 * MINUTE)
    [high] = d.submit(make_job(gpus=8, nodes=2, qos="high"))
    d.settle()
    assert d.state(high) is JobState.RUNNING and d.state(job) is JobState.RUNNING
    assert not d.decisions(Preempted)
    [shrunk] = d.decisions(Resized, job)
    assert shrunk.for_job == high and len(shrunk.removed) == 2 and len(shrunk.nodes) == 2
    assert set(_nodes(d, high)) == set(shrunk.removed)
    [resize] = d.sent(Resize, job)
    assert resize.removed == shrunk.removed and resize.added == ()
    assert not d.sent(Kill, job)
    # Attained service counts 4 nodes for 10 minutes, then 2.
    d.advance(20 * MINUTE)
    assert d.job(job).attained_at(d.now) == 32 * 10 * MINUTE + 16 * 10 * MINUTE


def test_shrinking_stops_at_the_minimum_and_preemption_takes_over() -> None:
    d = EngineDriver(small_cluster(nodes=4, gpus=8), "slurm")
    [job] = d.submit(_elastic(3, 4))  # type: ignore[arg-type]
    d.settle()
    [high] = d.submit(make_job(gpus=8, nodes=2, qos="high"))
    d.settle()
    # One node above its minimum is not enough: the job is preempted whole.
    assert not d.decisions(Resized, job)
    assert [p.job_id for p in d.decisions(Preempted)] == [job]
    assert d.state(high) is JobState.RUNNING


def test_a_job_of_equal_qos_does_not_shrink_an_elastic_job() -> None:
    d = EngineDriver(small_cluster(nodes=4, gpus=8), "slurm")
    [job] = d.submit(_elastic(2, 4))  # type: ignore[arg-type]
    d.settle()
    [other] = d.submit(make_job(gpus=8, nodes=1))
    d.settle()
    assert d.state(other) is JobState.PENDING and len(_nodes(d, job)) == 4


def test_a_shrunk_job_does_not_grow_back_onto_a_node_it_left_in_the_same_run() -> None:
    d = EngineDriver(small_cluster(nodes=4, gpus=8), "slurm")
    [job] = d.submit(_elastic(2, 4))  # type: ignore[arg-type]
    d.settle()
    [high] = d.submit(make_job(gpus=8, nodes=2, qos="high"))
    d.settle()
    left = set(_nodes(d, high))
    d.finish(high)
    assert len(_nodes(d, job)) == 2 and not left & set(_nodes(d, job))
    assert d.engine.state.free_gpus == 16


def test_the_engine_pickles_with_its_elastic_jobs_and_goes_on_alike() -> None:
    d = EngineDriver(small_cluster(nodes=4, gpus=8), "slurm")
    [blocker] = d.submit(make_job(gpus=8, nodes=2, time_limit=10 * HOUR))
    d.settle()
    [job] = d.submit(_elastic(2, 4))  # type: ignore[arg-type]
    d.settle()
    copy = pickle.loads(pickle.dumps(d.engine))
    assert copy.elastic.jobs[job] is copy.jobs[job]
    events = [
        TasksExited(d.now, blocker, 1),
        CleanupDone(d.now, blocker, 1),
        TimerFired(d.now, PASS),
    ]
    mine = [c for e in events for c in d.engine.handle(e)]
    theirs = [c for e in events for c in copy.handle(e)]
    assert mine == theirs and any(isinstance(c, Resize) for c in mine)
    assert copy.jobs[job].alloc == d.engine.jobs[job].alloc


def test_removed_ranks_get_sigterm_then_sigkill_after_the_grace() -> None:
    d = EngineDriver(small_cluster(nodes=4, gpus=8), "slurm")
    [job] = d.submit(_elastic(2, 4))  # type: ignore[arg-type]
    d.settle()
    d.submit(make_job(gpus=8, nodes=1, qos="high"))
    d.settle()
    [term] = d.sent(Resize, job)
    assert len(term.removed) == 1 and not term.kill
    d.advance(d.now + KILL_WAIT)
    [_, kill] = d.sent(Resize, job)
    assert kill.kill and kill.removed == term.removed and kill.added == ()
    assert d.state(job) is JobState.RUNNING


def test_per_rank_tasks_of_an_elastic_job_name_every_rank_up_to_the_maximum() -> None:
    from phalanx.domain.jobspec import JobSpec, TaskLaunch

    tasks = tuple(TaskLaunch(("true",)) for _ in range(4))
    spec = JobSpec(nodes_min=2, nodes_max=4, elastic=True, tasks=tasks)
    assert len(spec.tasks) == 4
    with pytest.raises(SpecError):
        JobSpec(nodes_min=2, nodes_max=4, tasks=tasks)  # not elastic: a fixed count
    with pytest.raises(SpecError):
        JobSpec(nodes_min=2, nodes_max=4, elastic=True, tasks=tasks[:2])
