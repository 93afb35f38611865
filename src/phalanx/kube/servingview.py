"""The dashboard's ``ServingSource`` over the object store: every Deployment with its
replicas, the router's load on the Service that selects its pods, and the autoscaler in
charge of its scale (an HPA whose ``scaleTargetRef`` names it, or the Knative autoscaler of
the InferenceService that owns it); and the autoscalers' recent decisions (``ScaleLog``).

Read-only, and one pass over Deployments, Services, HPAs and InferenceServices per call.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from phalanx.api.serving import Autoscaling, Load, ScaleDecision, Served
from phalanx.errors import InputError
from phalanx.kube.autoscalers import HPAS, MetricsSource, Store
from phalanx.kube.inferenceservices import DEPLOYMENTS, INFERENCE_SERVICES, SERVICES
from phalanx.kube.scalelog import ScaleLog
from phalanx.workloads.inferenceservice import parse_isvc
from phalanx.workloads.kpa import KpaConfig, target_per_pod
from phalanx.workloads.timestamps import parse_time

__all__ = ["ServingView", "metric_lines"]

Obj = dict[str, Any]
Key = tuple[str, str]


def _meta(obj: Mapping[str, Any]) -> tuple[str, str]:
    meta = obj.get("metadata") or {}
    return str(meta.get("namespace", "default")), str(meta.get("name", ""))


def _amount(body: Mapping[str, Any]) -> str:
    """A MetricTarget's or MetricValueStatus's figure as ``kubectl describe hpa`` shows it."""
    if body.get("averageUtilization") is not None:
        return f"{body['averageUtilization']}%"
    for key in ("averageValue", "value"):
        if body.get(key) is not None:
            return str(body[key])
    return "<unknown>"


def _metric_name(m: Mapping[str, Any]) -> str:
    kind = str(m.get("type", ""))
    body = m.get(kind[:1].lower() + kind[1:]) or {}
    if kind in ("Resource", "ContainerResource"):
        return str(body.get("name", ""))
    name = str((body.get("metric") or {}).get("name", ""))
    described = body.get("describedObject") or {}
    if kind == "Object" and described:
        return f"{name} on {described.get('kind', '')}/{described.get('name', '')}"
    return name


def metric_lines(hpa: Mapping[str, Any]) -> tuple[str, ...]:
    """Each of an ``autoscaling/v2`` HPA's metrics: ``name current / target``, the current
    value from ``status.currentMetrics`` (same order as ``spec.metrics``) where known."""
    spec = hpa.get("spec") or {}
    current = (hpa.get("status") or {}).get("currentMetrics") or []
    out = []
    for i, m in enumerate(spec.get("metrics") or []):
        kind = str(m.get("type", ""))
        body = m.get(kind[:1].lower() + kind[1:]) or {}
        target = _amount(body.get("target") or {})
        now = "<unknown>"
        if i < len(current):
            seen = current[i] or {}
            now = _amount((seen.get(kind[:1].lower() + kind[1:]) or {}).get("current") or {})
        out.append(f"{_metric_name(m)} {now} / {target}")
    return tuple(out)


def _selects(selector: Mapping[str, Any], labels: Mapping[str, Any]) -> bool:
    return bool(selector) and all(labels.get(k) == v for k, v in selector.items())


class ServingView:
    """``ServingSource`` over ``store``, the router's loads in ``metrics``, and the decisions
    the autoscalers wrote to ``scale_log``."""

    def __init__(
        self,
        store: Store,
        metrics: MetricsSource,
        scale_log: ScaleLog,
        kpa: KpaConfig | None = None,
    ) -> None:
        self.store = store
        self.metrics = metrics
        self.scale_log = scale_log
        self.kpa = kpa or KpaConfig()

    def decisions(self) -> list[ScaleDecision]:
        return self.scale_log.recent()

    def served(self) -> list[Served]:
        services: dict[str, list[Obj]] = {}
        for found in self.store.list(SERVICES):
            services.setdefault(_meta(found)[0], []).append(found)
        hpas: dict[Key, Obj] = {}
        for hpa in self.store.list(HPAS):
            ref = (hpa.get("spec") or {}).get("scaleTargetRef") or {}
            if ref.get("kind") == "Deployment":
                hpas.setdefault((_meta(hpa)[0], str(ref.get("name", ""))), hpa)
        isvcs = {_meta(o): o for o in self.store.list(INFERENCE_SERVICES)}
        out = []
        for dep in sorted(self.store.list(DEPLOYMENTS), key=_meta):
            namespace, name = _meta(dep)
            spec = dep.get("spec") or {}
            status = dep.get("status") or {}
            owners = (dep.get("metadata") or {}).get("ownerReferences") or []
            owner = owners[0] if owners else {}
            labels = ((spec.get("template") or {}).get("metadata") or {}).get("labels") or {}
            svc: Obj | None = next(
                (
                    s
                    for s in sorted(services.get(namespace, []), key=_meta)
                    if _selects((s.get("spec") or {}).get("selector") or {}, labels)
                ),
                None,
            )
            autoscaling = None
            if (namespace, name) in hpas:
                autoscaling = self._hpa(hpas[(namespace, name)])
            elif owner.get("kind") == "InferenceService":
                isvc = isvcs.get((namespace, str(owner.get("name", ""))))
                autoscaling = self._kpa(isvc) if isvc is not None else None
            out.append(
                Served(
                    namespace,
                    name,
                    f"{owner['kind']}/{owner.get('name', '')}" if owner.get("kind") else "",
                    int(spec.get("replicas", 1)),
                    int(status.get("replicas", 0) or 0),
                    int(status.get("readyReplicas", 0) or 0),
                    self._load(namespace, _meta(svc)[1]) if svc is not None else None,
                    autoscaling,
                )
            )
        return out

    def _load(self, namespace: str, service: str) -> Load | None:
        seen = self.metrics.service_load(namespace, service)
        if seen is None:
            return None
        return Load(
            service,
            seen.in_flight,
            seen.rps,
            seen.held,
            seen.p50_s,
            seen.p99_s,
            seen.window_s,
            seen.latency_window_s,
        )

    def _hpa(self, hpa: Obj) -> Autoscaling:
        spec = hpa.get("spec") or {}
        last = parse_time((hpa.get("status") or {}).get("lastScaleTime"))
        return Autoscaling(
            "HorizontalPodAutoscaler",
            _meta(hpa)[1],
            int(spec.get("minReplicas", 1)),
            int(spec.get("maxReplicas", 0) or 0) or None,
            metric_lines(hpa),
            last,
        )

    def _kpa(self, isvc: Obj) -> Autoscaling | None:
        namespace, name = _meta(isvc)
        try:
            scaling = parse_isvc(isvc).scaling
        except InputError:
            return None  # the InferenceService's own status says what is wrong
        last = self.scale_log.last("KPA", namespace, name)
        target = target_per_pod(scaling, self.kpa)
        return Autoscaling(
            "KPA",
            name,
            scaling.min_scale,
            scaling.max_scale or None,
            (f"{scaling.metric} target {target:.2f} per pod",),
            last.at_ms if last is not None else None,
        )
