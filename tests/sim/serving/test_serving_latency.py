"""The M/M/c latency model: closed forms where they are known, and monotonicity."""

from __future__ import annotations

import itertools
import math

import pytest

from phalanx.sim.serving.latency import LatencyModel, erlang_c, sojourn_tail


def test_erlang_c_matches_the_textbook_value() -> None:
    # M/M/2 at a = 1 Erlang: C = a^2 / (a^2 + 2 (2 - a)) ... = 1/3.
    assert erlang_c(2, 1.0) == pytest.approx(1 / 3)
    # One server: the probability of waiting is the utilisation.
    assert erlang_c(1, 0.75) == pytest.approx(0.75)


def test_erlang_c_refuses_an_unstable_queue() -> None:
    with pytest.raises(ValueError, match="offered < servers"):
        erlang_c(2, 2.0)


def test_one_server_tail_is_exponential_in_the_spare_rate() -> None:
    # M/M/1: the sojourn time is Exp(mu - lambda).
    for t in (0.01, 0.1, 0.5):
        assert sojourn_tail(t, 6.0, 10.0, 1) == pytest.approx(math.exp(-4.0 * t))


def test_capacity_is_where_one_replica_meets_the_slo_percentile() -> None:
    model = LatencyModel(capacity_rps=20, slo_s=0.5, percentile=0.99)
    assert model.latency_s(0.99, 20, 1) == pytest.approx(0.5, rel=1e-6)
    assert model.attainment(20, 1) == pytest.approx(0.99)


def test_attainment_never_rises_with_load_and_never_falls_with_replicas() -> None:
    model = LatencyModel(capacity_rps=10, slo_s=0.2, percentile=0.95)
    loads = [0.5 * k for k in range(1, 400)]
    for replicas in (1, 3, 8):
        values = [model.attainment(load, replicas) for load in loads]
        assert all(b <= a + 1e-12 for a, b in itertools.pairwise(values))
        assert values[0] > 0.99 and values[-1] < 0.5
    for load in (5.0, 25.0, 60.0):
        by_replicas = [model.attainment(load, c) for c in range(0, 12)]
        assert by_replicas[0] == 0.0
        assert all(b >= a - 1e-12 for a, b in itertools.pairwise(by_replicas))


def test_requests_over_capacity_are_violations() -> None:
    model = LatencyModel(capacity_rps=10, slo_s=0.5)
    at_capacity = model.attainment(40, 4)
    # Twice the capacity: the excess half misses, the admitted half fares as at capacity.
    assert model.attainment(80, 4) == pytest.approx(at_capacity / 2)


def test_p99_grows_with_load() -> None:
    model = LatencyModel(capacity_rps=10, slo_s=0.5)
    p99 = [model.latency_s(0.99, load, 4) for load in (4, 20, 36, 40)]
    assert p99 == sorted(p99) and p99[0] < p99[-1]
    assert model.latency_s(0.99, 10, 0) == math.inf
