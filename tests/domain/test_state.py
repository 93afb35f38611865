"""Job states change only through ``transition``, along Slurm's state machine."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from phalanx.domain.state import BadTransition, JobState, can_transition, transition


@dataclass
class _Job:
    state: JobState = JobState.PENDING


def test_a_run_that_ends_goes_through_completing() -> None:
    job = _Job()
    for state in (JobState.RUNNING, JobState.COMPLETING, JobState.TIMEOUT):
        transition(job, state)
        assert job.state is state


def test_a_requeue_goes_through_requeued_back_to_pending_even_when_finished() -> None:
    job = _Job(JobState.COMPLETED)
    transition(job, JobState.REQUEUED)
    transition(job, JobState.PENDING)
    assert job.state is JobState.PENDING


@pytest.mark.parametrize(
    ("old", "new"),
    [
        (JobState.COMPLETED, JobState.RUNNING),
        (JobState.PENDING, JobState.COMPLETING),
        (JobState.RUNNING, JobState.PENDING),
        (JobState.CANCELLED, JobState.PENDING),
    ],
)
def test_a_change_the_table_forbids_raises_and_changes_nothing(
    old: JobState, new: JobState
) -> None:
    job = _Job(old)
    with pytest.raises(BadTransition, match=f"from {old.value} to {new.value}"):
        transition(job, new)
    assert job.state is old
    assert not can_transition(old, new)
