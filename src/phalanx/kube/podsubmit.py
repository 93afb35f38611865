"""The workload runner's engine submissions of pods (``phalanx.kube.controllers``): the
checks made before one is queued, and what a refused one leaves on its pods. Submissions
queued during a drain are journaled together at its end (``Controller.submit_each``): one
fsync for every pod the drain submits, rather than one each on the event loop."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from phalanx.domain.jobspec import JobSpec
from phalanx.domain.time import Instant
from phalanx.errors import SpecError
from phalanx.kube.workload_ports import PODS, Engine, Key, Obj, Store
from phalanx.workloads.events import event

__all__ = ["Queued", "check", "unschedulable"]

Queued = tuple[Key, str, str, JobSpec, Sequence[str]]
"""A submission waiting for the end of the drain: (workload, namespace, idempotency key,
spec, its pods' names by rank)."""


def check(spec: JobSpec, engine: Engine, known_user: Callable[[str], bool]) -> None:
    """Raise ``PhalanxError`` for a request that can never run here; make the directories of
    its output files (the agents open them but make no directories, nor does Slurm)."""
    for out in {spec.output, *(t.output for t in spec.tasks)}:
        if out:
            Path(out).parent.mkdir(parents=True, exist_ok=True)
    if not known_user(spec.user):
        # The controller launches a job as the user's uid; an unknown name cannot start
        # (and must not reach the engine, which would retry its launch).
        raise SpecError(f'Invalid user id: "{spec.user}" is not a user on this machine')
    engine.check(spec)


def unschedulable(
    store: Store,
    namespace: str,
    pods: Sequence[str],
    message: str,
    now: Instant,
    write: Callable[..., Any],
    held: Mapping[str, Obj] | None = None,
) -> tuple[list[Obj], bool]:
    """A refused request's pods say why and stay Pending (``PodScheduled`` False,
    ``Unschedulable``), written with ``write(store.update_status, pod)``. A pod in ``held``
    (a queued owner's, held back from the store: ``phalanx.kube.podgate``) is changed
    there instead. Returns the ``FailedScheduling`` Events to record, and whether a held
    pod was among them (its owner's Workload then says why, as Kueue's would)."""
    events = []
    any_held = False
    for pod_name in pods:
        kept = (held or {}).get(pod_name)
        pod = kept if kept is not None else store.get(PODS, namespace, pod_name)
        if pod is None:
            continue
        status = pod.setdefault("status", {})
        conditions = [c for c in status.get("conditions") or () if c.get("type") != "PodScheduled"]
        conditions.append(
            {
                "type": "PodScheduled",
                "status": "False",
                "reason": "Unschedulable",
                "message": message,
                "lastProbeTime": None,
                "lastTransitionTime": None,
            }
        )
        status["conditions"] = conditions
        if kept is None:
            write(store.update_status, pod)
        else:
            any_held = True
        events.append(
            event(
                pod, "FailedScheduling", message, now, warning=True, component="default-scheduler"
            )
        )
    return events, any_held
