import itertools
import re
from collections import Counter
from typing import Any

import pytest

from phalanx.domain.time import DAY, HOUR, MINUTE
from phalanx.errors import ConfigError
from phalanx.sim.generator import generate
from phalanx.sim.workload import TraceJob


@pytest.fixture(scope="module")
def week() -> list[TraceJob]:
    return generate(42)


def test_same_seed_same_list_other_seed_other_list() -> None:
    assert generate(3, days=1.0) == generate(3, days=1.0)
    assert generate(3, days=1.0) != generate(4, days=1.0)


def test_sorted_within_horizon_and_limits_cover_runtimes(week: list[TraceJob]) -> None:
    assert all(a.submit <= b.submit for a, b in itertools.pairwise(week))
    # Burst members may spill at most five minutes past the end.
    assert week[0].submit >= 0 and week[-1].submit < 7 * DAY + 5 * MINUTE
    assert all(
        job.spec.time_limit is not None and job.spec.time_limit >= job.runtime for job in week
    )
    assert len({job.trace_id for job in week}) == len(week)


def test_the_four_kinds(week: list[TraceJob]) -> None:
    kinds = Counter(job.spec.account for job in week)
    assert set(kinds) == {"pretrain", "finetune", "research", "rlhf"}
    assert kinds["pretrain"] < 20 < kinds["finetune"] < kinds["research"] < kinds["rlhf"]
    for job in week:
        spec = job.spec
        if spec.account == "pretrain":
            assert 8 <= spec.nodes_min <= 128 and spec.gpus_per_node == 8
            assert DAY <= job.runtime <= 5 * DAY
            assert spec.checkpoint_interval is not None
            assert 30 * MINUTE <= spec.checkpoint_interval <= 60 * MINUTE
        elif spec.account == "finetune":
            assert spec.nodes_min == 1 and spec.gpus_per_task in (1, 2, 4, 8)
            assert 10 * MINUTE <= job.runtime <= 24 * HOUR
        elif spec.account == "research":
            assert re.fullmatch(r"sweep\d+_\d+", spec.name)
            assert spec.min_gpus == 1 and 10 * MINUTE <= job.runtime <= 2 * HOUR
        else:
            assert re.fullmatch(r"rlhf\d+_\d+", spec.name)
            assert spec.min_gpus == 1 or 250 <= spec.gpu_milli <= 500
            assert job.runtime <= 10 * MINUTE


def test_sweeps_arrive_within_a_minute(week: list[TraceJob]) -> None:
    sweep = [job.submit for job in week if job.spec.name.startswith("sweep0_")]
    assert 50 <= len(sweep) <= 500 and max(sweep) - min(sweep) < MINUTE


def test_scale_multiplies_arrivals() -> None:
    small = len(generate(5, days=2.0, scale=0.5))
    large = len(generate(5, days=2.0, scale=4.0))
    assert large > 3 * small


def test_accounts_are_reused_round_robin() -> None:
    jobs = generate(1, days=1.0, accounts=("a", "b"))
    assert {job.spec.account for job in jobs} == {"a", "b"}


@pytest.mark.parametrize("kwargs", [{"days": 0.0}, {"scale": -1.0}, {"accounts": ()}])
def test_bad_arguments(kwargs: dict[str, Any]) -> None:
    with pytest.raises(ConfigError):
        generate(0, **kwargs)
