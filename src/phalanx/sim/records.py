"""What the simulator records about each job and about the cluster over time.

These records are the input of ``phalanx.sim.metrics``. All times are milliseconds; every
``*_gpu_ms`` is GPUs x milliseconds.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from phalanx.domain.queues import Queues
from phalanx.domain.time import Instant

__all__ = ["JobRecord", "RunRecord", "Segment"]


@dataclass(slots=True)
class JobRecord:
    job_id: int
    account: str
    user: str
    gpus: float
    """GPUs the job holds while it runs (a fraction counted as its share)."""
    submit: Instant
    runtime_ms: int
    """Compute the job needs (from the trace)."""
    first_start: Instant | None = None
    """First time the job held resources (for k8s-default: its first pod placed)."""
    end: Instant | None = None
    """When the job finally left the cluster (completed, failed, cancelled or rejected)."""
    state: str = "PENDING"
    compute_gpu_ms: int = 0
    """Useful work: running time that was not lost to a preemption or failure."""
    gang_wait_gpu_ms: int = 0
    """GPUs held idle by placed pods while the rest of the gang waited (k8s-default)."""
    launch_gpu_ms: int = 0
    """GPUs held between allocation and the processes running (a resuming job's checkpoint
    restore included)."""
    cleanup_gpu_ms: int = 0
    """GPUs held in COMPLETING (epilog) after the processes ended."""
    evict_gpu_ms: int = 0
    """GPUs held between a preemption signal and the kill (grace time), or the exit of a job
    that saved a checkpoint on the signal."""
    lost_gpu_ms: int = 0
    """Work done since the last checkpoint and thrown away by a preemption or node failure."""
    preemptions: int = 0
    node_failures: int = 0
    restarts: int = 0
    rejected: str | None = None
    """Why the job could never run on this cluster, if so."""
    requeue_wait_ms: int = 0
    """Time pending again after requeues (preemption, node failure), until the next launch."""
    held: list[tuple[Instant, Instant]] = field(default_factory=list)
    """Each run's hold of its GPUs, from the launch to the end of its cleanup (for the
    queues' figures: usage and pending demand over time)."""
    preempted_for: list[int] = field(default_factory=list)
    """The jobs its preemptions were for, in order."""
    extra_leaves: int = 0
    """Over its placements, the most leaf switches spanned beyond the fewest that could hold
    that many nodes on this cluster (0 for a one-node job, or a gang packed as tightly as the
    tree allows)."""


@dataclass(frozen=True, slots=True)
class Segment:
    """One stretch of a job holding GPUs on one node (for Gantt charts)."""

    job_id: int
    node: int
    start: Instant
    end: Instant
    gpus: float


@dataclass(slots=True)
class RunRecord:
    """Everything one simulated run produced."""

    policy: str
    total_gpus: int
    node_count: int
    jobs: list[JobRecord]
    alloc_timeline: list[tuple[Instant, float]] = field(default_factory=list)
    """(time, GPUs allocated from then on), one entry per change."""
    segments: list[Segment] = field(default_factory=list)
    idle_pending_timeline: list[tuple[Instant, float]] = field(default_factory=list)
    """(time, min(idle GPUs, GPUs asked by pending jobs) from then on), one entry per change;
    idle GPUs are those neither allocated nor on a node that is down."""
    deadlocks: int = 0
    sim_wall_s: float = 0.0
    mfu: float = 0.4
    passes: int = 0
    queues: Queues | None = None
    """The cluster's queues when it had ClusterQueues (the ``queues`` figures)."""
