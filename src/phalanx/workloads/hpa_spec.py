"""An ``autoscaling/v2`` HorizontalPodAutoscaler's spec as typed values, defaulted as
kube-apiserver defaults it (``SetDefaults_HorizontalPodAutoscaler``): ``minReplicas`` 1, one
``cpu`` metric at 80 % utilisation when none is given. A ``behavior`` that is given has its
missing rules and fields filled with the documented defaults:

- scale up: no stabilization, ``selectPolicy: Max`` of 100 % or 4 pods per 15 s;
- scale down: the controller's ``--horizontal-pod-autoscaler-downscale-stabilization`` window
  (300 s), ``selectPolicy: Max`` of 100 % per 15 s.

Without a ``behavior`` the controller takes its older path (``HpaSpec.behavior`` False): the
highest recommendation of the downscale window, and at most max(2 x current, 4) per sync.

Metric kinds: ``Resource`` (``cpu``: ``Utilization`` of the pods' requests or an
``AverageValue``), ``Pods`` (an ``AverageValue`` of a per-pod metric) and ``Object`` (the
``Value`` or ``AverageValue`` of a metric describing one object). The router's metrics are
served under the names in ``ROUTER_METRICS``; an ``Object`` metric of those describes the
``Service`` that routes to the pods.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from phalanx.domain.quantity import parse_quantity
from phalanx.errors import InputError

__all__ = [
    "DEFAULT_CPU_UTILIZATION",
    "IN_FLIGHT",
    "REQUESTS_PER_SECOND",
    "ROUTER_METRICS",
    "HpaSpec",
    "MetricSpec",
    "Policy",
    "Rules",
    "Target",
    "TargetRef",
    "parse_hpa",
]

IN_FLIGHT = "requests_in_flight"
"""The router's requests in flight (to a Service, or to one pod as a ``Pods`` metric)."""
REQUESTS_PER_SECOND = "requests_per_second"
"""The router's requests per second over its sliding window."""
ROUTER_METRICS = (IN_FLIGHT, REQUESTS_PER_SECOND)
DEFAULT_CPU_UTILIZATION = 80
"""``autoscaling.DefaultCPUUtilization``: the metric of an HPA that lists none."""
DOWNSCALE_STABILIZATION_S = 300


@dataclass(frozen=True)
class TargetRef:
    """``spec.scaleTargetRef`` (or an ``Object`` metric's ``describedObject``)."""

    kind: str
    name: str
    api_version: str = ""


@dataclass(frozen=True)
class Target:
    """A metric's target. ``type`` is ``Utilization`` (``utilization`` percent of the pods'
    requests), ``AverageValue`` or ``Value`` (``milli``: thousandths, as quantities are kept)."""

    type: str
    utilization: int = 0
    milli: int = 0


@dataclass(frozen=True)
class MetricSpec:
    type: str
    """``Resource``, ``Pods`` or ``Object``."""
    name: str
    """The resource (``cpu``) or the metric's name."""
    target: Target
    described: TargetRef | None = None
    """The object an ``Object`` metric describes."""


@dataclass(frozen=True)
class Policy:
    type: str
    """``Pods`` or ``Percent``."""
    value: int
    period_s: int


@dataclass(frozen=True)
class Rules:
    """``HPAScalingRules``: one direction's stabilization window and rate policies."""

    stabilization_s: int
    select: str
    """``Max``, ``Min`` or ``Disabled``."""
    policies: tuple[Policy, ...]


SCALE_UP = Rules(0, "Max", (Policy("Pods", 4, 15), Policy("Percent", 100, 15)))
SCALE_DOWN = Rules(DOWNSCALE_STABILIZATION_S, "Max", (Policy("Percent", 100, 15),))


@dataclass(frozen=True)
class HpaSpec:
    target: TargetRef
    min_replicas: int
    max_replicas: int
    metrics: tuple[MetricSpec, ...]
    scale_up: Rules
    scale_down: Rules
    behavior: bool = True
    """Whether ``spec.behavior`` was given (else the rules above are the defaults, unused)."""


def parse_hpa(obj: Mapping[str, Any], *, downscale_stabilization_s: int = 300) -> HpaSpec:
    """``obj``'s spec, defaulted; ``InputError`` naming the field for anything that
    kube-apiserver's validation would refuse."""
    spec = _map(obj.get("spec"), "spec")
    ref = _map(spec.get("scaleTargetRef"), "spec.scaleTargetRef")
    target = TargetRef(
        _str(ref, "kind", "spec.scaleTargetRef"),
        _str(ref, "name", "spec.scaleTargetRef"),
        str(ref.get("apiVersion") or ""),
    )
    low = _int(spec, "minReplicas", "spec", 1)
    high = _int(spec, "maxReplicas", "spec", None)
    if low < 1:
        # minReplicas 0 needs the HPAScaleToZero feature gate, off by default upstream.
        raise InputError("must be greater than or equal to 1", field="spec.minReplicas")
    if high < low:
        raise InputError("must be greater than or equal to `minReplicas`", field="spec.maxReplicas")
    raw = spec.get("metrics") or []
    if not isinstance(raw, list):
        raise InputError("must be a list", field="spec.metrics")
    metrics = tuple(_metric(m, f"spec.metrics[{i}]") for i, m in enumerate(raw))
    if not metrics:
        metrics = (MetricSpec("Resource", "cpu", Target("Utilization", DEFAULT_CPU_UTILIZATION)),)
    given = spec.get("behavior") is not None
    behavior = _map(spec.get("behavior") or {}, "spec.behavior")
    down_default = Rules(downscale_stabilization_s, SCALE_DOWN.select, SCALE_DOWN.policies)
    return HpaSpec(
        target,
        low,
        high,
        metrics,
        _rules(behavior.get("scaleUp"), SCALE_UP, "spec.behavior.scaleUp"),
        _rules(behavior.get("scaleDown"), down_default, "spec.behavior.scaleDown"),
        given,
    )


def _metric(raw: object, path: str) -> MetricSpec:
    m = _map(raw, path)
    kind = m.get("type")
    if kind == "Resource":
        body = _map(m.get("resource"), f"{path}.resource")
        name = _str(body, "name", f"{path}.resource")
        if name != "cpu":
            raise InputError(
                f"only the cpu resource is measured here, not {name!r}",
                field=f"{path}.resource.name",
            )
        target = _target(
            body.get("target"), f"{path}.resource.target", ("Utilization", "AverageValue")
        )
        return MetricSpec("Resource", name, target)
    if kind in ("Pods", "Object"):
        key = "pods" if kind == "Pods" else "object"
        body = _map(m.get(key), f"{path}.{key}")
        ident = _map(body.get("metric"), f"{path}.{key}.metric")
        name = _str(ident, "name", f"{path}.{key}.metric")
        if name not in ROUTER_METRICS:
            raise InputError(
                f"unknown metric {name!r} (served: {', '.join(ROUTER_METRICS)})",
                field=f"{path}.{key}.metric.name",
            )
        allowed = ("AverageValue",) if kind == "Pods" else ("Value", "AverageValue")
        target = _target(body.get("target"), f"{path}.{key}.target", allowed)
        described = None
        if kind == "Object":
            obj = _map(body.get("describedObject"), f"{path}.object.describedObject")
            described = TargetRef(
                _str(obj, "kind", f"{path}.object.describedObject"),
                _str(obj, "name", f"{path}.object.describedObject"),
                str(obj.get("apiVersion") or ""),
            )
            if described.kind != "Service":
                raise InputError(
                    "the router's metrics describe a Service",
                    field=f"{path}.object.describedObject.kind",
                )
        return MetricSpec(kind, name, target, described)
    raise InputError(
        f'Unsupported value: {kind!r}: supported values: "Resource", "Pods", "Object"',
        field=f"{path}.type",
    )


def _target(raw: object, path: str, allowed: tuple[str, ...]) -> Target:
    t = _map(raw, path)
    kind = t.get("type")
    if kind not in allowed:
        wanted = ", ".join(f'"{a}"' for a in allowed)
        raise InputError(
            f"Unsupported value: {kind!r}: supported values: {wanted}", field=f"{path}.type"
        )
    if kind == "Utilization":
        value = t.get("averageUtilization")
        if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
            raise InputError("must be greater than 0", field=f"{path}.averageUtilization")
        return Target(kind, utilization=value)
    key = "value" if kind == "Value" else "averageValue"
    text = t.get(key)
    if not isinstance(text, (str, int, float)) or isinstance(text, bool):
        raise InputError("must be a quantity", field=f"{path}.{key}")
    milli = parse_quantity(str(text), field=f"{path}.{key}")
    if milli <= 0:
        raise InputError("must be positive", field=f"{path}.{key}")
    return Target(kind, milli=milli)


def _rules(raw: object, default: Rules, path: str) -> Rules:
    if raw is None:
        return default
    r = _map(raw, path)
    window = r.get("stabilizationWindowSeconds", default.stabilization_s)
    if not isinstance(window, int) or isinstance(window, bool) or not 0 <= window <= 3600:
        raise InputError("must be between 0 and 3600", field=f"{path}.stabilizationWindowSeconds")
    select = r.get("selectPolicy", "Max")
    if select not in ("Max", "Min", "Disabled"):
        raise InputError(
            f'Unsupported value: {select!r}: supported values: "Disabled", "Max", "Min"',
            field=f"{path}.selectPolicy",
        )
    raw_policies = r.get("policies")
    if raw_policies is None:
        return Rules(window, select, default.policies)
    if not isinstance(raw_policies, list) or not raw_policies:
        raise InputError("must specify at least one Policy", field=f"{path}.policies")
    policies = []
    for i, p in enumerate(raw_policies):
        where = f"{path}.policies[{i}]"
        body = _map(p, where)
        kind = body.get("type")
        if kind not in ("Pods", "Percent"):
            raise InputError(
                f'Unsupported value: {kind!r}: supported values: "Percent", "Pods"',
                field=f"{where}.type",
            )
        value = _int(body, "value", where, None)
        period = _int(body, "periodSeconds", where, None)
        if value <= 0:
            raise InputError("must be greater than zero", field=f"{where}.value")
        if not 0 < period <= 1800:
            raise InputError("must be between 1 and 1800", field=f"{where}.periodSeconds")
        policies.append(Policy(kind, value, period))
    return Rules(window, select, tuple(policies))


def _map(raw: object, path: str) -> Mapping[str, Any]:
    if not isinstance(raw, Mapping):
        raise InputError("Required value" if raw is None else "must be an object", field=path)
    return raw


def _str(m: Mapping[str, Any], key: str, path: str) -> str:
    value = m.get(key)
    if not isinstance(value, str) or not value:
        raise InputError("Required value", field=f"{path}.{key}")
    return value


def _int(m: Mapping[str, Any], key: str, path: str, default: int | None) -> int:
    value = m.get(key, default)
    if value is None:
        raise InputError("Required value", field=f"{path}.{key}")
    if not isinstance(value, int) or isinstance(value, bool):
        raise InputError("must be an integer", field=f"{path}.{key}")
    return value
