"""Per-Service request metrics: in flight, held, per second over a sliding window, the
average concurrency over it, totals by status code and a latency histogram (since the start,
and over the last ``LATENCY_WINDOW_S`` for its quantiles).

The window is kept as one bucket per second (``WINDOW_S`` of them, a ring): a bucket holds
the requests that arrived in that second, the in-flight-seconds spent in it and the
latencies of the requests that ended in it, so the rate, the average concurrency and the
latency quantiles over the last N seconds (N <= ``WINDOW_S``) are sums of N buckets. Time
comes from the caller (``now``, monotonic seconds).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

__all__ = ["BUCKETS", "LATENCY_WINDOW_S", "WINDOW_S", "ServiceStats", "prometheus", "quantile"]

WINDOW_S = 60
"""The longest window asked about: Knative's stable window."""
BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)
"""Latency histogram bounds, seconds."""
LATENCY_WINDOW_S = 10
"""The window of the latency quantiles in ``/services`` (whatever window the rates cover:
a 2 s window holds too few requests for a p99)."""


def quantile(q: float, counts: list[int]) -> float | None:
    """The ``q`` quantile of a histogram over ``BUCKETS`` (then +Inf), interpolated linearly
    inside its bucket as Prometheus' ``histogram_quantile`` does (the +Inf bucket answers
    the largest finite bound); None for an empty histogram."""
    total = sum(counts)
    if not total:
        return None
    rank = q * total
    seen = 0
    for i, count in enumerate(counts):
        if count and seen + count >= rank:
            if i == len(BUCKETS):
                return BUCKETS[-1]
            low = BUCKETS[i - 1] if i else 0.0
            return low + (BUCKETS[i] - low) * (rank - seen) / count
        seen += count
    return BUCKETS[-1]


@dataclass
class ServiceStats:
    namespace: str
    name: str
    start: float = 0.0
    in_flight: int = 0
    """Requests received and not yet answered (held ones included)."""
    held: int = 0
    """Requests waiting for a ready endpoint (the demand while scaled to zero)."""
    total: int = 0
    by_code: dict[int, int] = field(default_factory=dict)
    latency_counts: list[int] = field(default_factory=lambda: [0] * (len(BUCKETS) + 1))
    latency_sum: float = 0.0
    last_request: float | None = None
    _arrivals: list[int] = field(default_factory=lambda: [0] * WINDOW_S)
    _busy: list[float] = field(default_factory=lambda: [0.0] * WINDOW_S)
    _ended: list[list[int]] = field(
        default_factory=lambda: [[0] * (len(BUCKETS) + 1) for _ in range(WINDOW_S)]
    )
    """Per second of the ring: the latency histogram of the requests that ended in it."""
    _second: int = -1
    _since: float = 0.0
    """When ``in_flight`` last changed (its busy time is added up to here)."""

    def _advance(self, now: float) -> None:
        """Bring the ring to ``now``'s second (slots of seconds entered are cleared), adding
        the in-flight time since the last change to the seconds it covered."""
        second = math.floor(now)
        if self._second < 0:
            self._second, self._since = second, now
            return
        if second - self._second >= WINDOW_S:
            self._arrivals = [0] * WINDOW_S
            self._busy = [0.0] * WINDOW_S
            self._ended = [[0] * (len(BUCKETS) + 1) for _ in range(WINDOW_S)]
        else:
            for s in range(self._second + 1, second + 1):
                self._arrivals[s % WINDOW_S] = 0
                self._busy[s % WINDOW_S] = 0.0
                self._ended[s % WINDOW_S] = [0] * (len(BUCKETS) + 1)
        t = max(self._since, float(second - WINDOW_S + 1))
        while t < now:
            edge = min(float(math.floor(t) + 1), now)
            self._busy[math.floor(t) % WINDOW_S] += self.in_flight * (edge - t)
            t = edge
        self._second, self._since = second, now

    def arrived(self, now: float) -> None:
        self._advance(now)
        self.in_flight += 1
        self._arrivals[math.floor(now) % WINDOW_S] += 1
        self.last_request = now

    def finished(self, now: float, code: int, seconds: float) -> None:
        self._advance(now)
        self.in_flight -= 1
        self.total += 1
        self.by_code[code] = self.by_code.get(code, 0) + 1
        self.latency_sum += seconds
        slot = len(BUCKETS)
        for i, bound in enumerate(BUCKETS):
            if seconds <= bound:
                slot = i
                break
        self.latency_counts[slot] += 1
        self._ended[math.floor(now) % WINDOW_S][slot] += 1

    def latency(self, now: float, window: int = LATENCY_WINDOW_S) -> tuple[float | None, ...]:
        """(p50, p99) in seconds of the requests that ended in the last ``window`` seconds
        (None where none did)."""
        self._advance(now)
        window = max(1, min(window, WINDOW_S))
        second = math.floor(now)
        counts = [0] * (len(BUCKETS) + 1)
        for i in range(window):
            for b, n in enumerate(self._ended[(second - i) % WINDOW_S]):
                counts[b] += n
        return quantile(0.5, counts), quantile(0.99, counts)

    def rate(self, now: float, window: int = 10) -> tuple[float, float]:
        """(requests per second, average concurrency) over the last ``window`` seconds
        (the current, partial second included; shorter while the router is younger)."""
        self._advance(now)
        window = max(1, min(window, WINDOW_S))
        second = math.floor(now)
        slots = [(second - i) % WINDOW_S for i in range(window)]
        span = min(float(window - 1) + (now - second), max(now - self.start, 1e-9))
        arrivals = sum(self._arrivals[s] for s in slots)
        busy = sum(self._busy[s] for s in slots)
        return arrivals / span if span > 0 else 0.0, busy / span if span > 0 else 0.0

    def snapshot(self, now: float, window: int, ready: int) -> dict[str, Any]:
        """The JSON the autoscaler reads (``phalanx.router`` docstring)."""
        rps, concurrency = self.rate(now, window)
        p50, p99 = self.latency(now)
        return {
            "namespace": self.namespace,
            "name": self.name,
            "in_flight": self.in_flight,
            "held": self.held,
            "requests_per_second": round(rps, 3),
            "average_concurrency": round(concurrency, 3),
            "window_seconds": window,
            "requests_total": self.total,
            "ready_endpoints": ready,
            "idle_seconds": None
            if self.last_request is None
            else round(now - self.last_request, 3),
            "latency_p50_seconds": None if p50 is None else round(p50, 6),
            "latency_p99_seconds": None if p99 is None else round(p99, 6),
            "latency_window_seconds": LATENCY_WINDOW_S,
        }


def _labels(stats: ServiceStats, **more: str) -> str:
    pairs = {"namespace": stats.namespace, "service": stats.name, **more}
    return ",".join(f'{k}="{v}"' for k, v in pairs.items())


def prometheus(all_stats: Iterable[ServiceStats], now: float) -> str:
    """The Prometheus text exposition of every Service's metrics."""
    stats = sorted(all_stats, key=lambda s: (s.namespace, s.name))
    lines: list[str] = []

    def family(name: str, kind: str, help_: str) -> None:
        lines.append(f"# HELP {name} {help_}")
        lines.append(f"# TYPE {name} {kind}")

    family("phalanx_router_requests_in_flight", "gauge", "Requests received, not answered yet.")
    lines += [f"phalanx_router_requests_in_flight{{{_labels(s)}}} {s.in_flight}" for s in stats]
    family("phalanx_router_requests_held", "gauge", "Requests waiting for a ready endpoint.")
    lines += [f"phalanx_router_requests_held{{{_labels(s)}}} {s.held}" for s in stats]
    family("phalanx_router_requests_per_second", "gauge", "Arrivals per second over 10 s.")
    lines += [
        f"phalanx_router_requests_per_second{{{_labels(s)}}} {s.rate(now)[0]:.3f}" for s in stats
    ]
    family("phalanx_router_requests_total", "counter", "Requests answered, by status code.")
    for s in stats:
        for code, count in sorted(s.by_code.items()):
            lines.append(f"phalanx_router_requests_total{{{_labels(s, code=str(code))}}} {count}")
    family("phalanx_router_request_duration_seconds", "histogram", "Time to the response's end.")
    for s in stats:
        cumulative = 0
        for bound, count in zip((*BUCKETS, math.inf), s.latency_counts, strict=True):
            cumulative += count
            le = "+Inf" if bound == math.inf else f"{bound:g}"
            lines.append(
                f"phalanx_router_request_duration_seconds_bucket{{{_labels(s, le=le)}}}"
                f" {cumulative}"
            )
        lines.append(f"phalanx_router_request_duration_seconds_sum{{{_labels(s)}}} {s.latency_sum}")
        lines.append(f"phalanx_router_request_duration_seconds_count{{{_labels(s)}}} {s.total}")
    return "\n".join(lines) + "\n"
