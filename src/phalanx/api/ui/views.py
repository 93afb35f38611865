"""What the dashboard's pages show, read from the service port: the cluster map by topology,
the queue, and quota use per ClusterQueue (with Kueue's fair sharing, each queue's weighted
share). Plain values for the templates; nothing here
changes the controller, and each function reads what it needs once per render."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from urllib.parse import urlencode

from phalanx.api.service import Service
from phalanx.domain.cluster import Cluster
from phalanx.domain.quantity import GPU, MILLI_UNITS
from phalanx.domain.queues import queue_name
from phalanx.domain.state import JobState
from phalanx.policies.clusterqueue.fairshare import UNBOUNDED
from phalanx.policies.clusterqueue.usage import queue_usage, weighted_shares
from phalanx.sched.job import Job

__all__ = [
    "GpuCell",
    "NodeBox",
    "QueueFilter",
    "QuotaRow",
    "SpineBox",
    "cluster_map",
    "colour",
    "gpu_places",
    "queue_of",
    "quota_rows",
    "select_jobs",
]


def colour(job_id: int) -> str:
    """A job's colour on the map: a hue from its id (golden-angle steps keep neighbours
    apart), the same on every page."""
    return f"hsl({(job_id * 137) % 360} 65% 55%)"


@dataclass(frozen=True, slots=True)
class GpuCell:
    device: int
    job_id: int | None
    user: str = ""


@dataclass(slots=True)
class NodeBox:
    name: str
    state: str
    """``idle``, ``mixed``, ``allocated``, ``draining``, ``drained`` or ``down`` (as sinfo)."""
    reason: str
    gpus: list[GpuCell]
    gpu_model: str
    agent: bool
    cpu_load: float | None


@dataclass(slots=True)
class LeafBox:
    name: str
    blocks: list[tuple[str, list[NodeBox]]]
    """(NVLink block name, or "" where the cluster has none) -> its nodes, in node order."""


@dataclass(slots=True)
class SpineBox:
    name: str
    """The spine's name, or "" for leaves under no spine."""
    leaves: list[LeafBox] = field(default_factory=list)


def gpu_places(jobs: Iterable[Job], cluster: Cluster) -> dict[tuple[int, int], Job]:
    """(node index, device) -> the running job holding it."""
    out: dict[tuple[int, int], Job] = {}
    for job in jobs:
        if job.alloc is None:
            continue
        for node, devices in zip(job.alloc.nodes, job.alloc.devices, strict=False):
            for device in devices:
                out[(node, device)] = job
    return out


def _state(service: Service, gpus: float, cpus: int, total: int, name: str) -> tuple[str, str]:
    # The same rules as GET /v1/nodes (phalanx.api.routes.cluster), which sinfo reads.
    down = service.node_down(name)
    note = service.node_note(name)
    state = "down" if down else ("allocated" if gpus or cpus else "idle")
    if not down and 0 < gpus < total:
        state = "mixed"
    if not down and note is not None:
        state = "drained" if state == "idle" else "draining"
    reason = note.reason if note is not None else ("Not responding" if down else "")
    return state, reason


def cluster_map(service: Service, running: Sequence[Job]) -> list[SpineBox]:
    """Spines, their leaves, the leaves' NVLink blocks and nodes, each GPU with its job."""
    cluster = service.cluster
    usage = service.node_usage()
    places = gpu_places(running, cluster)
    boxes: list[NodeBox] = []
    for node in cluster.nodes:
        gpus, cpus = usage[node.index]
        state, reason = _state(service, gpus, cpus, node.gpus, node.name)
        cells = []
        for device in range(node.gpus):
            job = places.get((node.index, device))
            cells.append(GpuCell(device, job.id if job else None, job.spec.user if job else ""))
        load = service.node_facts(node.name).get("cpu_load")
        boxes.append(
            NodeBox(
                node.name,
                state,
                reason,
                cells,
                node.gpu_model,
                service.agent_registered(node.name),
                float(load) if isinstance(load, int | float) else None,
            )
        )
    spines = [SpineBox(s.name) for s in cluster.spines]
    loose = SpineBox("")
    for leaf in cluster.leaves:
        blocks: dict[str, list[NodeBox]] = {}
        for i in leaf.children:
            block = cluster.nodes[i].block
            blocks.setdefault("" if block is None else f"nvl{block}", []).append(boxes[i])
        target = spines[leaf.parent] if leaf.parent is not None else loose
        target.leaves.append(LeafBox(leaf.name, list(blocks.items())))
    return [s for s in [*spines, loose] if s.leaves]


def queue_of(job: Job, cluster: Cluster) -> str:
    """The job's queue as the dashboard filters by it: its ClusterQueue where the cluster
    has Kueue queues, else the LocalQueue it names (``default`` when none)."""
    if cluster.queues.cluster_queues:
        cq, _ = cluster.cluster_queue_of(job.spec)
        if cq is not None:
            return cq.name
    return queue_name(job.spec)


@dataclass(frozen=True, slots=True)
class QueueFilter:
    user: str = ""
    account: str = ""
    queue: str = ""
    partition: str = ""

    def query(self) -> str:
        """As a query string (without ``?``), for links and the live stream."""
        pairs = [
            (k, v) for k in ("user", "account", "queue", "partition") if (v := getattr(self, k))
        ]
        return urlencode(pairs)


def select_jobs(service: Service, wanted: QueueFilter) -> tuple[list[Job], list[Job]]:
    """Pending jobs (by priority, highest first, then submit order) and running ones (by
    id) that pass ``wanted``."""
    cluster = service.cluster
    found = service.jobs(user=wanted.user or None, partition=wanted.partition or None)
    if wanted.account:
        found = [j for j in found if j.account == wanted.account]
    if wanted.queue:
        found = [j for j in found if queue_of(j, cluster) == wanted.queue]
    pending = [j for j in found if j.state is JobState.PENDING]
    pending.sort(key=lambda j: (-j.priority, j.seq))
    running = sorted((j for j in found if j.state is not JobState.PENDING), key=lambda j: j.id)
    return pending, running


@dataclass(frozen=True, slots=True)
class QuotaRow:
    """A ClusterQueue's GPUs: nominal quota, what its running jobs use, and the part of it
    borrowed from the cohort (use above nominal); with Kueue's fair sharing on, its weight
    and weighted share."""

    kind: str
    name: str
    cohort: str
    nominal: float
    """GPUs (quotas are kept in thousandths: ``phalanx.domain.quantity``)."""
    limit: float | None
    """Most it may borrow; None: no limit."""
    used: float
    weight: float = 1.0
    """Its ``fairSharing.weight``."""
    weighted_share: int | None = None
    """Kueue's ``status.fairSharing.weightedShare`` (``policies.clusterqueue.usage``): what
    it borrows, on its dominant resource, in thousandths of what its cohort lends, over its
    weight; None while fair sharing is off."""

    @property
    def borrowed(self) -> float:
        return max(0.0, self.used - self.nominal)

    @property
    def unbounded(self) -> bool:
        """A weight-0 queue that borrows: the largest share there is (Kueue's MaxInt)."""
        return self.weighted_share == UNBOUNDED


def quota_rows(cluster: Cluster, jobs: Iterable[Job]) -> list[QuotaRow]:
    """One row per configured ClusterQueue (none without Kueue queues), from ``jobs`` (the
    controller's jobs that are not final; those running with an allocation count), with the
    weighted shares the ClusterQueue status reports."""
    queues = cluster.queues
    if not queues.cluster_queues:
        return []
    jobs = list(jobs)
    used: dict[str, float] = {}
    for job in jobs:
        if job.state.is_final or job.state is JobState.PENDING or job.alloc is None:
            continue
        cq, _ = cluster.cluster_queue_of(job.spec)
        if cq is not None:
            used[cq.name] = used.get(cq.name, 0.0) + job.alloc.gpus
    shares = (
        weighted_shares(queues, queue_usage(cluster, jobs)) if queues.fair_sharing.enable else {}
    )
    rows = []
    for cq in queues.cluster_queues.values():
        gpu = [q for _, q in cq.quotas() if q.name == GPU]
        limits = [q.borrowing_limit for q in gpu]
        rows.append(
            QuotaRow(
                "ClusterQueue",
                cq.name,
                cq.cohort or "",
                sum(q.nominal for q in gpu) / MILLI_UNITS,
                None
                if any(x is None for x in limits)
                else sum(x or 0 for x in limits) / MILLI_UNITS,
                used.get(cq.name, 0.0),
                cq.fair_sharing_weight,
                shares.get(cq.name),
            )
        )
    return rows
