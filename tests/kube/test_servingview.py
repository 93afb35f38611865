"""The dashboard's serving source over the object store: each Deployment with its replicas,
the router's load on the Service selecting its pods, its HPA or its InferenceService's KPA,
and the autoscalers' decisions."""

from __future__ import annotations

from typing import Any

from phalanx.api.serving import Load, ScaleDecision
from phalanx.domain.time import SECOND
from phalanx.kube.autoscalers import ServiceLoad
from phalanx.kube.inferenceservices import DEPLOYMENTS, InferenceServices
from phalanx.kube.scalelog import ScaleLog
from phalanx.kube.servingview import ServingView, metric_lines
from phalanx.kube.store import ObjectStore
from phalanx.workloads.hpa_metrics import Sample

T0 = 1_764_613_704_000


class Loads:
    """A router that knows Services ``web`` (busy) and ``echo-predictor`` (holding one)."""

    def pod_cpu(self, namespace: str, pod: str) -> Sample | None:
        return None

    def service_load(self, namespace: str, service: str) -> ServiceLoad | None:
        return {
            ("default", "web"): ServiceLoad(2.5, 41.5, 0, 2, 0.004, 0.02, 10),
            ("ml", "echo-predictor"): ServiceLoad(1.0, 0.0, 1),
        }.get((namespace, service))

    def pod_load(self, namespace: str, pod: str) -> ServiceLoad | None:
        return None


def deployment(name: str, replicas: int, labels: dict[str, str]) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": labels},
            "template": {"metadata": {"labels": {**labels, "tier": "x"}}, "spec": {}},
        },
    }


def service(name: str, selector: dict[str, str]) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"selector": selector, "ports": [{"port": 80, "targetPort": 8080}]},
    }


HPA = {
    "apiVersion": "autoscaling/v2",
    "kind": "HorizontalPodAutoscaler",
    "metadata": {"name": "web-hpa", "namespace": "default"},
    "spec": {
        "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
        "minReplicas": 2,
        "maxReplicas": 8,
        "metrics": [
            {
                "type": "Resource",
                "resource": {
                    "name": "cpu",
                    "target": {"type": "Utilization", "averageUtilization": 50},
                },
            },
            {
                "type": "Object",
                "object": {
                    "metric": {"name": "requests_per_second"},
                    "describedObject": {"apiVersion": "v1", "kind": "Service", "name": "web"},
                    "target": {"type": "Value", "value": "100"},
                },
            },
        ],
    },
}


def scene() -> tuple[ObjectStore, ServingView, InferenceServices]:
    store = ObjectStore()
    store.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ml"}})
    web = store.create(deployment("web", 3, {"app": "web"}))
    web["status"] = {"replicas": 3, "readyReplicas": 2}
    store.update_status(web)
    store.create(deployment("lonely", 1, {"app": "lonely"}))
    store.create(service("other", {"app": "other"}))  # selects neither
    store.create(service("web", {"app": "web"}))
    hpa = store.create(HPA)
    hpa["status"] = {
        "currentReplicas": 3,
        "desiredReplicas": 3,
        "lastScaleTime": "2025-12-01T18:28:24Z",
        "currentMetrics": [
            {"type": "Resource", "resource": {"name": "cpu", "current": {"averageUtilization": 72}}}
        ],
    }
    store.update_status(hpa)
    store.create(
        {
            "apiVersion": "serving.kserve.io/v1beta1",
            "kind": "InferenceService",
            "metadata": {"name": "echo", "namespace": "ml"},
            "spec": {
                "predictor": {
                    "minReplicas": 0,
                    "maxReplicas": 4,
                    "scaleMetric": "concurrency",
                    "scaleTarget": 10,
                    "containers": [
                        {"name": "kserve-container", "image": "python", "command": ["serve"]}
                    ],
                }
            },
        }
    )
    log = ScaleLog()
    loads = Loads()
    isvcs = InferenceServices(store, loads, scale_log=log)
    isvcs.tick(T0)  # makes the predictor's Deployment and Service
    return store, ServingView(store, loads, log), isvcs


def test_each_deployment_with_its_load_and_its_autoscaler() -> None:
    store, view, isvcs = scene()
    rows = {w.key: w for w in view.served()}
    assert list(rows) == ["default/lonely", "default/web", "ml/echo-predictor"]

    web = rows["default/web"]
    assert (web.desired, web.current, web.ready, web.owner) == (3, 3, 2, "")
    assert web.load == Load("web", 2.5, 41.5, 0, 0.004, 0.02, 2, 10)
    assert web.autoscaling is not None
    assert web.autoscaling.kind == "HorizontalPodAutoscaler" and web.autoscaling.name == "web-hpa"
    assert (web.autoscaling.min_replicas, web.autoscaling.max_replicas) == (2, 8)
    assert web.autoscaling.metrics == (
        "cpu 72% / 50%",
        "requests_per_second on Service/web <unknown> / 100",
    )
    assert web.autoscaling.last_scale_ms == 1_764_613_704_000

    lonely = rows["default/lonely"]
    assert lonely.load is None and lonely.autoscaling is None

    echo = rows["ml/echo-predictor"]
    assert echo.owner == "InferenceService/echo"
    assert echo.load is not None and echo.load.service == "echo-predictor" and echo.load.held == 1
    kpa = echo.autoscaling
    assert kpa is not None and kpa.kind == "KPA" and kpa.name == "echo"
    assert (kpa.min_replicas, kpa.max_replicas) == (0, 4)
    assert kpa.metrics == ("concurrency target 7.00 per pod",)  # 10 x 70 %
    assert kpa.last_scale_ms is None and view.decisions() == []

    # The held request asks for replicas: the KPA's decision shows, and its time on the row.
    dep = store.get(DEPLOYMENTS, "ml", "echo-predictor")
    assert dep is not None
    dep["spec"]["replicas"] = 0
    store.update(dep)
    isvcs.tick(T0 + 2 * SECOND)
    [decision] = view.decisions()
    assert isinstance(decision, ScaleDecision)
    assert (decision.from_replicas, decision.to_replicas) == (0, 1)
    echo = next(w for w in view.served() if w.name == "echo-predictor")
    assert echo.autoscaling is not None and echo.autoscaling.last_scale_ms == T0 + 2 * SECOND


def test_metric_lines_of_an_hpa_without_status() -> None:
    assert metric_lines(HPA) == (
        "cpu <unknown> / 50%",
        "requests_per_second on Service/web <unknown> / 100",
    )
    assert metric_lines({"spec": {}}) == ()


def test_the_log_keeps_the_newest_decisions() -> None:
    log = ScaleLog(keep=2)
    for i in range(3):
        log.add(ScaleDecision(i, "KPA", "ns", "a" if i < 2 else "b", "Deployment/x", i, i + 1, ""))
    assert [d.at_ms for d in log.recent()] == [2, 1]
    found = log.last("KPA", "ns", "a")
    assert found is not None and found.at_ms == 1
    assert log.last("KPA", "ns", "gone") is None


def test_what_the_view_leaves_out() -> None:
    """An HPA on a ReplicaSet names no Deployment; a Service without a selector (endpoints
    kept by hand) selects nothing; an InferenceService whose spec is invalid has no KPA row
    (its own status says why); a router that has not answered gives no load."""

    class Silent(Loads):
        def service_load(self, namespace: str, service: str) -> ServiceLoad | None:
            return None

    store = ObjectStore()
    store.create(deployment("web", 2, {"app": "web"}))
    store.create(service("manual", {}))
    rs_hpa = {**HPA, "metadata": {"name": "rs", "namespace": "default"}}
    rs_hpa["spec"] = {**HPA["spec"], "scaleTargetRef": {"kind": "ReplicaSet", "name": "web"}}
    store.create(rs_hpa)
    owned = deployment("bad-predictor", 1, {"app": "bad"})
    owned["metadata"]["ownerReferences"] = [
        {
            "apiVersion": "serving.kserve.io/v1beta1",
            "kind": "InferenceService",
            "name": "bad",
            "uid": "u-1",
            "controller": True,
        }
    ]
    store.create(owned)
    store.create(
        {
            "apiVersion": "serving.kserve.io/v1beta1",
            "kind": "InferenceService",
            "metadata": {"name": "bad", "namespace": "default"},
            "spec": {"predictor": {"minReplicas": 3, "maxReplicas": 1, "containers": []}},
        }
    )
    view = ServingView(store, Silent(), ScaleLog())
    rows = {w.name: w for w in view.served()}
    assert rows["web"].load is None and rows["web"].autoscaling is None
    assert rows["web"].desired == 2 and rows["web"].ready == 0  # no status written yet
    assert rows["bad-predictor"].owner == "InferenceService/bad"
    assert rows["bad-predictor"].autoscaling is None
