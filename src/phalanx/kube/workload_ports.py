"""What the workload runner (``phalanx.kube.controllers``) works with: the resources of the
workloads it reconciles, the ports it reaches the object store and the live controller by, and
the engine's jobs as the reconcilers see them."""

from __future__ import annotations

import pwd
import secrets
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol

from phalanx.domain.caller import Caller
from phalanx.domain.cluster import Cluster
from phalanx.domain.jobspec import JobSpec
from phalanx.kube.containerstatus import container_view
from phalanx.protocol.agent import ContainerReport
from phalanx.sched.job import Job
from phalanx.workloads.plan import ANNOTATION_LOG, ContainerView, EngineJob

__all__ = [
    "DEPLOYMENTS",
    "EVENTS",
    "JOBS",
    "JOBSETS",
    "KINDS",
    "PODS",
    "PRIORITY_CLASSES",
    "PYTORCHJOBS",
    "REPLICASETS",
    "VCJOBS",
    "Containers",
    "Engine",
    "Key",
    "Obj",
    "Resource",
    "Store",
    "engine_job",
    "key_of",
    "known_user",
    "log_path",
    "owner_of",
    "random_name",
]

Resource = tuple[str, str]
Obj = dict[str, Any]
JOBS: Resource = ("batch", "jobs")
PYTORCHJOBS: Resource = ("kubeflow.org", "pytorchjobs")
VCJOBS: Resource = ("batch.volcano.sh", "jobs")
JOBSETS: Resource = ("jobset.x-k8s.io", "jobsets")
REPLICASETS: Resource = ("apps", "replicasets")
DEPLOYMENTS: Resource = ("apps", "deployments")
PODS: Resource = ("", "pods")
EVENTS: Resource = ("", "events")
PRIORITY_CLASSES: Resource = ("scheduling.k8s.io", "priorityclasses")
_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"
KINDS: dict[tuple[str, str], Resource] = {
    ("batch/v1", "Job"): JOBS,
    ("kubeflow.org/v1", "PyTorchJob"): PYTORCHJOBS,
    ("batch.volcano.sh/v1alpha1", "Job"): VCJOBS,
    ("jobset.x-k8s.io/v1alpha2", "JobSet"): JOBSETS,
    ("apps/v1", "ReplicaSet"): REPLICASETS,
    ("apps/v1", "Deployment"): DEPLOYMENTS,
}
Key = tuple[Resource, str, str]
"""(resource, namespace, name) of a workload."""


class Store(Protocol):
    """The object store as the runner uses it (``phalanx.kube.store.ObjectStore``)."""

    def get(self, resource: Resource, namespace: str | None, name: str) -> Obj | None: ...

    def owned(
        self,
        resource: Resource,
        namespace: str,
        uid: str,
        labels: Mapping[str, str] | None = None,
    ) -> list[Obj]: ...

    def list(
        self,
        resource: Resource,
        namespace: str | None = None,
        labels: Mapping[str, str] | None = None,
    ) -> list[Obj]: ...

    def create(self, obj: Obj, *, keep_uid: bool = False) -> Obj: ...

    def update(self, obj: Obj) -> Obj: ...

    def update_status(self, obj: Obj) -> Obj: ...

    def delete(self, resource: Resource, namespace: str | None, name: str) -> Any: ...

    def subscribe(self, callback: Callable[[str, Obj], None]) -> None: ...


class Engine(Protocol):
    """The live controller as the runner uses it (``phalanx.live.controller.Controller``)."""

    @property
    def cluster(self) -> Cluster: ...

    def check(self, spec: JobSpec) -> None:
        """Raise ``SpecError`` for a request that can never run here."""

    def submit(self, specs: Sequence[JobSpec], key: str = "") -> list[list[int]]: ...

    def cancel(self, job_id: int, caller: Caller) -> list[int]: ...

    def jobs(self, *, finished: bool = False, ids: Iterable[int] | None = None) -> list[Job]: ...


def log_path(pod: Mapping[str, Any]) -> Path | None:
    """The file a pod's container output goes to (``kubectl logs``), None for a pod that no
    workload of Phalanx made. The file exists once the pod's task has started."""
    value = ((pod.get("metadata") or {}).get("annotations") or {}).get(ANNOTATION_LOG)
    return Path(value) if isinstance(value, str) and value else None


Containers = Callable[[int, int], ContainerReport | None]
"""(job_id, rank) -> the latest report of that task's container from its node's agent."""


def engine_job(
    job: Job,
    cluster: Cluster,
    address: Callable[[str], str],
    containers: Containers | None = None,
) -> EngineJob:
    """What the reconcilers see of the engine's ``job`` (with its containers' reports)."""
    nodes: tuple[str, ...] = ()
    if job.alloc is not None and job.start is not None:
        names = [cluster.nodes[i].name for i in job.alloc.nodes]
        per_node = job.spec.tasks_per_node  # ranks go node by node (block distribution)
        nodes = tuple(names[rank // per_node] for rank in range(len(names) * per_node))
    return EngineJob(
        id=job.id,
        state=job.state,
        reason=str(job.reason),
        message=job.reason_message,
        expected_start=job.expected_start,
        # the engine forgets a run's start once it ends; a job never requeued has had one run,
        # which began at its first start
        start=job.start if job.start is not None or job.restarts else job.first_start,
        end=job.end,
        exit_code=job.exit_code,
        signal=job.exit_signal,
        nodes=nodes,
        addresses=tuple(address(n) for n in nodes),
        restarts=job.restarts,
        containers=_views(job.id, len(nodes), containers),
    )


def _views(
    job_id: int, tasks: int, containers: Containers | None
) -> tuple[ContainerView | None, ...]:
    if containers is None:
        return ()
    reports = [containers(job_id, rank) for rank in range(tasks)]
    return tuple(None if r is None else container_view(r) for r in reports)


def known_user(name: str) -> bool:
    """Whether this machine knows the user ``name`` (the launches look its uid up)."""
    try:
        pwd.getpwnam(name)
    except KeyError:
        return False
    return True


def random_name() -> str:
    """Five characters of ``_ALPHABET`` drawn uniformly, from one draw of the system's
    randomness (each draw is a system call: one a character cost more than the rest of a
    pod's name)."""
    n = secrets.randbelow(len(_ALPHABET) ** 5)
    out = []
    for _ in range(5):
        n, i = divmod(n, len(_ALPHABET))
        out.append(_ALPHABET[i])
    return "".join(out)


def key_of(obj: Mapping[str, Any]) -> Key | None:
    resource = KINDS.get((str(obj.get("apiVersion")), str(obj.get("kind"))))
    if resource is None:
        return None
    meta = obj.get("metadata") or {}
    return resource, str(meta.get("namespace", "default")), str(meta.get("name"))


def owner_of(pod: Mapping[str, Any]) -> Key | None:
    meta = pod.get("metadata") or {}
    for ref in meta.get("ownerReferences") or ():
        if ref.get("controller"):
            resource = KINDS.get((str(ref.get("apiVersion")), str(ref.get("kind"))))
            if resource is not None:
                return resource, str(meta.get("namespace", "default")), str(ref.get("name"))
    return None
