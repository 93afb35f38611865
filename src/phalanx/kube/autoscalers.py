"""The autoscalers carried out against the object store: the HorizontalPodAutoscaler
controller every ``--horizontal-pod-autoscaler-sync-period`` (15 s) and Knative's autoscaler
for InferenceServices every tick (2 s).

Metrics come through one port, ``MetricsSource`` (the node agents' CPU reports per pod, the
router's load per Service and per pod); the decisions are the pure functions of
``phalanx.workloads.hpa`` and ``phalanx.workloads.kpa``; the scale is written as the scale
subresource writes it (the target's ``spec.replicas``), and the Deployment's reconciler
makes the pods.

Metric names served to an HPA (``phalanx.workloads.hpa_spec``): ``cpu`` (Resource), and the
router's ``requests_in_flight`` and ``requests_per_second`` as Pods metrics (per pod) or as
Object metrics describing the Service (its total).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from phalanx.api.serving import ScaleDecision
from phalanx.domain.quantity import parse_quantity
from phalanx.domain.time import SECOND, Duration, Instant
from phalanx.errors import InputError
from phalanx.kube.errors import KubeError
from phalanx.kube.scalelog import ScaleLog
from phalanx.workloads.conditions import condition, set_condition
from phalanx.workloads.events import event
from phalanx.workloads.hpa import COMPONENT, Decision, Memory, decide
from phalanx.workloads.hpa_metrics import Observation, PodSample, Sample
from phalanx.workloads.hpa_spec import IN_FLIGHT, REQUESTS_PER_SECOND, HpaSpec, parse_hpa
from phalanx.workloads.timestamps import parse_time

__all__ = [
    "HPAS",
    "HPA_SYNC",
    "SCALABLE",
    "Autoscalers",
    "MetricsSource",
    "NoMetrics",
    "ServiceLoad",
    "Store",
    "pod_sample",
]

log = logging.getLogger("phalanx.kube.autoscalers")

Resource = tuple[str, str]
Obj = dict[str, Any]
HPAS: Resource = ("autoscaling", "horizontalpodautoscalers")
PODS: Resource = ("", "pods")
EVENTS: Resource = ("", "events")
_EVENTS_KEPT = 10_000
"""Repeats are looked up among this many recent events at most."""
SCALABLE: dict[str, Resource] = {
    "Deployment": ("apps", "deployments"),
    "ReplicaSet": ("apps", "replicasets"),
}
"""The kinds an HPA can scale here (those with a scale subresource)."""
HPA_SYNC: Duration = 15 * SECOND
"""``--horizontal-pod-autoscaler-sync-period``."""


class Store(Protocol):
    """The object store as the autoscalers use it (``phalanx.kube.store.ObjectStore``)."""

    def get(self, resource: Resource, namespace: str | None, name: str) -> Obj | None: ...

    def list(
        self,
        resource: Resource,
        namespace: str | None = None,
        labels: Mapping[str, str] | None = None,
    ) -> list[Obj]: ...

    def create(self, obj: Obj) -> Obj: ...

    def update(self, obj: Obj) -> Obj: ...

    def update_status(self, obj: Obj) -> Obj: ...


@dataclass(frozen=True)
class ServiceLoad:
    """The router's view of a Service (or of one pod behind it) now."""

    in_flight: float
    """Requests in flight, those held included (as the router counts them)."""
    rps: float
    """Requests per second over the router's sliding window."""
    held: int = 0
    """Requests held for want of a ready endpoint (the demand that scales from zero)."""
    window_s: int = 0
    """The window ``in_flight`` and ``rps`` cover (0: not said)."""
    p50_s: float | None = None
    """Median latency of the requests that ended lately (the dashboard shows it); None:
    none did, or the router did not say."""
    p99_s: float | None = None
    latency_window_s: int = 0


class MetricsSource(Protocol):
    """Where the autoscalers read metrics. Each method answers None when it knows nothing
    (yet) of what is asked: the autoscaler then treats the sample as missing."""

    def pod_cpu(self, namespace: str, pod: str) -> Sample | None:
        """The pod's CPU usage in millicores, when it was measured and over what window."""

    def service_load(self, namespace: str, service: str) -> ServiceLoad | None:
        """The router's load on Service ``service``."""

    def pod_load(self, namespace: str, pod: str) -> ServiceLoad | None:
        """The router's load on one pod (as an endpoint)."""


class NoMetrics:
    """A ``MetricsSource`` that knows nothing (no agent or router reports yet)."""

    def pod_cpu(self, namespace: str, pod: str) -> Sample | None:
        return None

    def service_load(self, namespace: str, service: str) -> ServiceLoad | None:
        return None

    def pod_load(self, namespace: str, pod: str) -> ServiceLoad | None:
        return None


def _cpu_request(pod: Mapping[str, Any]) -> int:
    total = 0
    for c in (pod.get("spec") or {}).get("containers") or []:
        resources = (c or {}).get("resources") or {}
        value = (resources.get("requests") or {}).get("cpu") or (resources.get("limits") or {}).get(
            "cpu"
        )
        if value is None:
            return 0  # upstream: a container without a request makes the pod's unusable
        try:
            total += parse_quantity(str(value))
        except InputError:
            return 0
    return total


def pod_sample(pod: Mapping[str, Any]) -> PodSample:
    """What the HPA's calculator needs of a pod object."""
    meta = pod.get("metadata") or {}
    status = pod.get("status") or {}
    ready = condition(status.get("conditions") or [], "Ready")
    phase = str(status.get("phase") or "Pending")
    if ready is None and phase == "Running":
        # Until the agents report readiness: a running pod without the condition is ready,
        # Kubernetes' rule for pods without a readiness probe.
        is_ready: bool | None = True
        changed = parse_time(status.get("startTime"))
    else:
        is_ready = None if ready is None else ready.get("status") == "True"
        changed = parse_time(ready.get("lastTransitionTime")) if ready else None
    return PodSample(
        name=str(meta.get("name", "")),
        phase=phase,
        deleting=bool(meta.get("deletionTimestamp")),
        ready=is_ready,
        ready_changed=changed,
        started=parse_time(status.get("startTime")),
        cpu_request=_cpu_request(pod),
    )


class Autoscalers:
    """``tick(now)`` from the driver (every second or so) runs what is due."""

    def __init__(
        self,
        store: Store,
        metrics: MetricsSource,
        *,
        hpa_sync: Duration = HPA_SYNC,
        downscale_stabilization_s: int = 300,
    ) -> None:
        self.store = store
        self.metrics = metrics
        self.hpa_sync = hpa_sync
        self.downscale_stabilization_s = downscale_stabilization_s
        self._memory: dict[str, Memory] = {}
        """HPA uid -> its recommendations and scale events (in process, as upstream)."""
        self._next_hpa: Instant | None = None
        self._events: dict[tuple[str, str, str], str] = {}
        """(object uid, reason, message) -> the Event recorded for them."""
        self.hooks: list[Callable[[Instant], None]] = []
        """Further periodic work run on each tick (the InferenceService autoscaler)."""
        self.scale_log = ScaleLog()
        """The scales written, for the dashboard (the InferenceService autoscaler's too)."""

    def tick(self, now: Instant) -> None:
        if self._next_hpa is None or now >= self._next_hpa:
            self._next_hpa = now + self.hpa_sync
            self.sync_hpas(now)
        for hook in self.hooks:
            hook(now)

    def sync_hpas(self, now: Instant) -> None:
        """One sync of every HPA."""
        live = set()
        for hpa in self.store.list(HPAS):
            uid = str(hpa["metadata"].get("uid", ""))
            live.add(uid)
            try:
                self.sync_hpa(hpa, self._memory.setdefault(uid, Memory()), now)
            except KubeError as e:  # a conflicting write: the next sync tries again
                log.info("hpa %s: %s", hpa["metadata"].get("name"), e)
        for gone in set(self._memory) - live:
            del self._memory[gone]

    def sync_hpa(self, hpa: Obj, memory: Memory, now: Instant) -> Decision | None:
        meta = hpa["metadata"]
        namespace = str(meta.get("namespace", "default"))
        try:
            spec = parse_hpa(hpa, downscale_stabilization_s=self.downscale_stabilization_s)
        except InputError as e:
            self._failed(hpa, "ScalingActive", "InvalidSpec", str(e), now)
            return None
        resource = SCALABLE.get(spec.target.kind)
        target = (
            self.store.get(resource, namespace, spec.target.name) if resource is not None else None
        )
        if target is None:
            message = (
                "the HPA controller was unable to get the target's current scale: "
                f'{spec.target.kind.lower()}s "{spec.target.name}" not found'
            )
            self._failed(hpa, "AbleToScale", "FailedGetScale", message, now)
            return None
        current = (target.get("spec") or {}).get("replicas", 1)
        seen = self._observe(namespace, target, spec)
        decision = decide(hpa, spec, int(current), seen, memory, now)
        if decision.rescale:
            target["spec"]["replicas"] = decision.desired
            self.store.update(target)
            self.scale_log.add(
                ScaleDecision(
                    now,
                    "HorizontalPodAutoscaler",
                    namespace,
                    str(meta.get("name", "")),
                    f"{spec.target.kind}/{spec.target.name}",
                    int(current),
                    decision.desired,
                    decision.reason,
                )
            )
        self._write(hpa, decision.status, decision.events)
        return decision

    def _observe(self, namespace: str, target: Obj, spec: HpaSpec) -> Observation:
        selector = ((target.get("spec") or {}).get("selector") or {}).get("matchLabels") or {}
        pods = self.store.list(PODS, namespace, selector) if selector else []
        samples = tuple(pod_sample(p) for p in pods)
        wanted = {m.name for m in spec.metrics}
        per_pod: dict[str, dict[str, Sample]] = {}
        if "cpu" in wanted:
            per_pod["cpu"] = {}
            for s in samples:
                cpu = self.metrics.pod_cpu(namespace, s.name)
                if cpu is not None:
                    per_pod["cpu"][s.name] = cpu
        routed = wanted & {IN_FLIGHT, REQUESTS_PER_SECOND}
        if any(m.type == "Pods" for m in spec.metrics) and routed:
            per_pod.update({name: {} for name in routed})
            for s in samples:
                load = self.metrics.pod_load(namespace, s.name)
                if load is not None:
                    per_pod[IN_FLIGHT][s.name] = Sample(round(load.in_flight * 1000))
                    per_pod[REQUESTS_PER_SECOND][s.name] = Sample(round(load.rps * 1000))
        objects: dict[tuple[str, str, str], int] = {}
        for m in spec.metrics:
            if m.type == "Object" and m.described is not None:
                load = self.metrics.service_load(namespace, m.described.name)
                if load is not None:
                    value = load.in_flight if m.name == IN_FLIGHT else load.rps
                    objects[(m.described.kind, m.described.name, m.name)] = round(value * 1000)
        return Observation(samples, {k: v for k, v in per_pod.items() if k in wanted}, objects)

    def _failed(self, hpa: Obj, kind: str, reason: str, message: str, now: Instant) -> None:
        status = dict(hpa.get("status") or {})
        conditions = [dict(c) for c in status.get("conditions") or []]
        set_condition(conditions, kind, False, reason, message, now)
        for c in conditions:
            c.pop("lastProbeTime", None)
        status["conditions"] = conditions
        status.setdefault("currentReplicas", 0)
        status.setdefault("desiredReplicas", 0)
        warning = event(hpa, reason, message, now, warning=True, component=COMPONENT)
        self._write(hpa, status, [warning])

    def _write(self, hpa: Obj, status: dict[str, Any], events: list[Obj]) -> None:
        if status != hpa.get("status"):
            hpa["status"] = status
            self.store.update_status(hpa)
        for e in events:
            self._event(e)

    def _event(self, e: Obj) -> None:
        """Record ``e``; a repeat of one already recorded (same object, reason and message)
        counts on that one, as the event recorder aggregates them (``(x3 over 45s)``)."""
        ref = e["involvedObject"]
        key = (str(ref.get("uid", "")), str(e["reason"]), str(e["message"]))
        known = self._events.get(key)
        before = self.store.get(EVENTS, ref["namespace"], known) if known else None
        try:
            if before is not None:
                before["count"] = int(before.get("count") or 1) + 1
                before["lastTimestamp"] = e["lastTimestamp"]
                self.store.update(before)
                return
            if len(self._events) > _EVENTS_KEPT:
                self._events.clear()
            self._events[key] = self.store.create(e)["metadata"]["name"]
        except KubeError as err:  # a same-millisecond twin: one is enough
            log.debug("event %s: %s", e["metadata"]["name"], err)
