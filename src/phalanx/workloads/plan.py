"""What a reconciler reads besides its object, and the ``Plan`` it returns.

A reconciler is a pure function of (object, its pods, the engine jobs they run as, ``now``,
a ``Context``, a name source): the runner carries its ``Plan`` out, in order: submissions,
cancels, pod creations, pod updates (status), pod deletions, the object's status, events,
the object's deletion. Carrying out a plan twice is harmless: submissions carry idempotency
keys (the engine answers a known key with the ids it gave before), pods keep their names,
and statuses are whole values.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from phalanx.domain.jobspec import JobSpec
from phalanx.domain.state import JobState
from phalanx.domain.time import SECOND, Duration, Instant
from phalanx.workloads.events import event

__all__ = [
    "ANNOTATION_JOB_ID",
    "ANNOTATION_KEY",
    "ANNOTATION_LOG",
    "ANNOTATION_RANK",
    "ANNOTATION_RESTARTS",
    "ContainerView",
    "Context",
    "EngineJob",
    "NameSource",
    "Plan",
    "Submission",
    "refused",
]

Obj = dict[str, Any]

ANNOTATION_JOB_ID = "phalanx.io/job-id"
"""On a pod: the engine job it runs as (the runner sets it once the submission is taken)."""
ANNOTATION_RANK = "phalanx.io/rank"
"""On a pod: its task's rank in that engine job."""
ANNOTATION_KEY = "phalanx.io/submission"
"""On a pod: the idempotency key of the submission that runs it."""
ANNOTATION_RESTARTS = "phalanx.io/restarts"
"""On a pod: how many times its gang was started again before this run (its restartCount)."""
ANNOTATION_LOG = "phalanx.io/log"
"""On a pod: the file its container's stdout and stderr go to (``kubectl logs``)."""

NameSource = Callable[[], str]
"""Five characters from ``bcdfghjklmnpqrstvwxz2456789`` per call (Kubernetes' generated-name
alphabet): the runner injects randomness, tests inject a sequence."""


@dataclass(frozen=True, slots=True)
class ContainerView:
    """What the node's agent last reported of a task that restarts in place or is probed,
    in Kubernetes' terms (``ContainerStatus``): soft state, not the engine's."""

    ready: bool
    started: bool
    restart_count: int
    state: Mapping[str, Any]
    """``{"running": {...}}``, ``{"waiting": {...}}`` or ``{"terminated": {...}}``."""
    last_state: Mapping[str, Any] = field(default_factory=dict)
    cpu_millicores: int | None = None
    probe_message: str = ""
    """The last probe failure (``Liveness probe failed: ...``), for the pod's events."""


@dataclass(frozen=True, slots=True)
class EngineJob:
    """What a reconciler sees of one engine job (the runner makes it from the engine's)."""

    id: int
    state: JobState
    reason: str = ""
    message: str = ""
    expected_start: Instant | None = None
    start: Instant | None = None
    end: Instant | None = None
    exit_code: int | None = None
    signal: int = 0
    nodes: tuple[str, ...] = ()
    """The node of each task, by rank, while it runs (and after)."""
    addresses: tuple[str, ...] = ()
    """The address of each task's node, by rank (127.0.0.1 for this machine's)."""
    restarts: int = 0
    containers: tuple[ContainerView | None, ...] = ()
    """By rank: what the agents report of its running tasks (None, or missing: nothing)."""


@dataclass(frozen=True)
class Context:
    """The reconciler's parameters: who asks, where files go, what the cluster offers."""

    user: str = "user"
    """The requesting user: the engine job's user (``squeue``'s USER)."""
    log_dir: str = "/tmp/phalanx-kube"
    """Pods' output goes to ``log_dir/NAMESPACE/POD.log``."""
    workdir: str = "/tmp"
    """Where a container without ``workingDir`` starts (an image's WORKDIR is not there)."""
    priority_classes: Mapping[str, int] = field(default_factory=dict)
    """PriorityClass name -> value (``spec.priorityClassName``)."""
    global_default_priority: int = 0
    """The value of the PriorityClass with ``globalDefault: true``, else 0."""
    max_nodes: int = 1
    """How many nodes a gang may spread over: one pod per node where there are enough."""
    partition: str | None = None
    qos: str = "normal"
    qos_names: frozenset[str] = frozenset()
    """The cluster's QOS names: a service pod whose PriorityClass has one of these names runs
    under that QOS, and preempts what that QOS may preempt."""
    secrets: Mapping[tuple[str, str], Mapping[str, str]] = field(default_factory=dict)
    """(namespace, name) -> key -> value (decoded) of the Secrets the object's pods may read
    (``valueFrom.secretKeyRef``)."""
    config_maps: Mapping[tuple[str, str], Mapping[str, str]] = field(default_factory=dict)
    """(namespace, name) -> key -> value of the ConfigMaps (``valueFrom.configMapKeyRef``)."""
    service_time_limit: Duration = 365 * 24 * 3600 * SECOND
    """The time limit of a pod that never ends by itself (``restartPolicy: Always``, a
    ReplicaSet's): a year, Slurm's UNLIMITED as the engine can keep it on its timeline, or the
    partition's MaxTime where that is shorter (the runner sets it), so that the partition's
    DefaultTime never ends a service."""


@dataclass(frozen=True, slots=True)
class Submission:
    """One engine job to submit: ``pods[r]`` runs as its task of rank r."""

    key: str
    spec: JobSpec
    pods: tuple[str, ...]


@dataclass
class Plan:
    """What to do. ``status`` None: the object's status is unchanged."""

    submit: list[Submission] = field(default_factory=list)
    cancel: list[int] = field(default_factory=list)
    create: list[Obj] = field(default_factory=list)
    update: list[Obj] = field(default_factory=list)
    """Pods whose status changed (whole objects, written through the status subresource)."""
    delete: list[str] = field(default_factory=list)
    """Names of pods to delete (in the object's namespace)."""
    status: Obj | None = None
    events: list[Obj] = field(default_factory=list)
    delete_self: bool = False
    """``ttlSecondsAfterFinished`` has passed: delete the object (and its pods with it)."""
    annotate: dict[str, str] = field(default_factory=dict)
    """Annotations to set on the object itself (a Deployment's revision)."""
    wake_at: Instant | None = None
    """Reconcile again then even if nothing changes (a deadline, a TTL)."""

    def wake(self, at: Instant) -> None:
        self.wake_at = at if self.wake_at is None else min(self.wake_at, at)


def refused(obj: Mapping[str, Any], message: str, now: Instant, component: str) -> Plan:
    """The plan for an object whose spec cannot be acted on: one ``FailedCreate`` warning per
    generation (``status.observedGeneration`` records that it was seen), nothing else."""
    plan = Plan()
    generation = (obj.get("metadata") or {}).get("generation")
    status = dict(obj.get("status") or {})
    if generation is not None and status.get("observedGeneration") == generation:
        return plan
    plan.events.append(event(obj, "FailedCreate", message, now, warning=True, component=component))
    if generation is not None:
        plan.status = {**status, "observedGeneration": generation}
    return plan
