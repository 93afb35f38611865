"""KServe's ``serving.kserve.io/v1beta1`` InferenceService, pure: its predictor -> the
Deployment and the Service it owns, the Knative autoscaler's settings, and its status.

The predictor is a custom container (``spec.predictor.containers``, the first one serving;
KServe's default port 8080). A ``model`` predictor needs a serving runtime image, which does
not run here: it is refused naming the field.

Scaling fields as KServe maps them onto Knative's annotations: ``minReplicas`` (default 1; 0
lets the service scale to zero) -> ``min-scale``, ``maxReplicas`` (0: no maximum) ->
``max-scale``, ``scaleMetric`` (``concurrency``, the default, or ``rps``) -> ``metric``,
``scaleTarget`` -> ``target``, ``containerConcurrency`` -> the revision's hard limit.

Owned objects, named as KServe's raw deployment names them: Deployment and Service
``NAME-predictor``, labelled ``serving.kserve.io/inferenceservice: NAME`` and
``component: predictor``. Status as KServe reports it: ``url``, ``address.url``,
``components.predictor`` (its revision, traffic 100 % to the latest), and the conditions
``PredictorReady`` and ``Ready``. A predictor that was ready stays Ready scaled to zero and
while it scales back from zero (Knative keeps a revision Ready when it has no pods for want of
traffic); a new generation is Ready once one of its replicas is.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from phalanx.domain.time import Instant
from phalanx.errors import InputError
from phalanx.workloads.conditions import is_true, set_condition
from phalanx.workloads.kpa import CONCURRENCY, RPS, KpaSpec

__all__ = [
    "COMPONENT_LABEL",
    "ISVC_LABEL",
    "IsvcSpec",
    "deployment",
    "parse_isvc",
    "predictor_name",
    "service",
    "status",
]

ISVC_LABEL = "serving.kserve.io/inferenceservice"
COMPONENT_LABEL = "component"
DEFAULT_PORT = 8080
"""KServe's default container port."""
SERVICE_PORT = 80
INGRESS_DOMAIN = "example.com"
"""Knative's default domain: ``NAME.NAMESPACE.example.com``."""


@dataclass(frozen=True)
class IsvcSpec:
    container: Mapping[str, Any]
    """The predictor's serving container."""
    pod: Mapping[str, Any]
    """The predictor's pod spec fields (containers included)."""
    port: int
    scaling: KpaSpec


def predictor_name(name: str) -> str:
    return f"{name}-predictor"


def _int(body: Mapping[str, Any], key: str, default: int) -> int:
    value = body.get(key, default)
    if value is None:
        return default
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise InputError("must be a non-negative integer", field=f"spec.predictor.{key}")
    return value


def parse_isvc(obj: Mapping[str, Any]) -> IsvcSpec:
    """``obj``'s predictor; ``InputError`` naming the field for what cannot run."""
    spec = obj.get("spec")
    predictor = spec.get("predictor") if isinstance(spec, Mapping) else None
    if not isinstance(predictor, Mapping):
        raise InputError("Required value", field="spec.predictor")
    if predictor.get("model") is not None:
        raise InputError(
            "a model predictor needs a serving runtime image, which does not run here; "
            "give a custom container in spec.predictor.containers",
            field="spec.predictor.model",
        )
    containers = predictor.get("containers")
    if not isinstance(containers, list) or not containers or not isinstance(containers[0], dict):
        raise InputError("Required value: a custom container", field="spec.predictor.containers")
    container = containers[0]
    if not container.get("command") and not container.get("args"):
        raise InputError(
            "Required value: the command that serves (images are not pulled here)",
            field="spec.predictor.containers[0].command",
        )
    ports = container.get("ports") or []
    port = DEFAULT_PORT
    if ports and isinstance(ports[0], Mapping) and isinstance(ports[0].get("containerPort"), int):
        port = ports[0]["containerPort"]
    metric = predictor.get("scaleMetric", CONCURRENCY) or CONCURRENCY
    if metric not in (CONCURRENCY, RPS):
        raise InputError(
            f"scaleMetric {metric!r} is for KServe's HPA mode; the Knative autoscaler here "
            'scales on "concurrency" or "rps"',
            field="spec.predictor.scaleMetric",
        )
    low = _int(predictor, "minReplicas", 1)
    high = _int(predictor, "maxReplicas", 0)
    if high and high < low:
        raise InputError(
            "must be greater than or equal to minReplicas", field="spec.predictor.maxReplicas"
        )
    target = predictor.get("scaleTarget")
    if target is not None and (not isinstance(target, int) or target <= 0):
        raise InputError("must be a positive integer", field="spec.predictor.scaleTarget")
    scaling = KpaSpec(
        metric=metric,
        target=float(target) if target is not None else None,
        container_concurrency=_int(predictor, "containerConcurrency", 0),
        min_scale=low,
        max_scale=high,
    )
    pod = {k: v for k, v in predictor.items() if k not in _EXTENSION}
    return IsvcSpec(container, pod, port, scaling)


_EXTENSION = frozenset(
    (
        "minReplicas",
        "maxReplicas",
        "scaleTarget",
        "scaleMetric",
        "containerConcurrency",
        "timeout",
        "canaryTrafficPercent",
        "labels",
        "annotations",
        "logger",
        "batcher",
        "deploymentStrategy",
        "autoScaling",
        "model",
    )
)


def _labels(obj: Mapping[str, Any]) -> dict[str, str]:
    name = obj["metadata"]["name"]
    return {ISVC_LABEL: name, COMPONENT_LABEL: "predictor", "app": f"isvc.{predictor_name(name)}"}


def _owner(obj: Mapping[str, Any]) -> dict[str, Any]:
    meta = obj["metadata"]
    return {
        "apiVersion": obj.get("apiVersion", "serving.kserve.io/v1beta1"),
        "kind": "InferenceService",
        "name": meta["name"],
        "uid": meta.get("uid", ""),
        "controller": True,
        "blockOwnerDeletion": True,
    }


def deployment(obj: Mapping[str, Any], spec: IsvcSpec, replicas: int) -> dict[str, Any]:
    """The predictor's Deployment at ``replicas``."""
    meta = obj["metadata"]
    labels = _labels(obj)
    predictor = (obj.get("spec") or {}).get("predictor") or {}
    pod_labels = {**(predictor.get("labels") or {}), **labels}
    template: dict[str, Any] = {
        "metadata": {"labels": pod_labels},
        "spec": {**spec.pod, "restartPolicy": "Always"},
    }
    if predictor.get("annotations"):
        template["metadata"]["annotations"] = dict(predictor["annotations"])
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {
            "name": predictor_name(meta["name"]),
            "namespace": meta.get("namespace", "default"),
            "labels": labels,
            "ownerReferences": [_owner(obj)],
        },
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": labels["app"]}},
            "template": template,
        },
    }


def service(obj: Mapping[str, Any], spec: IsvcSpec) -> dict[str, Any]:
    """The predictor's Service: port 80 to the serving container's port."""
    meta = obj["metadata"]
    labels = _labels(obj)
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {
            "name": predictor_name(meta["name"]),
            "namespace": meta.get("namespace", "default"),
            "labels": labels,
            "ownerReferences": [_owner(obj)],
        },
        "spec": {
            "selector": {"app": labels["app"]},
            "ports": [
                {"name": "http", "port": SERVICE_PORT, "targetPort": spec.port, "protocol": "TCP"}
            ],
        },
    }


def status(
    obj: Mapping[str, Any],
    ready_replicas: int,
    replicas: int,
    cluster_ip: str | None,
    now: Instant,
) -> dict[str, Any]:
    """The InferenceService's status with the predictor at ``replicas`` of which
    ``ready_replicas`` are ready, its Service at ``cluster_ip`` (None: none allocated)."""
    meta = obj["metadata"]
    name, namespace = meta["name"], meta.get("namespace", "default")
    old = obj.get("status") or {}
    conditions = [dict(c) for c in old.get("conditions") or []]
    was_ready = is_true(conditions, "PredictorReady")
    generation = meta.get("generation", 1)
    revision = f"{predictor_name(name)}-{generation:05d}"
    observed = old.get("observedGeneration")
    # Ready once a replica of this generation was, and it stays so through scale to zero and
    # back (Knative's revision stays Ready; only its activity changes).
    ready = ready_replicas > 0 or (was_ready and observed == generation)
    if ready:
        set_condition(conditions, "PredictorReady", True, "", "", now)
        set_condition(conditions, "Ready", True, "", "", now)
    else:
        message = "Deployment does not have minimum availability."
        set_condition(
            conditions, "PredictorReady", False, "MinimumReplicasUnavailable", message, now
        )
        set_condition(conditions, "Ready", False, "MinimumReplicasUnavailable", message, now)
    for c in conditions:
        if c.get("status") == "True":
            c.pop("reason", None)
            c.pop("message", None)
        c.pop("lastProbeTime", None)
    internal = f"http://{predictor_name(name)}.{namespace}.svc.cluster.local"
    address = f"http://{cluster_ip}:{SERVICE_PORT}" if cluster_ip else internal
    latest_ready = (
        revision
        if ready
        else (old.get("components") or {}).get("predictor", {}).get("latestReadyRevision")
    )
    predictor: dict[str, Any] = {
        "url": f"http://{predictor_name(name)}.{namespace}.{INGRESS_DOMAIN}",
        "address": {"url": address},
        "latestCreatedRevision": revision,
        "traffic": [{"revisionName": revision, "percent": 100, "latestRevision": True}],
    }
    if latest_ready:
        predictor["latestReadyRevision"] = latest_ready
    return {
        "url": f"http://{name}.{namespace}.{INGRESS_DOMAIN}",
        "address": {"url": address},
        "components": {"predictor": predictor},
        "conditions": conditions,
        "observedGeneration": generation,
        "modelStatus": {
            "states": {
                "activeModelState": "Loaded" if ready else "Pending",
                "targetModelState": "Loaded",
            },
            "transitionStatus": "UpToDate" if ready else "InProgress",
        },
    }
