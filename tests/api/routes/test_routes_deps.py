"""The query parsers the routers share: job ids (with Slurm's ``A_T``) and state filters."""

from __future__ import annotations

import pytest

from phalanx.api.routes.deps import job_ids, states
from phalanx.errors import InputError


def test_job_ids_and_array_tasks() -> None:
    assert job_ids("3, 1,7_2") == [3, 1, (7, 2)]
    assert job_ids(None) is None and job_ids("") is None


# "²" passed str.isdigit and made int() raise: a 500.
@pytest.mark.parametrize("text", ["x", "1,", "1_x", "_2", "-1", "1__2", "²", "1_²"])
def test_anything_else_is_refused_naming_the_field(text: str) -> None:
    with pytest.raises(InputError) as caught:
        job_ids(text, field="jobs")
    assert caught.value.field == "jobs"


def test_states() -> None:
    assert states("RUNNING,,PENDING") == ["RUNNING", "PENDING"]
    assert states(None) is None and states("") is None
