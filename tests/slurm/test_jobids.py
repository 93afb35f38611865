"""The job-id filter ``sacct -j`` and ``squeue -j`` share."""

from __future__ import annotations

import pytest

from phalanx.slurm import jobids
from phalanx.slurm.commandline import Usage


def test_ids_tasks_and_steps() -> None:
    assert jobids.parse("7, 8_2,9.batch,10.0,", "sacct") == [
        (7, None),
        (8, 2),
        (9, None),
        (10, None),
    ]


@pytest.mark.parametrize("text", ["x", "7_", "7_x", "-1", "7_[1-2]"])
def test_what_is_not_an_id_is_refused_in_the_commands_words(text: str) -> None:
    with pytest.raises(Usage) as caught:
        jobids.parse(text, "squeue")
    assert (str(caught.value), caught.value.status) == (f"squeue: error: Invalid job id: {text}", 1)


def test_a_job_an_array_and_one_task_of_it() -> None:
    plain = {"job_id": 5}
    task = {"job_id": 12, "array_job_id": 10, "array_task_id": 2}
    assert jobids.matches(plain, [(5, None)]) and not jobids.matches(plain, [(6, None)])
    assert jobids.matches(task, [(10, None)]) and jobids.matches(task, [(12, None)])
    assert jobids.matches(task, [(10, 2)]) and not jobids.matches(task, [(10, 3)])
    assert not jobids.matches(task, [(12, 2)])
