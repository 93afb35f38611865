"""Per-service metrics: the sliding window, average concurrency, Prometheus text."""

from __future__ import annotations

import pytest

from phalanx.router.metrics import (
    BUCKETS,
    LATENCY_WINDOW_S,
    WINDOW_S,
    ServiceStats,
    prometheus,
    quantile,
)


def test_rate_over_the_window_and_old_seconds_drop_out() -> None:
    s = ServiceStats("ns", "web", start=0.0)
    for i in range(100):  # 10 per second for 10 s
        s.arrived(i * 0.1)
        s.finished(i * 0.1 + 0.05, 200, 0.05)
    rps, concurrency = s.rate(10.0, window=10)
    assert rps == pytest.approx(10.0, rel=0.05)
    assert concurrency == pytest.approx(0.5, rel=0.05)  # 50 ms of every 100 ms busy
    rps_later, conc_later = s.rate(30.0, window=10)
    assert rps_later == 0.0 and conc_later == 0.0
    assert s.total == 100 and s.by_code == {200: 100}


def test_in_flight_counts_until_finished_and_concurrency_integrates_it() -> None:
    s = ServiceStats("ns", "web", start=0.0)
    s.arrived(1.0)
    s.arrived(1.0)
    assert s.in_flight == 2
    _, concurrency = s.rate(5.0, window=4)  # seconds 2..5: two in flight all along
    assert concurrency == pytest.approx(2.0, rel=0.01)
    s.finished(5.0, 200, 4.0)
    s.finished(5.0, 503, 4.0)
    assert s.in_flight == 0 and s.by_code == {200: 1, 503: 1}


def test_a_gap_longer_than_the_window_clears_it() -> None:
    s = ServiceStats("ns", "web", start=0.0)
    s.arrived(0.5)
    s.finished(0.6, 200, 0.1)
    s.arrived(WINDOW_S * 3 + 0.5)
    rps, _ = s.rate(WINDOW_S * 3 + 0.9, window=WINDOW_S)
    assert rps == pytest.approx(1 / WINDOW_S, rel=0.05)


def test_the_snapshot_and_prometheus_text() -> None:
    s = ServiceStats("ns", "web", start=0.0)
    s.arrived(0.0)
    s.finished(0.003, 200, 0.003)
    snap = s.snapshot(1.0, 10, ready=2)
    assert snap["requests_total"] == 1 and snap["ready_endpoints"] == 2
    assert snap["idle_seconds"] == 1.0 and snap["in_flight"] == 0
    text = prometheus([s], 1.0)
    assert 'phalanx_router_requests_total{namespace="ns",service="web",code="200"} 1' in text
    assert (
        'phalanx_router_request_duration_seconds_bucket{namespace="ns",service="web",le="0.005"} 1'
        in text
    )
    assert (
        'phalanx_router_request_duration_seconds_bucket{namespace="ns",service="web",le="0.0025"} 0'
        in text
    )
    assert "# TYPE phalanx_router_request_duration_seconds histogram" in text


def test_quantiles_interpolate_inside_their_bucket_as_histogram_quantile() -> None:
    counts = [0] * (len(BUCKETS) + 1)
    assert quantile(0.5, counts) is None
    counts[BUCKETS.index(0.01)] = 10  # ten requests in (0.005, 0.01]
    assert quantile(0.5, counts) == pytest.approx(0.0075)
    assert quantile(0.99, counts) == pytest.approx(0.005 + 0.005 * 0.99)
    counts[-1] = 90  # and ninety above the last bound: the largest finite bound answers
    assert quantile(0.99, counts) == BUCKETS[-1]
    assert quantile(0.05, counts) == pytest.approx(0.0075)


def test_latency_quantiles_cover_the_latency_window_only() -> None:
    s = ServiceStats("ns", "web", start=0.0)
    for _ in range(99):  # 99 fast requests ending in second 1, one slow one in second 2
        s.arrived(1.0)
        s.finished(1.0 + 0.004, 200, 0.004)
    s.arrived(1.5)
    s.finished(2.5, 200, 1.0)
    p50, p99 = s.latency(3.0)
    assert p50 is not None and 0.0025 < p50 <= 0.005
    assert p99 is not None and 0.0025 < p99 <= 0.005  # rank 99 of 100: still a fast one
    snap = s.snapshot(3.0, 2, ready=1)
    assert snap["latency_p50_seconds"] == pytest.approx(p50, abs=1e-6)
    assert snap["latency_window_seconds"] == LATENCY_WINDOW_S
    # once second 1 has left the window, only the slow request remains
    later_p50, _ = s.latency(1.0 + LATENCY_WINDOW_S + 0.5)
    assert later_p50 is not None and 0.5 < later_p50 <= 1.0
    assert s.latency(2.0 + LATENCY_WINDOW_S + 0.5) == (None, None)
