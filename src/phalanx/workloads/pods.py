"""Pods as the tasks of engine jobs: making them, and their status from their engine job.

Engine state -> pod phase: PENDING (and REQUEUED, PREEMPTED, SUSPENDED: waiting to run again)
-> Pending, with ``PodScheduled`` False saying the engine's reason and expected start;
RUNNING and COMPLETING -> Running (``nodeName``, ``startTime``, the container running; where
the node's agent reports the container, ``EngineJob.containers``, its state, ``ready``,
``started``, ``restartCount`` and ``lastState`` as reported, and the ``Ready`` and
``ContainersReady`` conditions follow ``ready``; a container without a report is ready, as a
pod without a readiness probe is);
COMPLETED -> Succeeded (exit 0); FAILED, TIMEOUT, NODE_FAIL, OUT_OF_MEMORY, CANCELLED -> Failed
(``terminated.exitCode``; reason OOMKilled, DeadlineExceeded or Error). A gang's pods share
their engine job's outcome: its exit code is the one the engine keeps (the worst task's).
"""

from __future__ import annotations

import copy
import hashlib
from collections.abc import Mapping
from typing import Any

from phalanx.domain.state import JobState
from phalanx.domain.time import Instant
from phalanx.workloads.conditions import condition, set_condition
from phalanx.workloads.events import event
from phalanx.workloads.plan import (
    ANNOTATION_JOB_ID,
    ANNOTATION_KEY,
    ANNOTATION_RANK,
    ANNOTATION_RESTARTS,
    EngineJob,
)
from phalanx.workloads.podevents import container_events
from phalanx.workloads.podspec import LOCALHOST
from phalanx.workloads.timestamps import rfc3339

__all__ = [
    "ACTIVE_PHASES",
    "RUNS_ON_HOST",
    "controller_ref",
    "engine_id",
    "is_active",
    "is_ready",
    "json_copy",
    "new_pod",
    "phase",
    "pod_events",
    "pod_status",
    "pod_uid",
    "ready_since",
    "refresh",
]

ACTIVE_PHASES = frozenset({"Pending", "Running"})
RUNS_ON_HOST = "phalanx.io/RunsOnHost"
"""A pod condition saying that its image was recorded and its command runs on the host."""


def json_copy(obj: Mapping[str, Any]) -> dict[str, Any]:
    """A deep copy of a JSON object (dicts, lists, scalars), several times faster than
    ``copy.deepcopy``, which also keeps identities and copies any type: reconcilers copy
    templates and statuses read from the object store, which hold JSON values only."""
    return {k: _copy_value(v) for k, v in obj.items()}


def _copy_value(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _copy_value(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_copy_value(v) for v in value]
    return value


_WAITING = frozenset({JobState.PENDING, JobState.REQUEUED, JobState.PREEMPTED, JobState.SUSPENDED})
_RUNNING = frozenset({JobState.RUNNING, JobState.COMPLETING})


def controller_ref(owner: Mapping[str, Any]) -> dict[str, Any]:
    meta = owner.get("metadata") or {}
    return {
        "apiVersion": owner.get("apiVersion", ""),
        "kind": owner.get("kind", ""),
        "name": meta.get("name", ""),
        "uid": meta.get("uid", ""),
        "controller": True,
        "blockOwnerDeletion": True,
    }


def new_pod(
    owner: Mapping[str, Any],
    name: str,
    template: Mapping[str, Any],
    *,
    labels: Mapping[str, str],
    annotations: Mapping[str, str],
    now: Instant,
    hostname: str | None = None,
    restart_policy: str | None = None,
) -> dict[str, Any]:
    """A pod of ``owner`` from its template: the template's labels and annotations with the
    controller's added, owned by ``owner`` (controller, blocking its deletion), Pending, with
    its uid (``pod_uid``) already."""
    meta = template.get("metadata") or {}
    spec = json_copy(template.get("spec") or {})
    if hostname is not None:
        spec["hostname"] = hostname
    if restart_policy is not None:
        spec["restartPolicy"] = restart_policy
    spec.setdefault("restartPolicy", "Always")
    spec.setdefault("schedulerName", "phalanx")
    owner_meta = owner.get("metadata") or {}
    namespace = owner_meta.get("namespace", "default")
    image = _image(spec)
    key = str(annotations.get(ANNOTATION_KEY, ""))
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "uid": pod_uid(str(owner_meta.get("uid", "")), name, key, now),
            "labels": {**(meta.get("labels") or {}), **labels},
            "annotations": {**(meta.get("annotations") or {}), **annotations},
            "ownerReferences": [controller_ref(owner)],
        },
        "spec": spec,
        "status": {
            "phase": "Pending",
            "conditions": [_host_condition(image, now)],
            "qosClass": "BestEffort",
        },
    }


def pod_uid(owner_uid: str, name: str, key: str, now: Instant) -> str:
    """The uid of a pod a controller makes, known before the pod is stored, so that its
    environment can hold it (``fieldRef: metadata.uid``): a UUID (version 5 in form) drawn
    from the owner's uid, the pod's name, its submission key and the time it is made, so
    that a plan carried out twice makes the same pod, and a pod made again a new one."""
    digest = bytearray(hashlib.sha1(f"{owner_uid}/{name}/{key}/{now}".encode()).digest()[:16])
    digest[6] = (digest[6] & 0x0F) | 0x50  # version 5
    digest[8] = (digest[8] & 0x3F) | 0x80  # RFC 4122 variant
    text = digest.hex()
    return f"{text[:8]}-{text[8:12]}-{text[12:16]}-{text[16:20]}-{text[20:]}"


def engine_id(pod: Mapping[str, Any]) -> int | None:
    """The engine job ``pod`` runs as, once its submission was taken."""
    value = ((pod.get("metadata") or {}).get("annotations") or {}).get(ANNOTATION_JOB_ID)
    try:
        return int(value) if value is not None else None
    except ValueError:
        return None


def phase(pod: Mapping[str, Any]) -> str:
    return str((pod.get("status") or {}).get("phase", "Pending"))


def is_active(pod: Mapping[str, Any]) -> bool:
    return phase(pod) in ACTIVE_PHASES


def is_ready(pod: Mapping[str, Any]) -> bool:
    """Running and ``Ready``: the pod's ``Ready`` condition where it has one, else running is
    ready (Kubernetes' rule for a container without a readinessProbe)."""
    if phase(pod) != "Running":
        return False
    ready = condition((pod.get("status") or {}).get("conditions") or (), "Ready")
    return ready is None or ready.get("status") == "True"


def ready_since(pod: Mapping[str, Any]) -> str | None:
    """When a ready pod became ready (RFC 3339): its ``Ready`` condition's transition, else
    its start; None if it is not ready."""
    if not is_ready(pod):
        return None
    status = pod.get("status") or {}
    ready = condition(status.get("conditions") or (), "Ready")
    since = ready.get("lastTransitionTime") if ready is not None else None
    return str(since or status.get("startTime") or "") or None


def pod_status(pod: Mapping[str, Any], job: EngineJob | None, now: Instant) -> dict[str, Any]:
    """``pod``'s status as ``job`` (its engine job; None: not yet submitted) makes it. A pod
    that has ended stays as it ended (pods never leave Succeeded or Failed)."""
    old = pod.get("status") or {}
    if old.get("phase") in ("Succeeded", "Failed"):
        return json_copy(old)
    status = json_copy(old)
    conditions: list[dict[str, Any]] = status.setdefault("conditions", [])
    if job is None or job.state in _WAITING:
        status["phase"] = "Pending"
        if job is not None and job.reason not in ("", "None"):  # None: not looked at yet
            set_condition(conditions, "PodScheduled", False, "Unschedulable", _why(job), now)
        return status
    meta = pod.get("metadata") or {}
    rank = int((meta.get("annotations") or {}).get(ANNOTATION_RANK, 0))
    if job.state is JobState.RUNNING and job.nodes and rank >= len(job.nodes):
        # A rank an elastic job does not run now (not grown to it yet, or shrunk off it):
        # the pod waits for the job to grow, as an unschedulable pod waits for room.
        status["phase"] = "Pending"
        status.pop("containerStatuses", None)
        for kind in ("ContainersReady", "Ready"):
            if condition(conditions, kind) is not None:
                set_condition(conditions, kind, False, "ContainersNotReady", "", now)
        message = f"the elastic job runs {len(job.nodes)} ranks: this one waits for it to grow"
        set_condition(conditions, "PodScheduled", False, "Unschedulable", message, now)
        return status
    address = job.addresses[rank] if rank < len(job.addresses) else LOCALHOST
    started = rfc3339(job.start if job.start is not None else now)
    status.update(hostIP=address, podIP=address, startTime=status.get("startTime", started))
    status["hostIPs"] = [{"ip": address}]
    status["podIPs"] = [{"ip": address}]
    container = _container(pod)
    base = {
        "name": container.get("name", ""),
        "image": container.get("image", ""),
        "imageID": "",
        "containerID": f"phalanx://{job.id}.{rank}",
        "restartCount": job.restarts
        + int((meta.get("annotations") or {}).get(ANNOTATION_RESTARTS, 0)),
    }
    set_condition(conditions, "PodScheduled", True, "", "", now)
    if job.state in _RUNNING:
        status["phase"] = "Running"
        view = job.containers[rank] if rank < len(job.containers) else None
        # Not reported yet: ready unless a probe has to say so first (Kubernetes' rule for
        # a pod without a readiness probe is: ready while it runs).
        gated = any(container.get(k) for k in ("readinessProbe", "startupProbe"))
        ready = view.ready if view is not None else not gated
        for kind in ("PodReadyToStartContainers", "Initialized"):
            set_condition(conditions, kind, True, "", "", now)
        unready = f"containers with unready status: [{base['name']}]"
        for kind in ("ContainersReady", "Ready"):
            if ready:
                set_condition(conditions, kind, True, "", "", now)
            else:
                set_condition(conditions, kind, False, "ContainersNotReady", unready, now)
        if view is None:
            running: dict[str, Any] = {
                **base,
                "ready": ready,
                "started": not container.get("startupProbe"),
                "state": {"running": {"startedAt": started}},
            }
        else:
            running = {
                **base,
                "restartCount": base["restartCount"] + view.restart_count,
                "ready": view.ready,
                "started": view.started,
                "state": copy.deepcopy(dict(view.state)),
            }
            if view.last_state:
                running["lastState"] = copy.deepcopy(dict(view.last_state))
        status["containerStatuses"] = [running]
        return status
    ok = job.state is JobState.COMPLETED
    code, reason = _exit(job)
    status["phase"] = "Succeeded" if ok else "Failed"
    if job.state is JobState.TIMEOUT:
        status["reason"] = "DeadlineExceeded"
        status["message"] = "Pod was active on the node longer than the specified deadline"
    for kind in ("ContainersReady", "Ready"):
        set_condition(conditions, kind, False, "PodCompleted" if ok else "PodFailed", "", now)
    terminated = {
        "exitCode": code,
        "reason": reason,
        "startedAt": started,
        "finishedAt": rfc3339(job.end if job.end is not None else now),
        "containerID": base["containerID"],
    }
    if job.signal:
        terminated["signal"] = job.signal
    status["containerStatuses"] = [
        {**base, "ready": False, "started": False, "state": {"terminated": terminated}}
    ]
    return status


def refresh(
    pod: Mapping[str, Any], job: EngineJob | None, now: Instant, seq: int = 0
) -> tuple[dict[str, Any] | None, list[dict[str, Any]]]:
    """``pod`` as ``job`` leaves it now (``spec.nodeName`` bound once it runs), or None if
    unchanged, and the events of the change (their ``seq`` from ``seq`` on)."""
    status = pod_status(pod, job, now)
    spec = pod.get("spec") or {}
    node = spec.get("nodeName")
    if job is not None and node is None and job.state not in _WAITING:
        rank = int(((pod.get("metadata") or {}).get("annotations") or {}).get(ANNOTATION_RANK, 0))
        node = job.nodes[rank] if rank < len(job.nodes) else None
    if status == pod.get("status") and node == spec.get("nodeName"):
        return None, []
    new = json_copy(pod)
    new["status"] = status
    if node is not None:
        new.setdefault("spec", {})["nodeName"] = node
    events = pod_events(pod, new, now, seq)
    rank = int(((pod.get("metadata") or {}).get("annotations") or {}).get(ANNOTATION_RANK, 0))
    view = job.containers[rank] if job is not None and rank < len(job.containers) else None
    if view is not None:
        events += container_events(pod, new, view.probe_message, now, seq + len(events))
    return new, events


def pod_events(
    pod: Mapping[str, Any], new: Mapping[str, Any], now: Instant, seq: int = 0
) -> list[dict[str, Any]]:
    """The events a scheduler and kubelet would record as ``pod`` becomes ``new``:
    FailedScheduling (when the reason changes), Scheduled and Started."""
    old = pod.get("status") or {}
    status = new.get("status") or {}
    out: list[dict[str, Any]] = []
    before = condition(old.get("conditions") or (), "PodScheduled")
    after = condition(status.get("conditions") or (), "PodScheduled")
    if (
        after is not None
        and after.get("status") == "False"
        and (before is None or before.get("message") != after.get("message"))
    ):
        out.append(
            event(
                pod,
                "FailedScheduling",
                str(after.get("message", "")),
                now,
                seq=seq,
                warning=True,
                component="default-scheduler",
            )
        )
    if (
        (before is None or before.get("status") != "True")
        and after is not None
        and (after.get("status") == "True")
    ):
        meta = pod.get("metadata") or {}
        node = (new.get("spec") or {}).get("nodeName", "")
        out.append(
            event(
                pod,
                "Scheduled",
                f"Successfully assigned {meta.get('namespace')}/{meta.get('name')} to {node}",
                now,
                seq=seq + len(out),
                component="default-scheduler",
            )
        )
        out.append(
            event(
                pod,
                "Started",
                f"Started container {_container(pod).get('name', '')}",
                now,
                seq=seq + len(out),
                component="kubelet",
            )
        )
    return out


def _why(job: EngineJob) -> str:
    text = job.reason or "Pending"
    if job.message:
        text += f": {job.message}"
    if job.expected_start is not None:
        text += f"; expected to start at {rfc3339(job.expected_start)}"
    return text


def _exit(job: EngineJob) -> tuple[int, str]:
    if job.state is JobState.COMPLETED:
        return 0, "Completed"
    if job.state is JobState.OUT_OF_MEMORY:
        return 137, "OOMKilled"
    code = job.exit_code if job.exit_code else (128 + job.signal if job.signal else 1)
    if job.state is JobState.TIMEOUT:
        return code, "DeadlineExceeded"
    return code, "Error"


def _container(pod: Mapping[str, Any]) -> Mapping[str, Any]:
    containers = (pod.get("spec") or {}).get("containers") or [{}]
    first: Mapping[str, Any] = containers[0]
    return first


def _image(spec: Mapping[str, Any]) -> str:
    containers = spec.get("containers") or [{}]
    return str(containers[0].get("image", ""))


def _host_condition(image: str, now: Instant) -> dict[str, Any]:
    return {
        "type": RUNS_ON_HOST,
        "status": "True",
        "reason": "NoContainerRuntime",
        "message": f"image {image or '(none)'} is recorded, not pulled: the container's "
        "command runs as a process on the node",
        "lastProbeTime": None,
        "lastTransitionTime": rfc3339(now),
    }
