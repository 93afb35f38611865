"""The serving workload description (YAML) that ``phalanx simulate-serving --serving FILE``
reads::

    sync_seconds: 15              # the autoscaler's period and the metrics' step (HPA: 15 s)
    services:
      - name: chat
        gpus: 4                   # GPUs per replica (one task on one node)
        capacity_rps: 20          # requests/s one replica serves within the SLO
        slo_ms: 500               # latency target...
        slo_percentile: 0.99      # ...met by this share of requests at capacity (default 0.99)
        min_replicas: 2
        max_replicas: 48
        target_utilization: 0.7   # the autoscaler's target, of capacity (default 0.7)
        priority_class: high      # the replicas' QOS / PriorityClass (default high)
        startup_seconds: 120      # from the replica's start until it serves (model load)
        load:                     # one of generator and csv
          generator: {mean_rps: 300, days: 3, amplitude: 0.6, peak_hour: 14,
                      bursts_per_day: 2, burst_factor: 2.0, burst_minutes: [10, 60], seed: 0}
          # csv: rates.csv        # time_s,rps rows; a relative path is next to this file

Every error names the file, line and field (``services[0].capacity_rps``).
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass

from phalanx.config.yamlfield import YamlField, compose_yaml, optional
from phalanx.domain.time import SECOND, Duration, Instant
from phalanx.sim.serving.latency import LatencyModel
from phalanx.sim.serving.load import Diurnal, RateSeries, diurnal, read_rate_csv
from phalanx.sim.serving.scaler import HpaScaler

__all__ = ["ServiceSpec", "ServingSpec", "read_serving", "read_serving_text"]

_SERVICE_KEYS = (
    "name",
    "gpus",
    "capacity_rps",
    "slo_ms",
    "slo_percentile",
    "min_replicas",
    "max_replicas",
    "target_utilization",
    "priority_class",
    "startup_seconds",
    "load",
)
_GENERATOR_KEYS = (
    "mean_rps",
    "days",
    "amplitude",
    "peak_hour",
    "bursts_per_day",
    "burst_factor",
    "burst_minutes",
    "seed",
)


@dataclass(frozen=True, slots=True)
class ServiceSpec:
    name: str
    gpus: int
    latency: LatencyModel
    min_replicas: int
    max_replicas: int
    target_utilization: float
    priority_class: str
    startup: Duration
    load: RateSeries

    def scaler(self) -> HpaScaler:
        """A fresh default autoscaler for this service (it keeps state: one per run)."""
        return HpaScaler(
            target_utilization=self.target_utilization,
            min_replicas=self.min_replicas,
            max_replicas=self.max_replicas,
        )

    def replicas_for(self, rps: float) -> int:
        """Replicas the autoscaler settles on for ``rps`` (clamped to [min, max])."""
        wanted = math.ceil(rps / (self.latency.capacity_rps * self.target_utilization))
        return max(self.min_replicas, min(self.max_replicas, wanted))


@dataclass(frozen=True, slots=True)
class ServingSpec:
    services: tuple[ServiceSpec, ...]
    sync: Duration = 15 * SECOND

    @property
    def horizon(self) -> Instant:
        """When the last service's load ends."""
        return max((s.load.end for s in self.services), default=0)

    def peak_gpus(self) -> int:
        """GPUs the services hold at their peaks (each sized by ``replicas_for``)."""
        return sum(s.gpus * s.replicas_for(s.load.peak) for s in self.services)


def read_serving(path: str) -> ServingSpec:
    with open(path, encoding="utf-8") as handle:
        return read_serving_text(handle.read(), path)


def read_serving_text(text: str, source: str) -> ServingSpec:
    """Raises ``ConfigError`` naming ``source``, the line and the field of any bad value."""
    top = compose_yaml(text, source).mapping(("sync_seconds", "services"), ("services",))
    sync = optional(top, "sync_seconds", lambda f: _number(f, low=0.001), 15.0)
    items = top["services"].sequence()
    if not items:
        raise top["services"].error("at least one service is needed")
    services: list[ServiceSpec] = []
    for item in items:
        service = _service(item, os.path.dirname(source))
        if any(s.name == service.name for s in services):
            raise item.error(f"duplicate service name {service.name!r}")
        services.append(service)
    return ServingSpec(tuple(services), round(sync * SECOND))


def _service(item: YamlField, base: str) -> ServiceSpec:
    spec = item.mapping(
        _SERVICE_KEYS,
        ("name", "gpus", "capacity_rps", "slo_ms", "min_replicas", "max_replicas", "load"),
    )
    low = spec["min_replicas"].as_int(1)
    high = spec["max_replicas"].as_int(1)
    if high < low:
        raise spec["max_replicas"].error(f"must be >= min_replicas ({low}), got {high}")
    percentile = optional(spec, "slo_percentile", _number, 0.99)
    if not 0 < percentile < 1:
        raise spec["slo_percentile"].error(f"must be in (0, 1), got {percentile:g}")
    target = optional(spec, "target_utilization", _number, 0.7)
    if not 0 < target <= 1:
        raise spec["target_utilization"].error(f"must be in (0, 1], got {target:g}")
    return ServiceSpec(
        name=spec["name"].as_str(),
        gpus=spec["gpus"].as_int(1),
        latency=LatencyModel(
            _number(spec["capacity_rps"], low=1e-9),
            _number(spec["slo_ms"], low=1e-9) / 1000.0,
            percentile,
        ),
        min_replicas=low,
        max_replicas=high,
        target_utilization=target,
        priority_class=optional(spec, "priority_class", YamlField.as_str, "high"),
        startup=round(optional(spec, "startup_seconds", _number, 60.0) * SECOND),
        load=_load(spec["load"], base),
    )


def _load(field: YamlField, base: str) -> RateSeries:
    spec = field.mapping(("generator", "csv"))
    if len(spec) != 1:
        raise field.error("give exactly one of 'generator' and 'csv'")
    if "csv" in spec:
        path = spec["csv"].as_str()
        return read_rate_csv(path if os.path.isabs(path) else os.path.join(base, path))
    gen = spec["generator"].mapping(_GENERATOR_KEYS, ("mean_rps",))
    minutes = optional(gen, "burst_minutes", _pair, (10.0, 60.0))
    peak = optional(gen, "peak_hour", _number, 14.0)
    if not 0 <= peak < 24:
        raise gen["peak_hour"].error(f"must be in [0, 24), got {peak:g}")
    amplitude = optional(gen, "amplitude", _number, 0.6)
    if amplitude > 1:
        raise gen["amplitude"].error(f"must be in [0, 1], got {amplitude:g}")
    return diurnal(
        Diurnal(
            mean_rps=_number(gen["mean_rps"], low=1e-9),
            days=optional(gen, "days", lambda f: _number(f, low=1e-9), 1.0),
            amplitude=amplitude,
            peak_hour=peak,
            bursts_per_day=optional(gen, "bursts_per_day", _number, 2.0),
            burst_factor=optional(gen, "burst_factor", lambda f: _number(f, low=1.0), 2.0),
            burst_minutes=minutes,
            seed=optional(gen, "seed", lambda f: f.as_int(-(2**63)), 0),
        )
    )


def _pair(field: YamlField) -> tuple[float, float]:
    items = field.sequence()
    if len(items) != 2:
        raise field.error(f"expected [low, high], got {len(items)} values")
    low, high = _number(items[0], low=1e-9), _number(items[1], low=1e-9)
    if high < low:
        raise field.error(f"expected low <= high, got [{low:g}, {high:g}]")
    return low, high


def _number(field: YamlField, low: float = 0.0) -> float:
    """A finite number >= ``low`` (an integer is one too)."""
    text = field.text()
    try:
        value = float(text)
    except ValueError:
        raise field.error(f"expected a number, got {field.kind()}") from None
    if not math.isfinite(value):
        raise field.error(f"expected a finite number, got {text!r}")
    if value < low:
        raise field.error(f"must be >= {low:g}, got {value:g}")
    return value
