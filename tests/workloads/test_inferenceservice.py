"""serving.kserve.io/v1beta1 InferenceService: predictor parsing, owned objects, status."""

from __future__ import annotations

from typing import Any

import pytest

from phalanx.errors import InputError
from phalanx.workloads import inferenceservice as isvc
from phalanx.workloads.conditions import condition
from phalanx.workloads.kpa import RPS

T0 = 1_764_613_704_000


def make(**predictor: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "containers": [
            {
                "name": "kserve-container",
                "image": "python",
                "command": ["python", "-m", "http.server", "8081"],
                "ports": [{"containerPort": 8081}],
            }
        ]
    }
    body.update(predictor)
    return {
        "apiVersion": "serving.kserve.io/v1beta1",
        "kind": "InferenceService",
        "metadata": {"name": "echo", "namespace": "ml", "uid": "u-1", "generation": 1},
        "spec": {"predictor": body},
    }


def test_defaults_and_mapping_to_knative() -> None:
    spec = isvc.parse_isvc(make())
    assert spec.port == 8081
    assert spec.scaling.min_scale == 1 and spec.scaling.max_scale == 0
    assert spec.scaling.metric == "concurrency" and spec.scaling.target is None
    spec = isvc.parse_isvc(
        make(
            minReplicas=0, maxReplicas=4, scaleMetric="rps", scaleTarget=20, containerConcurrency=5
        )
    )
    assert (spec.scaling.min_scale, spec.scaling.max_scale) == (0, 4)
    assert spec.scaling.metric == RPS and spec.scaling.target == 20.0
    assert spec.scaling.container_concurrency == 5


@pytest.mark.parametrize(
    ("predictor", "where"),
    [
        ({"model": {"modelFormat": {"name": "sklearn"}}}, "spec.predictor.model"),
        ({"containers": []}, "spec.predictor.containers"),
        ({"scaleMetric": "cpu"}, "spec.predictor.scaleMetric"),
        ({"minReplicas": -1}, "spec.predictor.minReplicas"),
        ({"minReplicas": 3, "maxReplicas": 2}, "spec.predictor.maxReplicas"),
        ({"scaleTarget": 0}, "spec.predictor.scaleTarget"),
    ],
)
def test_what_cannot_run_names_the_field(predictor: dict[str, Any], where: str) -> None:
    with pytest.raises(InputError) as e:
        isvc.parse_isvc(make(**predictor))
    assert e.value.field == where


def test_owned_deployment_and_service() -> None:
    obj = make(minReplicas=0, labels={"team": "a"})
    spec = isvc.parse_isvc(obj)
    dep = isvc.deployment(obj, spec, 3)
    assert dep["metadata"]["name"] == "echo-predictor"
    assert dep["metadata"]["namespace"] == "ml"
    assert dep["metadata"]["ownerReferences"][0]["uid"] == "u-1"
    assert dep["spec"]["replicas"] == 3
    template = dep["spec"]["template"]
    assert template["metadata"]["labels"][isvc.ISVC_LABEL] == "echo"
    assert template["metadata"]["labels"]["team"] == "a"
    assert "minReplicas" not in template["spec"]
    assert template["spec"]["containers"][0]["command"][0] == "python"
    selector = dep["spec"]["selector"]["matchLabels"]
    assert all(template["metadata"]["labels"][k] == v for k, v in selector.items())
    svc = isvc.service(obj, spec)
    assert svc["spec"]["ports"][0]["port"] == 80
    assert svc["spec"]["ports"][0]["targetPort"] == 8081
    assert svc["spec"]["selector"] == selector


def test_status_ready_and_at_zero() -> None:
    obj = make(minReplicas=0)
    status = isvc.status(obj, 0, 1, None, T0)
    ready = condition(status["conditions"], "Ready")
    assert ready is not None and ready["status"] == "False"
    assert status["url"] == "http://echo.ml.example.com"
    assert status["address"]["url"] == "http://echo-predictor.ml.svc.cluster.local"
    obj["status"] = isvc.status(obj, 1, 1, "127.77.0.9", T0)
    ready = condition(obj["status"]["conditions"], "Ready")
    assert ready is not None and ready["status"] == "True"
    assert obj["status"]["address"]["url"] == "http://127.77.0.9:80"
    traffic = obj["status"]["components"]["predictor"]["traffic"]
    assert traffic == [
        {"revisionName": "echo-predictor-00001", "percent": 100, "latestRevision": True}
    ]
    # Scaled to zero for want of traffic: still Ready.
    obj["status"] = isvc.status(obj, 0, 0, "127.77.0.9", T0 + 1000)
    ready = condition(obj["status"]["conditions"], "PredictorReady")
    assert ready is not None and ready["status"] == "True"
    # Scaling back from zero, its replica starting: still Ready.
    obj["status"] = isvc.status(obj, 0, 1, "127.77.0.9", T0 + 2000)
    ready = condition(obj["status"]["conditions"], "Ready")
    assert ready is not None and ready["status"] == "True"
    # A new generation: not Ready until one of its replicas is.
    obj["metadata"]["generation"] = 2
    obj["status"] = isvc.status(obj, 0, 1, "127.77.0.9", T0 + 3000)
    ready = condition(obj["status"]["conditions"], "Ready")
    assert ready is not None and ready["status"] == "False"
