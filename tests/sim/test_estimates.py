import statistics

import pytest

from phalanx.domain.time import DAY, HOUR, MINUTE, SECOND
from phalanx.errors import TraceError
from phalanx.sim.traces.estimates import (
    LADDER,
    MAX_FACTOR,
    MIN_FACTOR,
    estimate_limit,
    estimate_limits,
    overestimate_factor,
    round_up_to_ladder,
)
from phalanx.sim.traces.gang import gang_shape
from phalanx.sim.traces.options import TraceOptions, select

RUNTIMES = [1, SECOND, 4 * MINUTE, 5 * MINUTE, 59 * MINUTE, 3 * HOUR, 2 * DAY, 50 * DAY, 90 * DAY]


def test_limits_never_below_runtime_and_on_the_ladder() -> None:
    for seed in range(5):
        for runtime, limit in zip(RUNTIMES * 50, estimate_limits(RUNTIMES * 50, seed), strict=True):
            assert limit >= runtime
            assert limit in LADDER or (limit > LADDER[-1] and limit % DAY == 0)


def test_limits_are_deterministic_per_seed() -> None:
    runtimes = [HOUR] * 200
    assert estimate_limits(runtimes, 7) == estimate_limits(runtimes, 7)
    assert estimate_limits(runtimes, 7) != estimate_limits(runtimes, 8)
    assert estimate_limits(runtimes, -1) != estimate_limits(runtimes, 1)


def test_limit_depends_on_index_not_on_other_jobs() -> None:
    limits = estimate_limits([HOUR, 2 * HOUR, 3 * HOUR], seed=3)
    assert limits[2] == estimate_limit(3 * HOUR, 3, 2)


def test_factor_distribution_has_median_two_and_clips() -> None:
    factors = [overestimate_factor(11, i) for i in range(20_000)]
    assert all(MIN_FACTOR <= f <= MAX_FACTOR for f in factors)
    assert 1.9 < statistics.median(factors) < 2.1
    # About 19 % of draws fall below 1 and are clipped to exactly 1.
    assert 0.15 < sum(f == MIN_FACTOR for f in factors) / len(factors) < 0.23


def test_round_up_to_ladder() -> None:
    assert round_up_to_ladder(1) == 5 * MINUTE
    assert round_up_to_ladder(5 * MINUTE) == 5 * MINUTE
    assert round_up_to_ladder(5 * MINUTE + 1) == 10 * MINUTE
    assert round_up_to_ladder(13 * HOUR) == 24 * HOUR
    assert round_up_to_ladder(60 * DAY) == 60 * DAY
    assert round_up_to_ladder(60 * DAY + 1) == 61 * DAY


def test_negative_runtime_is_a_bug() -> None:
    with pytest.raises(ValueError):
        estimate_limit(-1, 0, 0)


@pytest.mark.parametrize(
    ("gpus", "shape"),
    [
        (0, (1, 0)),
        (1, (1, 1)),
        (8, (1, 8)),
        (9, (3, 3)),
        (12, (2, 6)),
        (16, (2, 8)),
        (24, (3, 8)),
        (128, (16, 8)),
        (11, (11, 1)),
    ],
)
def test_gang_shape(gpus: int, shape: tuple[int, int]) -> None:
    assert gang_shape(gpus) == shape


def test_gang_shape_is_the_fewest_nodes_that_split_evenly() -> None:
    for per_node in (1, 2, 4, 8, 16):
        for gpus in range(per_node + 1, 2_000):
            nodes = -(-gpus // per_node)
            while gpus % nodes:
                nodes += 1
            assert gang_shape(gpus, per_node) == (nodes, gpus // nodes)


def test_gang_shape_of_a_huge_prime_count_is_immediate() -> None:
    # 99,999,999,977 is prime: searching node counts upwards took ~10^11 steps (a hung reader).
    assert gang_shape(99_999_999_977) == (99_999_999_977, 1)
    assert gang_shape(99_999_999_999) == (33_333_333_333, 3)


def test_a_load_that_stretches_submits_past_any_instant_is_refused() -> None:
    # 1e-300 made int(inf) raise OverflowError; 1e-12 made instants past int64 milliseconds.
    for load in (1e-300, 1e-12):
        with pytest.raises(TraceError, match="stretches the submit times") as info:
            select([0, 5_000], TraceOptions(load=load))
        assert info.value.field == "load"
    assert select([0, 5_000], TraceOptions(load=1e-9)) == [(0, 0), (1, 5_000_000_000_000)]


def test_select_orders_windows_limits_and_compresses() -> None:
    submits = [5_000, 1_000, 3_000, 1_000, 9_001]
    assert select(submits, TraceOptions()) == [(1, 0), (3, 0), (2, 2_000), (0, 4_000), (4, 8_001)]
    assert select(submits, TraceOptions(load=2.0)) == [
        (1, 0),
        (3, 0),
        (2, 1_000),
        (0, 2_000),
        (4, 4_000),
    ]
    # The window is in trace time after the first submit; the result is rebased to 0.
    assert select(submits, TraceOptions(window=(2_000, 8_000))) == [(2, 0), (0, 2_000)]
    assert select(submits, TraceOptions(limit=2)) == [(1, 0), (3, 0)]
    assert select([], TraceOptions(limit=2)) == []


@pytest.mark.parametrize(
    ("options", "field"),
    [
        (TraceOptions(limit=-1), "limit"),
        (TraceOptions(load=0.0), "load"),
        (TraceOptions(load=float("nan")), "load"),
        (TraceOptions(window=(5, 1)), "window"),
    ],
)
def test_bad_options_are_trace_errors(options: TraceOptions, field: str) -> None:
    with pytest.raises(TraceError) as info:
        options.check("t.csv")
    assert info.value.field == field
