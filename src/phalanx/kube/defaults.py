"""Defaults kube-apiserver fills in on create, for the built-in kinds whose controllers and
printers rely on them: a Job's selector and its pods' labels (``batch.kubernetes.io/
controller-uid``, ``job-name``), its completions, parallelism, backoffLimit and completionMode;
a Pod's restartPolicy, dnsPolicy, schedulerName, grace period and phase; a Deployment's and a
ReplicaSet's replicas, strategy (25% surge and unavailability), revisionHistoryLimit,
progressDeadlineSeconds and their pod template's; a Service's type and session affinity; a
HorizontalPodAutoscaler's minReplicas, metric and behavior. Values from k8s.io/kubernetes
``pkg/apis/*/v1/defaults.go`` (``autoscaling/v2`` for the HPA) and the Job registry strategy."""

from __future__ import annotations

from typing import Any

from phalanx.kube.kinds import Kind
from phalanx.workloads.kueue_owners import suspend_on_create

__all__ = ["after_create", "before_create"]

_JOB_UID = "batch.kubernetes.io/controller-uid"
_JOB_NAME = "batch.kubernetes.io/job-name"


def _pod_spec(spec: dict[str, Any], restart: str) -> None:
    spec.setdefault("restartPolicy", restart)
    spec.setdefault("dnsPolicy", "ClusterFirst")
    spec.setdefault("schedulerName", "default-scheduler")
    spec.setdefault("terminationGracePeriodSeconds", 30)
    spec.setdefault("securityContext", {})
    for container in spec.get("containers") or []:
        if not isinstance(container, dict):
            continue
        image = str(container.get("image", ""))
        latest = ":" not in image.rsplit("/", 1)[-1] or image.endswith(":latest")
        container.setdefault("imagePullPolicy", "Always" if latest else "IfNotPresent")
        container.setdefault("terminationMessagePath", "/dev/termination-log")
        container.setdefault("terminationMessagePolicy", "File")
        container.setdefault("resources", {})


def _hpa(spec: dict[str, Any]) -> None:
    """``autoscaling/v2`` ``SetDefaults_HorizontalPodAutoscaler``: minReplicas 1, cpu at 80 %
    when no metric is given; a given ``behavior`` gets its missing rules and fields (the
    scale-down window stays unset: the controller's flag decides it)."""
    spec.setdefault("minReplicas", 1)
    if not spec.get("metrics"):
        target = {"type": "Utilization", "averageUtilization": 80}
        spec["metrics"] = [{"type": "Resource", "resource": {"name": "cpu", "target": target}}]
    behavior = spec.get("behavior")
    if not isinstance(behavior, dict):
        return
    up = behavior.setdefault("scaleUp", {})
    if isinstance(up, dict):
        up.setdefault("stabilizationWindowSeconds", 0)
        up.setdefault("selectPolicy", "Max")
        up.setdefault(
            "policies",
            [
                {"type": "Pods", "value": 4, "periodSeconds": 15},
                {"type": "Percent", "value": 100, "periodSeconds": 15},
            ],
        )
    down = behavior.setdefault("scaleDown", {})
    if isinstance(down, dict):
        down.setdefault("selectPolicy", "Max")
        down.setdefault("policies", [{"type": "Percent", "value": 100, "periodSeconds": 15}])


def _apps(kind: str, spec: dict[str, Any]) -> None:
    """``SetDefaults_Deployment`` and ``SetDefaults_ReplicaSet`` (apps/v1)."""
    spec.setdefault("replicas", 1)
    if kind == "Deployment":
        strategy = spec.setdefault("strategy", {})
        if isinstance(strategy, dict):
            strategy.setdefault("type", "RollingUpdate")
            if strategy["type"] == "RollingUpdate":
                rolling = strategy.setdefault("rollingUpdate", {})
                if isinstance(rolling, dict):
                    rolling.setdefault("maxUnavailable", "25%")
                    rolling.setdefault("maxSurge", "25%")
        spec.setdefault("revisionHistoryLimit", 10)
        spec.setdefault("progressDeadlineSeconds", 600)
    template = spec.get("template")
    if isinstance(template, dict) and isinstance(template.get("spec"), dict):
        _pod_spec(template["spec"], "Always")


def before_create(kind: Kind, obj: dict[str, Any]) -> None:
    """Defaults that do not depend on the object's uid (filled in place)."""
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        return
    if kind.group == "" and kind.kind == "Pod":
        _pod_spec(spec, "Always")
        obj.setdefault("status", {"phase": "Pending", "qosClass": "BestEffort"})
    elif kind.group == "batch" and kind.kind == "Job":
        spec.setdefault("parallelism", 1)
        if spec.get("completions") is None and spec.get("completionMode") != "Indexed":
            spec.setdefault("completions", 1 if spec["parallelism"] == 1 else None)
            if spec["completions"] is None:
                del spec["completions"]
        spec.setdefault("backoffLimit", 6)
        spec.setdefault("completionMode", "NonIndexed")
        spec.setdefault("suspend", False)
        suspend_on_create(obj)  # Kueue's webhook, for a Job with a queue name
        spec.setdefault("podReplacementPolicy", "TerminatingOrFailed")
        template = spec.get("template")
        if isinstance(template, dict) and isinstance(template.get("spec"), dict):
            _pod_spec(template["spec"], "Never")
    elif (kind.group, kind.kind) in (("kubeflow.org", "PyTorchJob"), ("jobset.x-k8s.io", "JobSet")):
        suspend_on_create(obj)  # Kueue's webhooks for these kinds
    elif kind.group == "autoscaling" and kind.kind == "HorizontalPodAutoscaler":
        _hpa(spec)
    elif kind.group == "apps" and kind.kind in ("Deployment", "ReplicaSet"):
        _apps(kind.kind, spec)
    elif kind.group == "" and kind.kind == "Service":
        spec.setdefault("type", "ClusterIP")
        spec.setdefault("sessionAffinity", "None")
        for port in spec.get("ports") or []:
            if isinstance(port, dict):
                port.setdefault("protocol", "TCP")
                port.setdefault("targetPort", port.get("port"))


def after_create(kind: Kind, obj: dict[str, Any]) -> bool:
    """Defaults that need the uid the store gave (a Job's selector); True if any changed."""
    if not (kind.group == "batch" and kind.kind == "Job"):
        return False
    spec = obj.get("spec")
    if not isinstance(spec, dict) or spec.get("manualSelector"):
        return False
    meta = obj["metadata"]
    uid, name = meta["uid"], meta["name"]
    spec["selector"] = {"matchLabels": {_JOB_UID: uid}}
    template = spec.setdefault("template", {})
    if isinstance(template, dict):
        labels = template.setdefault("metadata", {}).setdefault("labels", {})
        labels.update({_JOB_UID: uid, _JOB_NAME: name, "controller-uid": uid, "job-name": name})
        if not meta.get("labels"):
            meta["labels"] = dict(labels)  # SetDefaults_Job: a Job without labels takes its pods'
    return True
