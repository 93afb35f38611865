"""InferenceServices against the object store at simulation speed: the predictor's objects,
Knative's autoscaler on a fake router's load, scale to zero after idling and back on the first
held request, answered once a replica is ready."""

from __future__ import annotations

from typing import Any

from phalanx.domain.time import SECOND
from phalanx.kube.autoscalers import ServiceLoad
from phalanx.kube.inferenceservices import DEPLOYMENTS, INFERENCE_SERVICES, SERVICES
from phalanx.kube.inferenceservices import InferenceServices as Runner
from phalanx.kube.store import ObjectStore
from phalanx.workloads.conditions import condition
from phalanx.workloads.hpa_metrics import Sample
from phalanx.workloads.timestamps import rfc3339

T0 = 1_764_613_704_000
PODS = ("", "pods")
START = 4 * SECOND
"""From a pod's creation to its being ready (a model server starting)."""


class Router:
    """A fake router and Deployment reconciler: pods follow the Deployment's replicas and
    become ready ``START`` after creation; requests arriving with no ready pod are held, then
    answered when one is."""

    def __init__(self, store: ObjectStore) -> None:
        self.store = store
        self.now = T0
        self.in_flight = 0.0
        self.held: list[int] = []
        """Arrival times of the requests held."""
        self.answered: list[tuple[int, int]] = []
        """(arrival, answer) of the held requests."""
        self.seq = 0

    def pods(self) -> list[dict[str, Any]]:
        return self.store.list(PODS, "ml", {"app": "isvc.echo-predictor"})

    def reconcile(self) -> None:
        dep = self.store.get(DEPLOYMENTS, "ml", "echo-predictor")
        if dep is None:
            return
        want = dep["spec"]["replicas"]
        pods = self.pods()
        for pod in pods[want:]:
            self.store.delete(PODS, "ml", pod["metadata"]["name"])
        for _ in range(want - len(pods)):
            self.seq += 1
            labels = dep["spec"]["template"]["metadata"]["labels"]
            self.store.create(
                {
                    "apiVersion": "v1",
                    "kind": "Pod",
                    "metadata": {
                        "name": f"echo-predictor-{self.seq}",
                        "namespace": "ml",
                        "labels": labels,
                        "annotations": {"test/born": str(self.now)},
                    },
                    "spec": dep["spec"]["template"]["spec"],
                }
            )
        ready = 0
        for pod in self.pods():
            born = int(pod["metadata"]["annotations"]["test/born"])
            if pod["status"].get("phase") != "Running" and self.now >= born + START:
                at = rfc3339(self.now)
                pod["status"] = {
                    "phase": "Running",
                    "startTime": at,
                    "conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": at}],
                }
                self.store.update_status(pod)
            if pod["status"].get("phase") == "Running":
                ready += 1
        if ready and self.held:
            self.answered += [(at, self.now) for at in self.held]
            self.held = []

    def request(self) -> None:
        self.held.append(self.now)

    # MetricsSource
    def pod_cpu(self, namespace: str, pod: str) -> Sample | None:
        return None

    def service_load(self, namespace: str, service: str) -> ServiceLoad | None:
        assert service == "echo-predictor"
        held = len(self.held)
        return ServiceLoad(in_flight=self.in_flight + held, rps=0.0, held=held)

    def pod_load(self, namespace: str, pod: str) -> ServiceLoad | None:
        return None


def make(min_replicas: int) -> dict[str, Any]:
    return {
        "apiVersion": "serving.kserve.io/v1beta1",
        "kind": "InferenceService",
        "metadata": {"name": "echo", "namespace": "ml"},
        "spec": {
            "predictor": {
                "minReplicas": min_replicas,
                "scaleTarget": 10,
                "containers": [
                    {"name": "kserve-container", "image": "python", "command": ["serve"]}
                ],
            }
        },
    }


def setup(min_replicas: int) -> tuple[ObjectStore, Router, Runner]:
    store = ObjectStore()
    store.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ml"}})
    store.create(make(min_replicas))
    router = Router(store)
    return store, router, Runner(store, router)


def replicas(store: ObjectStore) -> int:
    dep = store.get(DEPLOYMENTS, "ml", "echo-predictor")
    assert dep is not None
    return int(dep["spec"]["replicas"])


def step(store: ObjectStore, router: Router, runner: Runner, seconds: int) -> None:
    for _ in range(seconds):
        router.now += SECOND
        router.reconcile()
        runner.tick(router.now)


def test_objects_status_and_scale_out_under_load() -> None:
    store, router, runner = setup(1)
    runner.tick(T0)
    svc = store.get(SERVICES, "ml", "echo-predictor")
    assert svc is not None and svc["spec"]["ports"][0]["targetPort"] == 8080
    assert replicas(store) == 1
    step(store, router, runner, 10)
    obj = store.get(INFERENCE_SERVICES, "ml", "echo")
    assert obj is not None
    ready = condition(obj["status"]["conditions"], "Ready")
    assert ready is not None and ready["status"] == "True"
    # 70 requests in flight against 7 per pod (10 x 70 %): panic mode, 10 pods at once.
    router.in_flight = 70
    step(store, router, runner, 6)
    assert replicas(store) == 10
    # The decisions, as the dashboard lists them: the panic window fills over the ticks.
    log = runner.scale_log.recent()[::-1]
    assert [(d.from_replicas, d.to_replicas) for d in log] == [(1, 4), (4, 7), (7, 10)]
    for d in log:
        assert (d.autoscaler, d.namespace, d.name) == ("KPA", "ml", "echo")
        assert d.target == "Deployment/echo-predictor"
        assert d.reason.startswith("panic mode: concurrency ")
        assert d.reason.endswith("target 7.00 per pod")
    assert "70.00 over the panic window" in log[-1].reason


def test_scale_to_zero_after_idling_and_back_on_the_first_request() -> None:
    store, router, runner = setup(0)
    runner.tick(T0)
    assert replicas(store) == 1  # Knative's initial scale
    # Idle: the 60 s stable window averages to 0, then the 30 s grace.
    zero_at = None
    for t in range(200):
        step(store, router, runner, 1)
        if replicas(store) == 0:
            zero_at = t + 1
            break
    # Active a whole stable window (60 s), then the grace (30 s); ticks every 2 s.
    assert zero_at is not None and 60 + 30 <= zero_at <= 60 + 30 + 2, zero_at
    to_zero = runner.scale_log.last("KPA", "ml", "echo")
    assert to_zero is not None and (to_zero.from_replicas, to_zero.to_replicas) == (1, 0)
    assert to_zero.reason.startswith("stable mode: concurrency 0.00 over the stable window")
    step(store, router, runner, 30)
    assert replicas(store) == 0 and not router.pods()
    obj = store.get(INFERENCE_SERVICES, "ml", "echo")
    assert obj is not None
    ready = condition(obj["status"]["conditions"], "Ready")
    assert ready is not None and ready["status"] == "True"  # at zero for want of traffic
    # One request: held, the autoscaler scales to 1 at its next tick, answered once ready.
    router.now += 500
    router.request()
    step(store, router, runner, 10)
    assert replicas(store) >= 1
    assert len(router.answered) == 1
    arrival, answer = router.answered[0]
    # <= one autoscaler tick (2 s) + the pod's start (4 s) + the fake's 1 s steps.
    assert answer - arrival <= 2 * SECOND + START + SECOND, answer - arrival


def test_the_deployment_is_rewritten_only_when_the_predictor_changes() -> None:
    store, router, runner = setup(1)
    runner.tick(T0)
    dep = store.get(DEPLOYMENTS, "ml", "echo-predictor")
    assert dep is not None
    # What the API server and the Deployment controller add is not a change of ours.
    dep["spec"]["template"]["spec"]["containers"][0]["imagePullPolicy"] = "IfNotPresent"
    written = store.update(dep)["metadata"]["resourceVersion"]
    step(store, router, runner, 4)
    dep = store.get(DEPLOYMENTS, "ml", "echo-predictor")
    assert dep is not None and dep["metadata"]["resourceVersion"] == written
    obj = store.get(INFERENCE_SERVICES, "ml", "echo")
    assert obj is not None
    obj["spec"]["predictor"]["containers"][0]["command"] = ["serve", "--fast"]
    store.update(obj)
    step(store, router, runner, 2)
    dep = store.get(DEPLOYMENTS, "ml", "echo-predictor")
    assert dep is not None
    assert dep["spec"]["template"]["spec"]["containers"][0]["command"] == ["serve", "--fast"]
