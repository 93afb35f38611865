"""Per-service metrics: the sliding window, average concurrency, Prometheus text."""

from __future__ import annotations

import pytest

from phalanx.router.metrics import WINDOW_S, ServiceStats, prometheus


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
