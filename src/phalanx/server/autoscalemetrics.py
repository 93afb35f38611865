"""The autoscalers' ``MetricsSource`` in a live controller: pods' CPU from the node agents'
container reports (read through ``cpu``, the workload runner's ``pod_container``), and the
Services' load from the service router's admin endpoint (``GET /services?window=S``, see
``phalanx.router``), whose port the router writes to ``router.port`` in the state directory.

The router is polled by ``refresh()`` (every tick, on the loop); the autoscalers read the last
answer. An answer older than ``STALE_MS`` (the router stopped) counts as none: the
autoscalers then keep the scale, as they do without metrics.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx

from phalanx.domain.time import SECOND, Duration, Instant
from phalanx.kube.autoscalers import ServiceLoad
from phalanx.workloads.hpa_metrics import Sample

__all__ = ["CPU_WINDOW", "RouterMetrics", "parse_services"]

log = logging.getLogger("phalanx.autoscale.metrics")

CPU_WINDOW: Duration = 10 * SECOND
"""The window an agent's CPU figure covers (its report interval), as metrics-server's
samples carry theirs."""
STALE_MS: Duration = 10 * SECOND
WINDOW_S = 2
"""The router's averaging window asked for: one autoscaler tick."""


def _seconds(value: Any) -> float | None:
    return None if value is None else float(value)


def parse_services(body: Any) -> dict[tuple[str, str], ServiceLoad]:
    """The router's ``/services`` answer as loads by (namespace, name); malformed entries are
    skipped (the router is another process, possibly of another version)."""
    out: dict[tuple[str, str], ServiceLoad] = {}
    services = body.get("services") if isinstance(body, dict) else None
    for s in services if isinstance(services, list) else []:
        if not isinstance(s, dict):
            continue
        try:
            key = (str(s["namespace"]), str(s["name"]))
            # average_concurrency: time-averaged over the window, Knative's measure; the
            # requests held are part of it (the router counts them in flight).
            load = ServiceLoad(
                in_flight=float(s.get("average_concurrency", s.get("in_flight", 0)) or 0),
                rps=float(s.get("requests_per_second", 0) or 0),
                held=int(s.get("held", 0) or 0),
                window_s=int(s.get("window_seconds", 0) or 0),
                p50_s=_seconds(s.get("latency_p50_seconds")),
                p99_s=_seconds(s.get("latency_p99_seconds")),
                latency_window_s=int(s.get("latency_window_seconds", 0) or 0),
            )
        except (KeyError, TypeError, ValueError):
            continue
        # Demand held at zero must show even when the window's average rounds it away.
        if load.held and load.in_flight < load.held:
            load = dataclasses.replace(load, in_flight=float(load.held))
        out[key] = load
    return out


class RouterMetrics:
    """A ``MetricsSource`` over the agents' CPU reports and the router's admin endpoint."""

    def __init__(
        self,
        clock: Callable[[], Instant],
        state_dir: Path,
        cpu: Callable[[str, str], int | None] | None = None,
    ) -> None:
        self.clock = clock
        self.port_file = state_dir / "router.port"
        self.cpu = cpu
        self._loads: dict[tuple[str, str], ServiceLoad] = {}
        self._at: Instant | None = None
        self._client: httpx.AsyncClient | None = None

    def pod_cpu(self, namespace: str, pod: str) -> Sample | None:
        if self.cpu is None:
            return None
        used = self.cpu(namespace, pod)
        return None if used is None else Sample(used, self.clock(), CPU_WINDOW)

    def service_load(self, namespace: str, service: str) -> ServiceLoad | None:
        if self._at is None or self.clock() - self._at > STALE_MS:
            return None
        # A Service the router serves but has seen no request for is idle, not unknown.
        return self._loads.get((namespace, service), ServiceLoad(0.0, 0.0, 0))

    def pod_load(self, namespace: str, pod: str) -> ServiceLoad | None:
        return None  # the router reports per Service only

    async def refresh(self) -> None:
        """Poll the router once (nothing when it is not running)."""
        try:
            port = int(self.port_file.read_text().strip())
        except (OSError, ValueError):
            return
        if self._client is None:
            self._client = httpx.AsyncClient(timeout=1.0)
        try:
            answer = await self._client.get(
                f"http://127.0.0.1:{port}/services", params={"window": WINDOW_S}
            )
            answer.raise_for_status()
            self._loads = parse_services(answer.json())
            self._at = self.clock()
        except (httpx.HTTPError, ValueError) as e:
            log.debug("router metrics: %s", e)

    async def close(self) -> None:
        if self._client is not None:
            await self._client.aclose()
