"""A PyTorchJob's spec as the training operator v1.9 defaults it, its pods' names, ranks and
the environment the operator injects (``phalanx.workloads.pytorchjob`` says what differs)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from phalanx.domain.state import JobState
from phalanx.errors import InputError

__all__ = [
    "CONTROLLER",
    "DEFAULT_PORT",
    "FAILED",
    "JOB_NAME",
    "JOB_ROLE",
    "KIND",
    "OPERATOR",
    "REPLICA_INDEX",
    "REPLICA_TYPE",
    "Member",
    "Replica",
    "TrainingShape",
    "elastic_nodes",
    "environment",
    "members",
    "training_shape",
]

KIND = "PyTorchJob"
OPERATOR = "training.kubeflow.org/operator-name"
JOB_NAME = "training.kubeflow.org/job-name"
REPLICA_TYPE = "training.kubeflow.org/replica-type"
REPLICA_INDEX = "training.kubeflow.org/replica-index"
JOB_ROLE = "training.kubeflow.org/job-role"
CONTROLLER = "pytorchjob-controller"
DEFAULT_PORT = 23456
PORT_NAME = "pytorchjob-port"
_POLICIES = ("Always", "OnFailure", "Never", "ExitCode")
FAILED = frozenset(
    {
        JobState.FAILED,
        JobState.TIMEOUT,
        JobState.NODE_FAIL,
        JobState.OUT_OF_MEMORY,
        JobState.CANCELLED,
    }
)


@dataclass(frozen=True, slots=True)
class Replica:
    kind: str
    """``Master`` or ``Worker``."""
    replicas: int
    restart_policy: str
    template: Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class TrainingShape:
    """A PyTorchJob's spec, defaulted as the training operator's webhook defaults it."""

    replicas: tuple[Replica, ...]
    """Master first."""
    backoff_limit: int | None = None
    deadline_s: int | None = None
    clean_pod_policy: str = "None"
    ttl_s: int | None = None
    suspend: bool = False
    min_available: int | None = None
    elastic: Mapping[str, Any] | None = None
    nproc_per_node: str | None = "auto"

    @property
    def total(self) -> int:
        return sum(r.replicas for r in self.replicas)

    @property
    def has_master(self) -> bool:
        return any(r.kind == "Master" for r in self.replicas)


def _count(value: object, field: str, default: int | None) -> int | None:
    if value is None:
        return default
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise InputError("must be a non-negative integer", field=field)
    return value


def training_shape(obj: Mapping[str, Any]) -> TrainingShape:
    """``InputError`` naming the field for what the training operator's webhook refuses."""
    spec = obj.get("spec") or {}
    specs = spec.get("pytorchReplicaSpecs")
    if not isinstance(specs, Mapping) or not specs:
        raise InputError("must have at least one replica spec", field="spec.pytorchReplicaSpecs")
    replicas = []
    for raw_kind, body in specs.items():
        kind = str(raw_kind).capitalize()  # the webhook camel-cases the keys
        where = f"spec.pytorchReplicaSpecs.{raw_kind}"
        if kind not in ("Master", "Worker"):
            raise InputError(f"unsupported replica type {raw_kind!r}", field=where)
        if not isinstance(body, Mapping):
            raise InputError("must be an object", field=where)
        count = _count(body.get("replicas"), f"{where}.replicas", 1) or 0
        if kind == "Master" and count != 1:
            raise InputError("must be 1", field=f"{where}.replicas")
        policy = body.get("restartPolicy") or "OnFailure"
        if policy not in _POLICIES:
            raise InputError(f"unsupported value {policy!r}", field=f"{where}.restartPolicy")
        template = body.get("template")
        if not isinstance(template, Mapping):
            raise InputError("must be an object", field=f"{where}.template")
        replicas.append(Replica(kind, count, str(policy), template))
    replicas.sort(key=lambda r: r.kind != "Master")
    run = spec.get("runPolicy") or {}
    clean = run.get("cleanPodPolicy") or "None"
    if clean not in ("None", "Running", "All"):
        raise InputError(f"unsupported value {clean!r}", field="spec.runPolicy.cleanPodPolicy")
    scheduling = run.get("schedulingPolicy") or {}
    elastic = spec.get("elasticPolicy")
    nproc = spec.get("nprocPerNode")
    if nproc is None and (elastic is None or elastic.get("nProcPerNode") is None):
        nproc = "auto"
    shape = TrainingShape(
        replicas=tuple(replicas),
        backoff_limit=_count(run.get("backoffLimit"), "spec.runPolicy.backoffLimit", None),
        deadline_s=_count(
            run.get("activeDeadlineSeconds"), "spec.runPolicy.activeDeadlineSeconds", None
        ),
        clean_pod_policy=str(clean),
        ttl_s=_count(
            run.get("ttlSecondsAfterFinished"), "spec.runPolicy.ttlSecondsAfterFinished", None
        ),
        suspend=bool(run.get("suspend", False)),
        min_available=_count(
            scheduling.get("minAvailable"), "spec.runPolicy.schedulingPolicy.minAvailable", None
        ),
        elastic=elastic if isinstance(elastic, Mapping) else None,
        nproc_per_node=str(nproc) if nproc is not None else None,
    )
    if shape.total == 0:
        raise InputError(
            "a PyTorchJob needs at least one replica", field="spec.pytorchReplicaSpecs"
        )
    return shape


@dataclass(frozen=True, slots=True)
class Member:
    name: str
    replica: Replica
    index: int
    rank: int


def _bounds(shape: TrainingShape) -> tuple[int, int] | None:
    """An ``elasticPolicy``'s (minReplicas, maxReplicas) of workers, each defaulting to the
    other and then to the Worker replica count (the training operator's defaults)."""
    elastic = shape.elastic
    if elastic is None:
        return None
    workers = next((r.replicas for r in shape.replicas if r.kind == "Worker"), 0)
    low, high = elastic.get("minReplicas"), elastic.get("maxReplicas")
    low = low if isinstance(low, int) else (high if isinstance(high, int) else workers)
    high = high if isinstance(high, int) else max(low, workers)
    return low, max(low, high)


def elastic_nodes(shape: TrainingShape) -> tuple[int, int] | None:
    """The node range of an elastic PyTorchJob's gang (one pod per node), None if it is not
    elastic: Phalanx sizes it between ``minReplicas`` and ``maxReplicas`` workers itself,
    growing it onto free nodes and shrinking it for jobs that may preempt it (no HPA)."""
    bounds = _bounds(shape)
    if bounds is None:
        return None
    master = 1 if shape.has_master else 0
    return bounds[0] + master, bounds[1] + master


def members(obj: Mapping[str, Any], shape: TrainingShape) -> list[Member]:
    """The pods, by rank. An elastic job has a Worker pod for each of ``maxReplicas`` (or
    ``replicas`` if more): those beyond the ranks it runs now wait, Pending, for it to grow."""
    name = str((obj.get("metadata") or {}).get("name", ""))
    bounds = _bounds(shape)
    out: list[Member] = []
    for replica in shape.replicas:
        count = replica.replicas
        if bounds is not None and replica.kind == "Worker":
            count = max(count, bounds[1])
        for index in range(count):
            pod = f"{name}-{replica.kind.lower()}-{index}".replace("/", "-")
            out.append(Member(pod, replica, index, len(out)))
    return out


def _port(replica: Replica) -> int:
    for port in ((replica.template.get("spec") or {}).get("containers") or [{}])[0].get(
        "ports"
    ) or ():
        if isinstance(port, Mapping) and port.get("name") == PORT_NAME:
            number = port.get("containerPort")
            if isinstance(number, int):
                return number
    return DEFAULT_PORT


def environment(shape: TrainingShape, member: Member) -> list[tuple[str, str]]:
    """What the training operator appends to the container's env (module docstring)."""
    env = [("PYTHONUNBUFFERED", "1")]
    nproc = shape.nproc_per_node
    per_node = int(nproc) if nproc is not None and nproc.isdecimal() else 1
    if shape.has_master:
        port = str(_port(shape.replicas[0]))
        env += [("MASTER_PORT", port), ("PET_MASTER_PORT", port)]
        rank = str(member.rank)
        env += [
            ("WORLD_SIZE", str(shape.total * per_node)),
            ("RANK", rank),
            ("PET_NODE_RANK", rank),
        ]
    if nproc is not None:
        env.append(("PET_NPROC_PER_NODE", nproc))
    elastic = shape.elastic
    if elastic is None:
        env.append(("PET_NNODES", str(shape.total)))
        return env
    workers = next((r for r in shape.replicas if r.kind == "Worker"), None)
    count = workers.replicas if workers is not None else shape.total
    low, high = elastic.get("minReplicas"), elastic.get("maxReplicas")
    low, high = (low if low is not None else high), (high if high is not None else low)
    rdzv_port = elastic.get("rdzvPort") or (_port(workers) if workers is not None else DEFAULT_PORT)
    env.append(("PET_RDZV_ENDPOINT", f"{elastic.get('rdzvHost') or '127.0.0.1'}:{rdzv_port}"))
    env.append(("PET_RDZV_BACKEND", str(elastic.get("rdzvBackend") or "c10d")))
    env.append(
        ("PET_NNODES", f"{low if low is not None else count}:{high if high is not None else count}")
    )
    if elastic.get("maxRestarts") is not None:
        env.append(("PET_MAX_RESTARTS", str(elastic["maxRestarts"])))
    if elastic.get("nProcPerNode") is not None:
        env.append(("PET_NPROC_PER_NODE", str(elastic["nProcPerNode"])))
    if elastic.get("rdzvId") is not None:
        env.append(("PET_RDZV_ID", str(elastic["rdzvId"])))
    conf = elastic.get("rdzvConf") or []
    if conf:
        env.append(("PET_RDZV_CONF", ",".join(f"{c.get('key')}={c.get('value')}" for c in conf)))
    if elastic.get("standalone"):
        env.append(("PET_STANDALONE", ""))
    # Phalanx's own: torch's agents otherwise share the rendezvous store with their workers
    # and a node that joins a running job (a grown job) waits forever for the bootstrap
    # address, which the first round's rank 0 published under that round's key only.
    env.append(("TORCH_DISABLE_SHARE_RDZV_TCP_STORE", "1"))
    return env
