"""The cluster: nodes, the switch tree, partitions, accounts and QOS.

A ``Cluster`` is an immutable description. What is free right now lives in
``phalanx.sched.occupancy.Occupancy``; nothing here changes while jobs run.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field

from phalanx.domain.associations import Associations, Limits
from phalanx.domain.health import HealthCheck
from phalanx.domain.jobspec import JobSpec
from phalanx.domain.queues.kueue import ClusterQueue
from phalanx.domain.queues.model import Queues, has_queue_name
from phalanx.domain.state import Reason
from phalanx.domain.time import Duration

__all__ = [
    "DEFAULT_QOS",
    "Account",
    "Cluster",
    "Node",
    "Partition",
    "PreemptMode",
    "Qos",
    "Switch",
]


@dataclass(frozen=True, slots=True)
class Node:
    """One machine. ``index`` is its position in ``Cluster.nodes``; ``leaf`` its leaf switch."""

    index: int
    name: str
    gpus: int
    gpu_model: str
    cpus: int
    memory_mb: int
    leaf: int
    features: frozenset[str] = frozenset()
    block: int | None = None
    """NVLink block (a set of nodes joined by NVLink), if the cluster has them."""


@dataclass(frozen=True, slots=True)
class Switch:
    """A switch of the tree. Leaves hold nodes; spines hold leaves."""

    index: int
    name: str
    children: tuple[int, ...]
    """Node indexes for a leaf, leaf indexes for a spine."""
    parent: int | None = None
    """Spine index of a leaf; None for a spine or a leaf under no spine."""


class PreemptMode(enum.Enum):
    """What happens to a preempted job (Slurm's PreemptMode)."""

    OFF = "off"
    REQUEUE = "requeue"
    CANCEL = "cancel"


@dataclass(frozen=True, slots=True)
class Partition:
    name: str
    nodes: tuple[int, ...]
    default_time: Duration | None = None
    max_time: Duration | None = None
    priority_tier: int = 1
    """Jobs in a higher tier are considered first and may preempt lower tiers."""
    priority_job_factor: int = 1
    """Normalised into the multifactor PARTITION factor."""
    preempt_mode: PreemptMode = PreemptMode.OFF
    grace_time: Duration = 0
    profile: str = "phalanx"
    """Id of the scheduling profile (set of plugins) used for this partition."""
    default: bool = False
    cluster_queue: str | None = None
    """The ClusterQueue this partition's jobs go to when they name no LocalQueue
    (``Cluster.cluster_queue_of``)."""

    def exceeded_by(self, nodes_min: int, time_limit: Duration | None) -> str | None:
        """The limit of this partition that a job of ``nodes_min`` nodes and ``time_limit``
        exceeds, as the reason Slurm shows while such a job waits, or None."""
        if nodes_min > len(self.nodes):
            return Reason.PARTITION_CONFIG
        if time_limit is not None and self.max_time is not None and time_limit > self.max_time:
            return Reason.PARTITION_TIME
        return None


DEFAULT_QOS = "normal"
"""The QOS every cluster has (Slurm's default): a job with no QOS, or an unknown one that the
cluster accepts, is scheduled with its factors."""


@dataclass(frozen=True, slots=True)
class Qos:
    name: str
    priority: int = 0
    preempt: frozenset[str] = frozenset()
    """Names of the QOS this one may preempt."""
    preempt_mode: PreemptMode = PreemptMode.REQUEUE
    grace_time: Duration = 0
    max_gpus_per_account: int | None = None
    limits: Limits = field(default_factory=Limits)
    """Slurm's QOS limits (``GrpTRES``, ``MaxTRESPerUser``, ``MaxJobsPerUser``, ...):
    quotas the admission plugin holds jobs to (``phalanx.domain.associations``)."""
    cluster_queue: str | None = None
    """The ClusterQueue this QOS's jobs go to when they name no LocalQueue; it comes before
    the partition's (``Cluster.cluster_queue_of``)."""


@dataclass(frozen=True, slots=True)
class Account:
    """A node of the account tree. ``shares`` are raw shares among siblings."""

    name: str
    parent: str | None
    shares: int = 1
    quota_gpus: int | None = None
    """Nominal GPU quota (Kueue-style admission); None lets the profile derive it from shares."""


@dataclass(frozen=True)
class Cluster:
    nodes: tuple[Node, ...]
    leaves: tuple[Switch, ...]
    spines: tuple[Switch, ...]
    partitions: Mapping[str, Partition]
    accounts: Mapping[str, Account]
    qos: Mapping[str, Qos]
    name: str = "cluster"
    enforce_part_limits: bool = False
    """Slurm's ``EnforcePartLimits``: refuse at submission a job that asks for more than its
    partition has (nodes, time). Off, as in Slurm, such a job is queued and waits
    (``PartitionConfig``, ``PartitionTimeLimit``) without holding up any other."""
    enforce_qos: bool = False
    """Slurm's ``AccountingStorageEnforce=qos``: refuse a QOS the cluster does not define. Off,
    as in Slurm, the job keeps the name it asked for and runs with ``DEFAULT_QOS``'s factors."""
    health: HealthCheck = field(default_factory=HealthCheck)
    """What the agents check of their nodes (``health_check``; slurm.conf HealthCheck*)."""
    queues: Queues = field(default_factory=Queues)
    """Kueue's and Volcano's queue objects (``queues:`` in the cluster YAML, ``--queues``);
    empty: the profiles' own quota rules apply."""
    associations: Associations = field(default_factory=Associations)
    """Slurm's associations with their limits (``associations:`` in the cluster YAML)."""
    _by_name: dict[str, int] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_by_name", {n.name: n.index for n in self.nodes})

    @property
    def total_gpus(self) -> int:
        return sum(n.gpus for n in self.nodes)

    @property
    def gpu_models(self) -> frozenset[str]:
        return frozenset(n.gpu_model for n in self.nodes)

    def fewest_leaves(self) -> tuple[int, ...]:
        """``t[n]``: the fewest leaf switches whose nodes number at least ``n``, for ``n`` from 0
        to the node count. ``ceil(n / k)`` on a tree of equal leaves of ``k`` nodes; on leaves
        of unequal sizes, taking the largest first attains the fewest (any ``m`` leaves hold at
        most as many nodes as the ``m`` largest)."""
        sizes: dict[int, int] = {}
        for node in self.nodes:
            sizes[node.leaf] = sizes.get(node.leaf, 0) + 1
        table = [0]
        held = 0
        for count, size in enumerate(sorted(sizes.values(), reverse=True), start=1):
            held += size
            table.extend([count] * (held - len(table) + 1))
        return tuple(table)

    def node_index(self, name: str) -> int | None:
        return self._by_name.get(name)

    def cluster_queue_of(self, spec: JobSpec) -> tuple[ClusterQueue | None, str]:
        """The ClusterQueue a job goes to, or None and why not. A job that names a LocalQueue
        (label ``kueue.x-k8s.io/queue-name``, as Kueue's integrations set it) goes where that
        LocalQueue points. One that names none goes to the ClusterQueue its QOS names, else
        to its partition's, so that Slurm users (``sbatch -p``, ``--qos``) land in a queue
        without Kubernetes' labels; else to its namespace's LocalQueue ``default``."""
        queues = self.queues
        if not has_queue_name(spec):
            qos = self.qos.get(spec.qos)
            name = qos.cluster_queue if qos is not None else None
            if name is None:
                part = self.partition(spec.partition)
                name = part.cluster_queue if part is not None else None
            if name is not None:
                return queues.cluster_queue_named(name, spec.account)
        return queues.cluster_queue_of(spec)

    def queue_routes(self) -> list[tuple[str, str]]:
        """``(field, ClusterQueue)`` for every partition and QOS that names a ClusterQueue
        this cluster's queues lack (``partitions.NAME.cluster_queue``), for a clear error."""
        missing = [
            (f"{kind}.{name}.cluster_queue", target)
            for kind, items in (("partitions", self.partitions), ("qos", self.qos))
            for name, item in items.items()
            if (target := item.cluster_queue) is not None
        ]
        return [(where, cq) for where, cq in missing if cq not in self.queues.cluster_queues]

    def default_partition(self) -> Partition:
        for p in self.partitions.values():
            if p.default:
                return p
        return next(iter(self.partitions.values()))

    def partition(self, name: str | None) -> Partition | None:
        if name is None:
            return self.default_partition()
        return self.partitions.get(name)

    def qos_for(self, name: str) -> Qos | None:
        """The QOS a job that asked for ``name`` runs under: that one, or ``DEFAULT_QOS`` for a
        name this cluster does not define."""
        qos = self.qos.get(name)
        return qos if qos is not None else self.qos.get(DEFAULT_QOS)

    def account_path(self, name: str) -> tuple[str, ...]:
        """The account and its ancestors, leaf first; an unknown account hangs under root."""
        path: list[str] = []
        current: str | None = name
        while current is not None and current not in path:
            path.append(current)
            acct = self.accounts.get(current)
            current = acct.parent if acct is not None else ("root" if current != "root" else None)
        return tuple(path)
