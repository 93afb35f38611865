"""Dependencies (afterok, afterany, afternotok, singleton) and job arrays with a throttle."""

from __future__ import annotations

import pytest

from phalanx.domain.jobspec import ArraySpec, Dependency, DepKind
from phalanx.domain.state import JobState, Reason
from phalanx.domain.time import MINUTE
from phalanx.testing import EngineDriver, make_job, small_cluster


def after(kind: DepKind, *ids: int) -> tuple[Dependency, ...]:
    return (Dependency(kind, ids),)


@pytest.mark.parametrize(
    ("kind", "exit_code", "runs"),
    [
        (DepKind.AFTEROK, 0, True),
        (DepKind.AFTEROK, 1, False),
        (DepKind.AFTERANY, 0, True),
        (DepKind.AFTERANY, 1, True),
        (DepKind.AFTERNOTOK, 0, False),
        (DepKind.AFTERNOTOK, 1, True),
    ],
)
def test_dependency_on_the_outcome_of_another_job(
    kind: DepKind, exit_code: int, runs: bool
) -> None:
    d = EngineDriver(small_cluster(), "slurm")
    [first] = d.submit(make_job(gpus=1))
    [second] = d.submit(make_job(gpus=1, dependencies=after(kind, first)))
    d.settle()
    assert d.state(first) is JobState.RUNNING
    assert d.state(second) is JobState.PENDING and d.job(second).reason == Reason.DEPENDENCY
    d.advance(MINUTE)
    d.finish(first, exit_code)
    if runs:
        assert d.state(second) is JobState.RUNNING and d.job(second).start == MINUTE
    else:
        assert d.state(second) is JobState.PENDING
        assert d.job(second).reason == Reason.DEPENDENCY_NEVER


def test_afterok_on_several_jobs_waits_for_all() -> None:
    d = EngineDriver(small_cluster(), "fifo")
    [a] = d.submit(make_job(gpus=1))
    [b] = d.submit(make_job(gpus=1))
    [c] = d.submit(make_job(gpus=1, dependencies=after(DepKind.AFTEROK, a, b)))
    d.settle()
    d.finish(a)
    assert d.state(c) is JobState.PENDING
    d.finish(b)
    assert d.state(c) is JobState.RUNNING


def test_afterany_counts_a_cancelled_job_as_ended() -> None:
    d = EngineDriver(small_cluster(), "fifo")
    [a] = d.submit(make_job(gpus=1, hold=True))
    [b] = d.submit(make_job(gpus=1, dependencies=after(DepKind.AFTERANY, a)))
    d.settle()
    d.cancel(a)
    assert d.state(b) is JobState.RUNNING


def test_singleton_runs_one_job_of_a_name_and_user_at_a_time() -> None:
    d = EngineDriver(small_cluster(), "slurm")
    single = after(DepKind.SINGLETON)
    [a] = d.submit(make_job(gpus=1, name="train", dependencies=single))
    [b] = d.submit(make_job(gpus=1, name="train", dependencies=single))
    [other] = d.submit(make_job(gpus=1, name="train", user="bob", dependencies=single))
    d.settle()
    assert d.state(a) is JobState.RUNNING and d.state(other) is JobState.RUNNING
    assert d.state(b) is JobState.PENDING and d.job(b).reason == Reason.DEPENDENCY
    d.finish(a)
    assert d.state(b) is JobState.RUNNING


def test_dependency_on_an_unknown_job_is_ignored() -> None:
    d = EngineDriver(small_cluster(), "slurm")
    [j] = d.submit(make_job(gpus=1, dependencies=after(DepKind.AFTEROK, 999)))
    d.settle()
    assert d.state(j) is JobState.RUNNING


def test_array_tasks_get_their_own_ids_and_the_throttle_limits_how_many_run() -> None:
    d = EngineDriver(small_cluster(), "slurm")
    ids = d.submit(make_job(gpus=1, array=ArraySpec(tuple(range(6)), throttle=2)))
    d.settle()
    assert len(ids) == 6
    assert [d.job(j).array_task_id for j in ids] == list(range(6))
    assert {d.job(j).array_job_id for j in ids} == {ids[0]}
    running = [j for j in ids if d.state(j) is JobState.RUNNING]
    assert running == ids[:2]
    assert all(d.job(j).reason == Reason.ARRAY_LIMIT for j in ids[2:])
    d.finish(ids[0])
    assert [j for j in ids if d.state(j) is JobState.RUNNING] == [ids[1], ids[2]]
    while running := [j for j in ids if d.state(j) is JobState.RUNNING]:
        assert len(running) <= 2
        d.finish(running[0])
    assert all(d.state(j) is JobState.COMPLETED for j in ids)


def test_array_without_throttle_runs_what_fits() -> None:
    d = EngineDriver(small_cluster(nodes=1, gpus=8, per_leaf=1), "fifo")
    ids = d.submit(make_job(gpus=2, array=ArraySpec(tuple(range(5)))))
    d.settle()
    assert [d.state(j) for j in ids].count(JobState.RUNNING) == 4
