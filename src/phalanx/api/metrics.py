"""``/metrics`` in Prometheus' text format (prometheus_client), read from the service.

Gauges are computed at scrape time from the controller's state; the scheduling-pass
histogram is fed from the durations the controller noted since the previous scrape.
"""

from __future__ import annotations

from collections.abc import Iterator

from prometheus_client import CollectorRegistry, Histogram, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from phalanx.api.service import Service

__all__ = ["Metrics"]

WINDOW_MS = 15 * 60 * 1000
"""The sliding window of eta_sched and theta_overhead."""


class _State(Collector):
    def __init__(self, service: Service) -> None:
        self.service = service

    def collect(self) -> Iterator[Metric]:
        svc = self.service
        pending = GaugeMetricFamily(
            "phalanx_pending_jobs", "Queue depth: pending jobs by reason", labels=["reason"]
        )
        by_reason = {"Priority": 0, "Resources": 0}  # always present, 0 when none
        running = completing = 0
        for (state, reason), n in svc.counts().items():
            if state == "PENDING":
                by_reason[reason] = by_reason.get(reason, 0) + n
            elif state == "RUNNING":
                running += n
            elif state == "COMPLETING":
                completing += n
        for reason, n in sorted(by_reason.items()):
            pending.add_metric([reason], n)
        yield pending
        yield GaugeMetricFamily("phalanx_running_jobs", "Jobs running", value=running)
        yield GaugeMetricFamily(
            "phalanx_completing_jobs", "Jobs in their epilog (COMPLETING)", value=completing
        )
        usage = svc.node_usage()
        yield GaugeMetricFamily(
            "phalanx_gpus_allocated", "GPUs allocated to jobs", value=sum(g for g, _ in usage)
        )
        yield GaugeMetricFamily(
            "phalanx_gpus_total", "GPUs in the cluster", value=svc.cluster.total_gpus
        )
        eta, theta = svc.efficiency(WINDOW_MS)
        yield GaugeMetricFamily(
            "phalanx_eta_sched", "Scheduling efficiency over the last 15 minutes", value=eta
        )
        yield GaugeMetricFamily(
            "phalanx_theta_overhead",
            "Overhead share of held GPU time, last 15 minutes",
            value=theta,
        )
        yield CounterMetricFamily(
            "phalanx_submissions",
            "Jobs submitted (array tasks each count)",
            value=svc.stats.submitted,
        )
        yield CounterMetricFamily(
            "phalanx_scheduling_passes", "Scheduling passes run", value=svc.stats.passes
        )


class Metrics:
    def __init__(self, service: Service) -> None:
        self.service = service
        self.registry = CollectorRegistry()
        self.registry.register(_State(service))
        self.pass_seconds = Histogram(
            "phalanx_scheduling_pass_seconds",
            "Duration of a batch of events that ran a scheduling pass",
            buckets=(0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0),
            registry=self.registry,
        )

    def render(self) -> bytes:
        durations = self.service.stats.durations
        for d in durations:
            self.pass_seconds.observe(d)
        durations.clear()
        return generate_latest(self.registry)
