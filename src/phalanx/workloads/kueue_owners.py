"""What Kueue's integrations know of each kind of owner (sans-IO): where its suspend flag
lives, its pod sets, and when it has finished.

Kueue suspends a workload labelled ``kueue.x-k8s.io/queue-name`` when it is created (its
webhooks) and lifts the flag once the workload's ``Workload`` is admitted; a workload that
loses its admission (preempted) is suspended again, which makes its controller delete its
pods. The flag: ``spec.suspend`` of a ``batch/v1`` Job and a JobSet,
``spec.runPolicy.suspend`` of a Kubeflow PyTorchJob. A Volcano Job has none (Volcano holds
its PodGroup Pending/Inqueue instead): its admission shows only in its Workload and in its
pods, which do not exist before it.

Pod sets (Kueue's ``spec.podSets``): a Job's one ``main`` of ``parallelism`` pods; a
PyTorchJob's one per replica type, lower-cased (``master``, ``worker``); a JobSet's one per
replicated Job (replicas x parallelism pods); a Volcano Job's one per task.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from phalanx.domain.queues import QUEUE_NAME_LABEL
from phalanx.workloads.conditions import condition, is_true

__all__ = [
    "finished_of",
    "has_suspend",
    "is_suspended",
    "pod_sets",
    "queue_of",
    "suspend_on_create",
    "with_suspend",
]

_VOLCANO_DONE = {"Completed": True, "Failed": False, "Aborted": False, "Terminated": False}


def queue_of(obj: Mapping[str, Any]) -> str | None:
    """The LocalQueue the object's ``kueue.x-k8s.io/queue-name`` label names, or None; None
    too for a Job that another workload controls (a JobSet's child: Kueue's Job integration
    leaves it to its parent's)."""
    meta = obj.get("metadata") or {}
    if any(r.get("controller") for r in meta.get("ownerReferences") or ()):
        return None
    value = (meta.get("labels") or {}).get(QUEUE_NAME_LABEL)
    return str(value) if value else None


def _is_volcano(obj: Mapping[str, Any]) -> bool:
    return str(obj.get("apiVersion", "")).startswith("batch.volcano.sh/")


def has_suspend(obj: Mapping[str, Any]) -> bool:
    """Whether the kind has a suspend flag Kueue drives (module docstring)."""
    return obj.get("kind") in ("Job", "JobSet", "PyTorchJob") and not _is_volcano(obj)


def _holder(spec: Mapping[str, Any], kind: object) -> Mapping[str, Any]:
    """The mapping that holds ``suspend`` in ``spec``."""
    if kind == "PyTorchJob":
        run = spec.get("runPolicy")
        return run if isinstance(run, Mapping) else {}
    return spec


def is_suspended(obj: Mapping[str, Any]) -> bool:
    """The owner's suspend flag as stored (False for a kind without one)."""
    if not has_suspend(obj):
        return False
    spec = obj.get("spec")
    return isinstance(spec, Mapping) and bool(_holder(spec, obj.get("kind")).get("suspend"))


def with_suspend(obj: Mapping[str, Any], value: bool) -> dict[str, Any]:
    """A shallow copy of ``obj`` whose suspend flag is ``value`` (``obj`` itself is left
    alone; a kind without a flag comes back as it is)."""
    out = copy.copy(dict(obj))
    if not has_suspend(obj):
        return out
    spec = dict(obj.get("spec") or {})
    if obj.get("kind") == "PyTorchJob":
        spec["runPolicy"] = {**(spec.get("runPolicy") or {}), "suspend": value}
    else:
        spec["suspend"] = value
    out["spec"] = spec
    return out


def suspend_on_create(obj: dict[str, Any]) -> None:
    """Kueue's webhook on a new workload with a queue name: its suspend flag becomes true."""
    spec = obj.get("spec")
    if queue_of(obj) is None or not isinstance(spec, dict) or not has_suspend(obj):
        return
    if obj.get("kind") == "PyTorchJob":
        run = spec.get("runPolicy")
        if not isinstance(run, dict):
            run = spec["runPolicy"] = {}
        run["suspend"] = True
    else:
        spec["suspend"] = True


def pod_sets(obj: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Kueue's ``spec.podSets`` of the owner (module docstring)."""
    spec = obj.get("spec") or {}
    kind = obj.get("kind")
    out: list[dict[str, Any]] = []
    if kind == "PyTorchJob":
        for name, rs in (spec.get("pytorchReplicaSpecs") or {}).items():
            count = _int((rs or {}).get("replicas"), 1)
            out.append({"name": str(name).lower(), "count": count, "template": _t(rs)})
    elif kind == "JobSet":
        for rj in spec.get("replicatedJobs") or ():
            job_spec = ((rj or {}).get("template") or {}).get("spec") or {}
            count = _int(rj.get("replicas"), 1) * _int(job_spec.get("parallelism"), 1)
            out.append({"name": str(rj.get("name")), "count": count, "template": _t(job_spec)})
    elif kind == "Job" and not _is_volcano(obj):
        count = _int(spec.get("parallelism"), 1)
        out.append({"name": "main", "count": count, "template": _t(spec)})
    else:
        for task in spec.get("tasks") or ():
            count = _int((task or {}).get("replicas"), 1)
            out.append({"name": str(task.get("name")), "count": count, "template": _t(task)})
    return out


def _int(value: object, default: int) -> int:
    if value is None:
        return default
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _t(holder: Mapping[str, Any] | None) -> dict[str, Any]:
    template = (holder or {}).get("template")
    return dict(template) if isinstance(template, dict) else {}


def finished_of(obj: Mapping[str, Any]) -> tuple[bool, str] | None:
    """(succeeded, message) once the owner is done, else None: a Job's Complete or Failed,
    a PyTorchJob's Succeeded or Failed, a JobSet's Completed or Failed condition, a Volcano
    Job's final phase."""
    status = obj.get("status") or {}
    if _is_volcano(obj):
        phase = str((status.get("state") or {}).get("phase") or "")
        if phase in _VOLCANO_DONE:
            return _VOLCANO_DONE[phase], f"Job {phase.lower()}"
        return None
    conditions = status.get("conditions") or ()
    done = {"PyTorchJob": "Succeeded", "Job": "Complete"}.get(str(obj.get("kind")), "Completed")
    for kind, ok in ((done, True), ("Failed", False)):
        if is_true(conditions, kind):
            found = condition(conditions, kind) or {}
            if ok and obj.get("kind") == "Job":
                return True, "Job finished successfully"  # Kueue's words for a Job
            default = "Job finished successfully" if ok else "Job failed"
            return ok, str(found.get("message") or default)
    return None
