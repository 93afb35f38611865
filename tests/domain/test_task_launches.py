"""``JobSpec.tasks``: one launch per task, for a fixed node count."""

from __future__ import annotations

import pytest

from phalanx.domain.jobspec import JobSpec, TaskLaunch
from phalanx.errors import SpecError


def test_one_launch_per_task() -> None:
    two = (TaskLaunch(("a",)), TaskLaunch(("b",)))
    assert JobSpec(nodes_min=1, nodes_max=1, tasks_per_node=2, tasks=two).tasks == two
    with pytest.raises(SpecError, match="2 task launches for 3 tasks"):
        JobSpec(nodes_min=1, nodes_max=1, tasks_per_node=3, tasks=two)


def test_launches_need_a_fixed_node_count_and_no_batch_script() -> None:
    two = (TaskLaunch(("a",)), TaskLaunch(("b",)))
    with pytest.raises(SpecError) as err:
        JobSpec(nodes_min=1, nodes_max=2, tasks=two)
    assert err.value.field == "tasks"
    with pytest.raises(SpecError):
        JobSpec(nodes_min=2, nodes_max=2, batch=True, tasks=two)
