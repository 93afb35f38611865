"""Request-rate series: the offered load of a service over time.

A series is piecewise constant: ``rate_at(t)`` is the rate of the last point at or before ``t``
(0 before the first). Two sources:

- ``diurnal``: the seeded generator. A day-shaped base
  ``mean x (1 + amplitude x cos(2 pi (hour - peak_hour) / 24))`` (the trough at night, the peak
  in the afternoon, as public serving traces show) times bursts: they arrive as a Poisson
  process of ``bursts_per_day``, each lasts a duration uniform in ``burst_minutes`` and
  multiplies the rate by ``burst_factor`` (a launch, a news spike, a batch client). One
  ``random.Random(seed)`` draws the bursts in time order, so one seed gives one series.
- ``read_rate_csv``: ``time_s,rps`` rows (a header line allowed), times increasing.
"""

from __future__ import annotations

import bisect
import csv
import itertools
import math
import random
from collections.abc import Sequence
from dataclasses import dataclass

from phalanx.domain.time import HOUR, MINUTE, SECOND, Duration, Instant
from phalanx.errors import ConfigError

__all__ = ["Diurnal", "RateSeries", "diurnal", "read_rate_csv"]


@dataclass(frozen=True, slots=True)
class RateSeries:
    times: tuple[Instant, ...]
    """Increasing instants (ms) at which the rate changes."""
    rates: tuple[float, ...]
    """Requests per second from the matching instant on."""
    end: Instant
    """When the series stops (the horizon of the service's load)."""

    def rate_at(self, at: Instant) -> float:
        index = bisect.bisect_right(self.times, at) - 1
        if index < 0 or at >= self.end:
            return 0.0
        return self.rates[index]

    @property
    def peak(self) -> float:
        return max(self.rates, default=0.0)


@dataclass(frozen=True, slots=True)
class Diurnal:
    """Parameters of the generator (see the module docstring)."""

    mean_rps: float
    days: float = 1.0
    amplitude: float = 0.6
    peak_hour: float = 14.0
    bursts_per_day: float = 2.0
    burst_factor: float = 2.0
    burst_minutes: tuple[float, float] = (10.0, 60.0)
    resolution: Duration = MINUTE
    seed: int = 0


def diurnal(params: Diurnal) -> RateSeries:
    """The seeded diurnal series with bursts, one point per ``resolution``."""
    end = round(params.days * 24 * HOUR)
    rng = random.Random(params.seed)
    bursts: list[tuple[Instant, Instant]] = []
    if params.bursts_per_day > 0:
        mean_gap = 24 * HOUR / params.bursts_per_day
        at = rng.expovariate(1.0 / mean_gap)
        while at < end:
            low, high = params.burst_minutes
            length = rng.uniform(low, high) * MINUTE
            bursts.append((round(at), round(at + length)))
            at += rng.expovariate(1.0 / mean_gap)
    times = list(range(0, end, params.resolution))
    rates = []
    for t in times:
        hour = t / HOUR
        base = params.mean_rps * (
            1.0 + params.amplitude * math.cos(2 * math.pi * (hour - params.peak_hour) / 24)
        )
        burst = any(start <= t < stop for start, stop in bursts)
        rates.append(max(0.0, base) * (params.burst_factor if burst else 1.0))
    return RateSeries(tuple(times), tuple(rates), end)


def read_rate_csv(path: str) -> RateSeries:
    """The ``time_s,rps`` rows of ``path``; the series ends one median step after its last
    row. Raises ``ConfigError`` naming the file, line and field of a bad row."""
    times: list[Instant] = []
    rates: list[float] = []
    with open(path, encoding="utf-8", newline="") as handle:
        for line, row in enumerate(csv.reader(handle), start=1):
            if not row or not "".join(row).strip() or row[0].lstrip().startswith("#"):
                continue
            if len(row) != 2:
                raise ConfigError(
                    f"expected 2 columns (time_s, rps), got {len(row)}", source=path, line=line
                )
            if line == 1 and not _is_number(row[0]):
                continue  # a header
            at = round(_number(row[0], path, line, "time_s") * SECOND)
            rate = _number(row[1], path, line, "rps")
            if at < 0 or rate < 0:
                field = "time_s" if at < 0 else "rps"
                raise ConfigError("must not be negative", source=path, line=line, field=field)
            if times and at <= times[-1]:
                raise ConfigError("times must increase", source=path, line=line, field="time_s")
            times.append(at)
            rates.append(rate)
    if not times:
        raise ConfigError("no rows", source=path)
    return RateSeries(tuple(times), tuple(rates), times[-1] + _median_step(times))


def _median_step(times: Sequence[Instant]) -> Duration:
    steps = sorted(b - a for a, b in itertools.pairwise(times))
    return steps[len(steps) // 2] if steps else MINUTE


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def _number(text: str, path: str, line: int, field: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise ConfigError(
            f"not a number: {text.strip()!r}", source=path, line=line, field=field
        ) from None
    if not math.isfinite(value):
        raise ConfigError(
            f"not a finite number: {text.strip()!r}", source=path, line=line, field=field
        )
    return value
