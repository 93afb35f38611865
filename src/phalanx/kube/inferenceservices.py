"""KServe InferenceServices carried out against the object store, on the autoscalers' tick:
each one's predictor Deployment and Service kept as ``phalanx.workloads.inferenceservice``
makes them, its scale set by Knative's autoscaler (``phalanx.workloads.kpa``) every 2 s from
the router's load on the Service, and its status written.

The observed value is the Service's requests in flight (``concurrency``) or per second
(``rps``), the requests the router holds for want of a ready endpoint included: with no replica
that demand alone asks for one (scale from zero), as Knative's activator reports the requests
it buffers. A Deployment is created at 1 replica, or ``minReplicas`` if more (Knative's initial
scale), then follows the autoscaler.
"""

from __future__ import annotations

import hashlib
import json
import logging
from typing import Any

from phalanx.api.serving import ScaleDecision
from phalanx.domain.time import Instant
from phalanx.errors import InputError
from phalanx.kube.autoscalers import MetricsSource, Store, pod_sample
from phalanx.kube.errors import KubeError
from phalanx.kube.scalelog import ScaleLog
from phalanx.workloads import inferenceservice as isvc
from phalanx.workloads.conditions import set_condition
from phalanx.workloads.events import event
from phalanx.workloads.kpa import (
    RPS,
    KpaConfig,
    KpaState,
    Recommendation,
    desired_pods,
    record,
    target_per_pod,
)

__all__ = ["INFERENCE_SERVICES", "InferenceServices"]

log = logging.getLogger("phalanx.kube.inferenceservices")

Resource = tuple[str, str]
Obj = dict[str, Any]
INFERENCE_SERVICES: Resource = ("serving.kserve.io", "inferenceservices")
DEPLOYMENTS: Resource = ("apps", "deployments")
SERVICES: Resource = ("", "services")
PODS: Resource = ("", "pods")
COMPONENT = "kserve-controller-manager"
TEMPLATE_HASH = "phalanx.io/predictor-template"
"""On the predictor's Deployment: a digest of the pod template the InferenceService asked
for when it was last written."""


def _digest(value: Any) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True).encode()).hexdigest()[:16]


class InferenceServices:
    """``tick(now)`` (as often as the driver likes) acts every ``config.tick``."""

    def __init__(
        self,
        store: Store,
        metrics: MetricsSource,
        config: KpaConfig | None = None,
        scale_log: ScaleLog | None = None,
    ) -> None:
        self.store = store
        self.metrics = metrics
        self.config = config or KpaConfig()
        self.scale_log = scale_log if scale_log is not None else ScaleLog()
        """The scales written, for the dashboard."""
        self._states: dict[str, KpaState] = {}
        """InferenceService uid -> the autoscaler's memory of it."""
        self._next: Instant | None = None

    def tick(self, now: Instant) -> None:
        if self._next is not None and now < self._next:
            return
        self._next = now + self.config.tick
        live = set()
        for obj in self.store.list(INFERENCE_SERVICES):
            uid = str(obj["metadata"].get("uid", ""))
            live.add(uid)
            try:
                self.sync(obj, self._states.setdefault(uid, KpaState()), now)
            except KubeError as e:  # a conflicting write: the next tick tries again
                log.info("inferenceservice %s: %s", obj["metadata"].get("name"), e)
        for gone in set(self._states) - live:
            del self._states[gone]

    def sync(self, obj: Obj, state: KpaState, now: Instant) -> None:
        meta = obj["metadata"]
        namespace = str(meta.get("namespace", "default"))
        try:
            spec = isvc.parse_isvc(obj)
        except InputError as e:
            self._invalid(obj, str(e), now)
            return
        name = isvc.predictor_name(str(meta["name"]))
        dep = self._deployment(obj, spec, namespace, name)
        svc = self._service(obj, spec, namespace, name)
        pods = self.store.list(PODS, namespace, {"app": f"isvc.{name}"})
        ready = sum(
            1 for p in map(pod_sample, pods) if p.phase == "Running" and p.ready and not p.deleting
        )
        current = int(dep["spec"].get("replicas", 1))
        load = self.metrics.service_load(namespace, name)
        if load is not None:
            # Held requests are in flight (and arrived): with no replica they alone ask for one.
            value = load.rps if spec.scaling.metric == RPS else load.in_flight
            record(state, now, value, self.config)
        rec = desired_pods(spec.scaling, self.config, state, ready, current, now)
        if rec.desired >= 0 and rec.desired != current:
            dep["spec"]["replicas"] = rec.desired
            self.store.update(dep)
            self.scale_log.add(
                ScaleDecision(
                    now,
                    "KPA",
                    namespace,
                    str(meta["name"]),
                    f"Deployment/{name}",
                    current,
                    rec.desired,
                    self._why(spec, rec),
                )
            )
            current = rec.desired
        cluster_ip = (svc.get("spec") or {}).get("clusterIP")
        cluster_ip = cluster_ip if cluster_ip and cluster_ip != "None" else None
        new = isvc.status(obj, ready, current, cluster_ip, now)
        self._write(obj, new)

    def _why(self, spec: isvc.IsvcSpec, rec: Recommendation) -> str:
        """The observed values against the target per pod, as Knative's autoscaler logs them."""
        metric = spec.scaling.metric
        target = target_per_pod(spec.scaling, self.config)
        mode = "panic" if rec.panicking else "stable"
        return (
            f"{mode} mode: {metric} {rec.stable_value:.2f} over the stable window, "
            f"{rec.panic_value:.2f} over the panic window; target {target:.2f} per pod"
        )

    def _deployment(self, obj: Obj, spec: isvc.IsvcSpec, namespace: str, name: str) -> Obj:
        found = self.store.get(DEPLOYMENTS, namespace, name)
        want = isvc.deployment(obj, spec, max(1, spec.scaling.min_scale))
        # The API server defaults what we write (image pull policy, ...): compare what we
        # made last time, not the stored template, or every tick would roll the pods.
        made = _digest(want["spec"]["template"])
        want["metadata"]["annotations"] = {TEMPLATE_HASH: made}
        if found is None:
            return self.store.create(want)
        notes = found["metadata"].get("annotations") or {}
        if notes.get(TEMPLATE_HASH) != made:
            found["spec"]["template"] = want["spec"]["template"]
            found["spec"]["selector"] = want["spec"]["selector"]
            found["metadata"]["annotations"] = {**notes, TEMPLATE_HASH: made}
            return self.store.update(found)
        return found

    def _service(self, obj: Obj, spec: isvc.IsvcSpec, namespace: str, name: str) -> Obj:
        found = self.store.get(SERVICES, namespace, name)
        want = isvc.service(obj, spec)
        if found is None:
            return self.store.create(want)
        spec_now = found.get("spec") or {}
        if [(p.get("port"), p.get("targetPort")) for p in spec_now.get("ports") or []] != [
            (p["port"], p["targetPort"]) for p in want["spec"]["ports"]
        ] or spec_now.get("selector") != want["spec"]["selector"]:
            spec_now.update(ports=want["spec"]["ports"], selector=want["spec"]["selector"])
            found["spec"] = spec_now
            return self.store.update(found)
        return found

    def _invalid(self, obj: Obj, message: str, now: Instant) -> None:
        status = dict(obj.get("status") or {})
        conditions = [dict(c) for c in status.get("conditions") or []]
        before = [dict(c) for c in conditions]
        set_condition(conditions, "Ready", False, "InvalidSpec", message, now)
        for c in conditions:
            c.pop("lastProbeTime", None)
        if conditions != before:
            warning = event(obj, "InternalError", message, now, warning=True, component=COMPONENT)
            try:
                self.store.create(warning)
            except KubeError as e:
                log.debug("event: %s", e)
        status["conditions"] = conditions
        self._write(obj, status)

    def _write(self, obj: Obj, status: dict[str, Any]) -> None:
        if status != obj.get("status"):
            obj["status"] = status
            self.store.update_status(obj)
