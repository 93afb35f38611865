"""The HPA controller against the object store, at simulation speed: a Deployment under a CPU
load that steps from 1x to 10x and back, with a fake clock, a fake metrics source and a
stand-in for the Deployment's reconciler (pods appear running and ready after a start delay)."""

from __future__ import annotations

from dataclasses import dataclass
from itertools import pairwise
from typing import Any

import pytest

from phalanx.domain.time import SECOND
from phalanx.kube.autoscalers import HPAS, PODS, Autoscalers, ServiceLoad
from phalanx.kube.store import ObjectStore
from phalanx.workloads.conditions import condition
from phalanx.workloads.hpa_metrics import Sample
from phalanx.workloads.timestamps import rfc3339

T0 = 1_764_613_704_000
DEPLOYMENTS = ("apps", "deployments")
REQUEST_M = 200
START_DELAY = 3 * SECOND
"""From pod creation to Running and Ready (a Python process starting)."""


class Cluster:
    """Pods that follow the Deployment's replicas, and the CPU each uses: the load shared
    equally by the ready pods."""

    def __init__(self, store: ObjectStore) -> None:
        self.store = store
        self.load_m = 0
        self.seq = 0
        self.now = T0

    def reconcile(self) -> None:
        dep = self.store.get(DEPLOYMENTS, "default", "web")
        assert dep is not None
        want = dep["spec"]["replicas"]
        pods = self.store.list(PODS, "default", {"app": "web"})
        for pod in pods[want:]:
            self.store.delete(PODS, "default", pod["metadata"]["name"])
        for _ in range(want - len(pods)):
            self.seq += 1
            self.store.create(
                {
                    "apiVersion": "v1",
                    "kind": "Pod",
                    "metadata": {
                        "name": f"web-{self.seq:03d}",
                        "namespace": "default",
                        "labels": {"app": "web"},
                        "annotations": {"test/created": str(self.now)},
                    },
                    "spec": {
                        "containers": [
                            {
                                "name": "web",
                                "image": "python",
                                "resources": {"requests": {"cpu": f"{REQUEST_M}m"}},
                            }
                        ]
                    },
                }
            )
        for pod in self.store.list(PODS, "default", {"app": "web"}):
            born = int(pod["metadata"]["annotations"]["test/created"])
            if pod["status"].get("phase") != "Running" and self.now >= born + START_DELAY:
                at = rfc3339(self.now)
                pod["status"] = {
                    "phase": "Running",
                    "startTime": at,
                    "conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": at}],
                }
                self.store.update_status(pod)

    def ready(self) -> list[str]:
        pods = self.store.list(PODS, "default", {"app": "web"})
        return [p["metadata"]["name"] for p in pods if p["status"].get("phase") == "Running"]

    # MetricsSource
    def pod_cpu(self, namespace: str, pod: str) -> Sample | None:
        ready = self.ready()
        if pod not in ready:
            return None
        # metrics-server: a sample over the last 15 s.
        return Sample(self.load_m // len(ready), self.now, 15 * SECOND)

    def service_load(self, namespace: str, service: str) -> ServiceLoad | None:
        return None

    def pod_load(self, namespace: str, pod: str) -> ServiceLoad | None:
        return None


def setup(behavior: dict[str, Any] | None) -> tuple[ObjectStore, Cluster, Autoscalers]:
    clock = [T0]
    store = ObjectStore(clock=lambda: clock[0] / 1000)
    cluster = Cluster(store)
    store.create(
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": "web", "namespace": "default"},
            "spec": {
                "replicas": 1,
                "selector": {"matchLabels": {"app": "web"}},
                "template": {"metadata": {"labels": {"app": "web"}}, "spec": {}},
            },
        }
    )
    spec: dict[str, Any] = {
        "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
        "minReplicas": 1,
        "maxReplicas": 10,
        "metrics": [
            {
                "type": "Resource",
                "resource": {
                    "name": "cpu",
                    "target": {"type": "Utilization", "averageUtilization": 50},
                },
            }
        ],
    }
    if behavior is not None:
        spec["behavior"] = behavior
    store.create(
        {
            "apiVersion": "autoscaling/v2",
            "kind": "HorizontalPodAutoscaler",
            "metadata": {"name": "web", "namespace": "default"},
            "spec": spec,
        }
    )
    return store, cluster, Autoscalers(store, cluster)


def replicas(store: ObjectStore) -> int:
    dep = store.get(DEPLOYMENTS, "default", "web")
    assert dep is not None
    return int(dep["spec"]["replicas"])


@dataclass
class Run:
    first: float = -1.0
    """Seconds from the 10x step to the first scale-out."""
    up: float = -1.0
    """... to 10 replicas."""
    down: float = -1.0
    """Seconds from the drop back to 1x to 1 replica."""


def run_step(
    behavior: dict[str, Any] | None, phase: int = 7
) -> tuple[Run, ObjectStore, Autoscalers]:
    """The step happens ``phase`` seconds after a sync."""
    store, cluster, scaler = setup(behavior)
    cluster.load_m = 100  # 1x: one pod at 50 % of its 200m request
    step_at = T0 + (90 + phase) * SECOND
    drop_at = step_at + 200 * SECOND
    run = Run()
    for t in range(T0, drop_at + 400 * SECOND, SECOND):
        cluster.now = t
        if t == step_at:
            cluster.load_m = 1000  # 10x
        if t == drop_at:
            cluster.load_m = 100
        cluster.reconcile()
        scaler.tick(t)
        if t < step_at:
            assert replicas(store) == 1
        if t >= step_at and run.first < 0 and replicas(store) > 1:
            run.first = (t - step_at) / 1000
        if t >= step_at and run.up < 0 and replicas(store) == 10:
            run.up = (t - step_at) / 1000
        if t >= drop_at and run.down < 0 and replicas(store) == 1:
            run.down = (t - drop_at) / 1000
    return run, store, scaler


@pytest.mark.parametrize("phase", [0, 7, 14])
def test_step_up_within_30s_and_back_after_the_window(phase: int) -> None:
    """The default behavior (given): the first scale-out at the first sync after the step
    (<= 15 s), 1 -> 5 (+4 per 15 s), then 10 once the new pods' CPU samples count (their
    first sample must cover only time after they became ready: one 15 s metrics window)."""
    run, store, scaler = run_step({}, phase)
    assert 0 <= run.first <= 15, run
    assert run.up <= 45, run
    # 300 s after the last sync that still saw the load (up to 15 s before the drop).
    assert 300 - 15 <= run.down <= 300 + 15, run
    hpa = store.get(HPAS, "default", "web")
    assert hpa is not None
    status = hpa["status"]
    assert status["currentReplicas"] == 1 and status["desiredReplicas"] == 1
    assert status["currentMetrics"][0]["resource"]["current"]["averageUtilization"] == 50
    active = condition(status["conditions"], "ScalingActive")
    assert active is not None and active["reason"] == "ValidMetricFound"
    events = [
        e["message"]
        for e in store.list(("", "events"), "default")
        if e["reason"] == "SuccessfulRescale"
    ]
    assert events[0].startswith("New size: 5; reason: cpu resource utilization")
    assert events[-1] == "New size: 1; reason: All metrics below target"
    # The dashboard's log of the same decisions: one per SuccessfulRescale, from -> to.
    log = scaler.scale_log.recent()[::-1]
    assert len(log) == len(events)
    assert (log[0].from_replicas, log[0].to_replicas) == (1, 5)
    assert all(a.to_replicas == b.from_replicas for a, b in pairwise(log))
    assert log[-1].to_replicas == 1 and log[-1].reason == "All metrics below target"
    assert {(d.autoscaler, d.name, d.target) for d in log} == {
        ("HorizontalPodAutoscaler", "web", "Deployment/web")
    }
    for d, message in zip(log, events, strict=True):
        assert message == f"New size: {d.to_replicas}; reason: {d.reason}"


def test_step_without_behavior_takes_the_older_rate() -> None:
    # max(2 x current, 4) per 15 s sync: 1 -> 4 -> 8 -> 10.
    run, _, _ = run_step(None)
    assert 0 <= run.first <= 15, run
    assert run.up <= 60, run
    # 300 s after the last sync that still saw the load (up to 15 s before the drop).
    assert 300 - 15 <= run.down <= 300 + 15, run


def test_a_missing_target_is_reported() -> None:
    store, _, scaler = setup(None)
    store.delete(DEPLOYMENTS, "default", "web")
    scaler.tick(T0)
    hpa = store.get(HPAS, "default", "web")
    assert hpa is not None
    able = condition(hpa["status"]["conditions"], "AbleToScale")
    assert able is not None and able["status"] == "False" and able["reason"] == "FailedGetScale"


def test_no_metrics_yet_keeps_the_scale_and_says_why() -> None:
    store, cluster, scaler = setup(None)
    cluster.reconcile()  # the pod exists but is not running yet: no sample
    scaler.tick(T0)
    assert replicas(store) == 1
    hpa = store.get(HPAS, "default", "web")
    assert hpa is not None
    active = condition(hpa["status"]["conditions"], "ScalingActive")
    assert active is not None and active["reason"] == "FailedGetResourceMetric"


def test_a_failing_metric_warns_once_and_counts_the_repeats() -> None:
    store, cluster, scaler = setup(None)
    cluster.reconcile()  # the pod is not running: no sample, sync after sync
    for i in range(3):
        scaler.tick(T0 + i * 15 * SECOND)
    warnings = {
        e["reason"]: e for e in store.list(("", "events"), "default") if e["type"] == "Warning"
    }
    assert set(warnings) == {"FailedGetResourceMetric", "FailedComputeMetricsReplicas"}
    assert warnings["FailedGetResourceMetric"]["message"].startswith(
        "failed to get cpu utilization: "
    )
    summary = warnings["FailedComputeMetricsReplicas"]
    assert summary["message"].startswith("invalid metrics (1 invalid out of 1), first error is: ")
    assert summary["count"] == 3
