"""Real kubectl 1.32 against ``phalanx up``: ``kubectl autoscale`` (which posts an
``autoscaling/v1`` HPA), ``kubectl get hpa`` with its TARGETS column, and the HPA controller
bringing a Deployment scaled past ``maxReplicas`` back within it."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

KUBECTL = shutil.which("kubectl")
pytestmark = pytest.mark.skipif(KUBECTL is None, reason="kubectl is not installed")

DEPLOYMENT = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: 1
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
      - name: web
        image: python
        command: ["sleep", "1000"]
        resources:
          requests: {cpu: 200m}
"""


def _phalanx(args: list[str], state: Path) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PHALANX_STATE_DIR=str(state))
    env.pop("PHALANX_DB", None)
    return subprocess.run(
        [sys.executable, "-m", "phalanx", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )


class Kubectl:
    def __init__(self, root: Path) -> None:
        self.root = root

    def __call__(self, *args: str, stdin: str | None = None) -> str:
        assert KUBECTL is not None
        env = dict(os.environ, KUBECONFIG=str(self.root / "kubeconfig"), HOME=str(self.root))
        done = subprocess.run(
            [KUBECTL, *args], input=stdin, capture_output=True, text=True, env=env, timeout=60
        )
        assert done.returncode == 0, f"kubectl {' '.join(args)}: {done.stderr}"
        return done.stdout

    def until(self, want: str, *args: str, timeout: float = 20) -> str:
        deadline = time.monotonic() + timeout
        while True:
            out = self(*args)
            if out.strip() == want or time.monotonic() > deadline:
                return out.strip()
            time.sleep(0.3)


@pytest.fixture(scope="module")
def kubectl(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Kubectl]:
    from phalanx.server.localcluster import cluster_yaml

    root = tmp_path_factory.mktemp("autoscale")
    state = root / "state"
    config = root / "cluster.yaml"
    config.write_text(cluster_yaml(1, 8))
    up = ["up", "--detach", "--port", "0", "--config", str(config), "--agents", "none"]
    started = _phalanx([*up, "--horizontal-pod-autoscaler-sync-period", "1"], state)
    assert started.returncode == 0, started.stderr
    out = _phalanx(["kubeconfig"], state)
    assert out.returncode == 0, out.stderr
    (root / "kubeconfig").write_text(out.stdout)
    try:
        yield Kubectl(root)
    finally:
        _phalanx(["down"], state)
        log = (state / "log" / "controller.log").read_text() if (state / "log").exists() else ""
        assert "Traceback" not in log, log


def test_autoscale_get_hpa_and_the_controller_at_work(kubectl: Kubectl) -> None:
    kubectl("apply", "-f", "-", stdin=DEPLOYMENT)
    made = kubectl("autoscale", "deployment", "web", "--cpu-percent=50", "--min=1", "--max=10")
    assert made.strip() == "horizontalpodautoscaler.autoscaling/web autoscaled"
    lines = kubectl("get", "hpa").splitlines()
    assert lines[0].split() == [
        "NAME",
        "REFERENCE",
        "TARGETS",
        "MINPODS",
        "MAXPODS",
        "REPLICAS",
        "AGE",
    ]
    assert lines[1].split()[:6] == ["web", "Deployment/web", "cpu:", "<unknown>/50%", "1", "10"]
    # The v1 object kubectl wrote reads back as v2 with the cpu metric.
    metric = kubectl(
        "get", "hpa", "web", "-o", "jsonpath={.spec.metrics[0].resource.target.averageUtilization}"
    )
    assert metric == "50"
    # No agent reports CPU here: the controller says so and keeps the scale.
    reason = kubectl.until(
        "FailedGetResourceMetric",
        "get",
        "hpa",
        "web",
        "-o",
        'jsonpath={.status.conditions[?(@.type=="ScalingActive")].reason}',
    )
    assert reason == "FailedGetResourceMetric"
    # Scaled past maxReplicas by hand: the HPA brings it back to 10.
    kubectl("scale", "deployment", "web", "--replicas=15")
    assert kubectl.until("10", "get", "deploy", "web", "-o", "jsonpath={.spec.replicas}") == "10"
    events = kubectl("get", "events", "--field-selector", "reason=SuccessfulRescale")
    assert "New size: 10; reason: Current number of replicas above Spec.MaxReplicas" in events
    current = kubectl.until("10", "get", "hpa", "web", "-o", "jsonpath={.status.currentReplicas}")
    assert current == "10"


ISVC = """\
apiVersion: serving.kserve.io/v1beta1
kind: InferenceService
metadata:
  name: echo
spec:
  predictor:
    minReplicas: 0
    maxReplicas: 3
    scaleMetric: rps
    scaleTarget: 5
    containers:
    - name: kserve-container
      image: python
      command: ["python", "-m", "http.server", "8080"]
"""


def test_inference_service_owns_its_predictor(kubectl: Kubectl) -> None:
    assert kubectl("apply", "-f", "-", stdin=ISVC).strip() == (
        "inferenceservice.serving.kserve.io/echo created"
    )
    url = kubectl.until(
        "http://echo.default.example.com", "get", "isvc", "echo", "-o", "jsonpath={.status.url}"
    )
    assert url == "http://echo.default.example.com"
    lines = kubectl("get", "isvc").splitlines()
    assert lines[0].split() == [
        "NAME",
        "URL",
        "READY",
        "PREV",
        "LATEST",
        "PREVROLLEDOUTREVISION",
        "LATESTREADYREVISION",
        "AGE",
    ]
    row = lines[1].split()
    # No agent runs the predictor here: not ready yet, all traffic to the latest revision.
    assert row[:4] == ["echo", "http://echo.default.example.com", "False", "100"]
    owned = kubectl(
        "get", "deploy,svc", "-l", "serving.kserve.io/inferenceservice=echo", "-o", "name"
    ).split()
    assert owned == ["deployment.apps/echo-predictor", "service/echo-predictor"]
    assert kubectl("get", "deploy", "echo-predictor", "-o", "jsonpath={.spec.replicas}") == "1"
    kubectl("delete", "isvc", "echo")
    gone = kubectl.until(
        "", "get", "deploy,svc", "-l", "serving.kserve.io/inferenceservice=echo", "-o", "name"
    )
    assert gone == ""


HPA_V2 = """\
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata:
  name: routed
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: web}
  minReplicas: 2
  maxReplicas: 5
  metrics:
  - type: Object
    object:
      describedObject: {apiVersion: v1, kind: Service, name: web}
      metric: {name: requests_in_flight}
      target: {type: Value, value: "10"}
  behavior:
    scaleDown:
      stabilizationWindowSeconds: 60
"""


def test_apply_a_v2_hpa_on_the_routers_metric(kubectl: Kubectl) -> None:
    kubectl("apply", "-f", "-", stdin=HPA_V2)
    row = kubectl("get", "hpa", "routed", "--no-headers").split()
    assert row[:5] == ["routed", "Deployment/web", "<unknown>/10", "2", "5"]
    # Defaulted as kube-apiserver does: the rules of a given behavior are filled in.
    up = kubectl("get", "hpa", "routed", "-o", "jsonpath={.spec.behavior.scaleUp.policies[*].type}")
    assert up.split() == ["Pods", "Percent"]
    # Read through autoscaling/v1, what v1 cannot say travels in annotations.
    v1 = json.loads(
        kubectl(
            "get",
            "--raw",
            "/apis/autoscaling/v1/namespaces/default/horizontalpodautoscalers/routed",
        )
    )
    assert v1["apiVersion"] == "autoscaling/v1"
    assert "targetCPUUtilizationPercentage" not in v1["spec"]
    assert "autoscaling.alpha.kubernetes.io/metrics" in v1["metadata"]["annotations"]
