"""A job as the scheduler tracks it: the request plus its state and history.

Policies read these; only the engine changes them.
"""

from __future__ import annotations

from collections.abc import Mapping

from mypy_extensions import mypyc_attr

from phalanx.domain.jobspec import JobSpec
from phalanx.domain.jobstep import StepRecord
from phalanx.domain.rusage import RunUsage
from phalanx.domain.state import JobState, Reason
from phalanx.domain.time import Duration, Instant
from phalanx.sched.capacity import Allocation
from phalanx.sched.shape import Shape

__all__ = ["Job"]


@mypyc_attr(allow_interpreted_subclasses=True)
class Job:
    __slots__ = (
        "alloc",
        "array_job_id",
        "array_task_id",
        "attained_gpu_ms",
        "end",
        "exit_code",
        "exit_signal",
        "expected_start",
        "factors",
        "first_start",
        "fixed_priority",
        "hold_since",
        "holds",
        "id",
        "key",
        "partition",
        "priority",
        "queue_seq",
        "reason",
        "reason_message",
        "reason_plugin",
        "restarts",
        "run",
        "seen",
        "seq",
        "shape",
        "spec",
        "start",
        "state",
        "steps",
        "steps_usage",
        "submit",
        "tier",
        "time_limit",
        "usage",
    )

    def __init__(
        self,
        job_id: int,
        seq: int,
        spec: JobSpec,
        submit: Instant,
        partition: str,
        tier: int,
        time_limit: Duration,
    ) -> None:
        self.id = job_id
        self.seq = seq
        """Unique submit sequence: every ordering ends on it, so passes are deterministic."""
        self.queue_seq = seq
        """The sequence the job keeps its place in the pending queue by, among jobs of its
        priority: ``seq``, or a later one once it was sent back (``PendingQueue.to_back``).
        Unique too."""
        self.spec = spec
        self.submit = submit
        self.partition = partition
        self.tier = tier
        self.time_limit = time_limit
        """The limit in force: the job's own, else the partition default."""
        self.shape = Shape.of(spec, partition)
        self.key: object = self.shape
        """Jobs with equal keys have equal shapes: where one fails to place in a pass, another
        with a time limit at least as long fails too (the engine replaces the shape by a small
        int standing for it, which hashes faster)."""
        self.state = JobState.PENDING
        self.reason = Reason.NONE
        self.reason_plugin = ""
        self.reason_message = ""
        """The pending reason in the plugin's terms (``Status.message``), or empty."""
        self.priority = 0.0
        self.factors: Mapping[str, float] = {}
        self.expected_start: Instant | None = None
        self.start: Instant | None = None
        """Start of the current run."""
        self.first_start: Instant | None = None
        self.end: Instant | None = None
        self.alloc: Allocation | None = None
        self.holds: list[Allocation] = []
        """k8s-default only: pods placed while the rest of the gang waits."""
        self.hold_since: Instant | None = None
        self.restarts = 0
        self.run = 0
        self.seen = -1
        """Number of the last pass that looked at this job (set by the engine)."""
        """Run generation: bumped on every start, so stale timers are recognised."""
        self.attained_gpu_ms = 0
        """Service received so far (GPUs x ms over all runs): what LAS policies order by."""
        self.exit_code: int | None = None
        self.exit_signal = 0
        self.usage: RunUsage | None = None
        """What the last run that ended used, its steps aside (None: not measured)."""
        self.steps_usage: RunUsage | None = None
        """What the steps of that run used, together."""
        self.steps: tuple[StepRecord, ...] = ()
        """The steps of that run, as accounting shows them (``sacct``'s ``N.0`` rows)."""
        self.fixed_priority: float | None = None
        """Set by an administrator (``scontrol update priority=``): wins over the plugin."""
        self.array_job_id: int | None = None
        self.array_task_id: int | None = None

    @property
    def account(self) -> str:
        return self.spec.account

    @property
    def gpus(self) -> float:
        """GPUs of the smallest allocation the job accepts."""
        return self.shape.gpu_equivalent(self.shape.nodes_min)

    def attained_at(self, now: Instant) -> int:
        """Attained service including the current run up to ``now``."""
        if self.start is not None and self.alloc is not None:
            return self.attained_gpu_ms + int(self.alloc.gpus * (now - self.start))
        return self.attained_gpu_ms

    def __repr__(self) -> str:
        return f"Job({self.id}, {self.state.value}, {self.spec.name})"
