"""The serving port: what the dashboard's serving page shows, as plain values, and the
port it reads them through.

The REST API knows nothing of Kubernetes objects (the Kubernetes API is the layer above):
a controller that serves workloads hands the dashboard a ``ServingSource``
(``phalanx.kube.servingview`` reads the object store, the router's load and the
autoscalers' decisions); without one the page says that nothing is served.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

__all__ = ["Autoscaling", "Load", "ScaleDecision", "Served", "ServingSource"]


@dataclass(frozen=True, slots=True)
class Load:
    """The service router's figures for the Service in front of a workload."""

    service: str
    """The Service's name (same namespace as the workload)."""
    concurrency: float
    """Requests in flight, averaged over the router's window (held ones included)."""
    rps: float
    """Requests per second over the router's window."""
    held: int
    """Requests waiting for a ready endpoint (the demand at zero replicas)."""
    p50_s: float | None = None
    """Median latency over the router's latency window; None: no request ended in it."""
    p99_s: float | None = None
    window_s: int = 0
    """The window ``concurrency`` and ``rps`` cover (0: unknown)."""
    latency_window_s: int = 0


@dataclass(frozen=True, slots=True)
class Autoscaling:
    """The autoscaler in charge of a workload's scale, as configured and as it last saw it."""

    kind: str
    """``HorizontalPodAutoscaler`` or ``KPA`` (an InferenceService's Knative autoscaler)."""
    name: str
    """The HPA's or the InferenceService's name."""
    min_replicas: int
    max_replicas: int | None
    """None: no maximum (KPA's ``maxReplicas`` 0)."""
    metrics: tuple[str, ...]
    """One line per metric: its name, target and, where known, its current value."""
    last_scale_ms: int | None = None
    """The HPA's ``status.lastScaleTime`` or the KPA's last change, ms since the epoch."""


@dataclass(frozen=True, slots=True)
class Served:
    """One Deployment (an InferenceService's predictor is one too): its replicas, the load
    on its Service and its autoscaler."""

    namespace: str
    name: str
    owner: str
    """``Kind/name`` of the object that made it (``InferenceService/sklearn``), or ""."""
    desired: int
    """``spec.replicas``."""
    current: int
    """``status.replicas``: pods of the Deployment, whatever their state."""
    ready: int
    """``status.readyReplicas``."""
    load: Load | None = None
    """None: no Service selects its pods, or the router has not answered lately."""
    autoscaling: Autoscaling | None = None

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"


@dataclass(frozen=True, slots=True)
class ScaleDecision:
    """A scale an autoscaler wrote: when, whose, from and to, and why."""

    at_ms: int
    autoscaler: str
    """``HorizontalPodAutoscaler`` or ``KPA``."""
    namespace: str
    name: str
    """The autoscaler's object (the HPA, or the InferenceService)."""
    target: str
    """``Deployment/NAME`` scaled."""
    from_replicas: int
    to_replicas: int
    reason: str
    """As the autoscaler says it (the HPA's ``SuccessfulRescale`` reason; the KPA's observed
    value against its target, and whether it panicked)."""


class ServingSource(Protocol):
    """Where the dashboard reads serving workloads. Called on the controller's event loop;
    each call reads current state and must be cheap (one pass over the objects)."""

    def served(self) -> Sequence[Served]:
        """Every Deployment, by namespace and name."""
        ...

    def decisions(self) -> Sequence[ScaleDecision]:
        """The autoscalers' recent scale decisions, newest first (a bounded number)."""
        ...
