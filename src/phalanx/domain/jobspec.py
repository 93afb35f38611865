"""Job requests: a gang of tasks with resources, limits and relations to other jobs.

A ``JobSpec`` is what a user asked for, and all that policies may see of a job besides its
history: never the runtime a trace says it had.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field

from phalanx.domain.probes import RESTART_POLICIES, Probes
from phalanx.domain.time import Duration, Instant
from phalanx.errors import SpecError

__all__ = [
    "MAX_NICE",
    "MAX_TIME",
    "NODE_ADDRESS_AT_LAUNCH",
    "NODE_NAME_AT_LAUNCH",
    "SIGNALS",
    "ArraySpec",
    "DepKind",
    "Dependency",
    "JobSpec",
    "TaskLaunch",
]

MILLI = 1000
"""One whole GPU in thousandths: fractional requests are in these units."""

MAX_NICE = 2_147_483_645
"""Slurm's bound on ``--nice`` either way (NICE_OFFSET - 3). The priority columns are int64:
a nice of 10^30 overflowed them while the engine handled the submission, leaving the job
half-admitted (pending, no reason) and the journal holding an entry that fails again."""
MAX_TIME: int = 10**15
"""The longest time a request may name, in ms (about 31,700 years): limits, waits, leads,
intervals, and the latest ``begin`` instant. Instants plus such durations stay well inside
int64 milliseconds."""

NODE_NAME_AT_LAUNCH = "$(phalanx.node.name)"
"""In a task's environment or argv: the name of the node the task is launched on, known only
then (a pod's ``fieldRef: spec.nodeName``); the launch puts the name in its place."""
NODE_ADDRESS_AT_LAUNCH = "$(phalanx.node.address)"
"""Likewise the address of that node (``status.podIP``, ``status.hostIP``: tasks run as host
processes, so a pod's address is its node's)."""

SIGNALS = {"HUP": 1, "INT": 2, "QUIT": 3, "KILL": 9, "USR1": 10, "USR2": 12, "TERM": 15}


class DepKind(enum.Enum):
    AFTER = "after"
    AFTEROK = "afterok"
    AFTERANY = "afterany"
    AFTERNOTOK = "afternotok"
    SINGLETON = "singleton"


@dataclass(frozen=True, slots=True)
class Dependency:
    kind: DepKind
    job_ids: tuple[int, ...] = ()


@dataclass(frozen=True, slots=True)
class ArraySpec:
    """Task ids of an array and the most that may run at once (``%`` throttle)."""

    task_ids: tuple[int, ...]
    throttle: int | None = None


@dataclass(frozen=True, slots=True)
class TaskLaunch:
    """What one task of a gang runs where its tasks differ (a PyTorchJob's pods, one task
    each): its own argv, variables set over the ones Phalanx sets, directory and stdout."""

    command: tuple[str, ...]
    environment: tuple[tuple[str, str], ...] = ()
    workdir: str | None = None
    """None: the job's ``workdir``."""
    output: str | None = None
    """None: the job's ``output`` pattern."""
    restart: str = "Never"
    """A pod's ``restartPolicy``: ``Always`` (or ``OnFailure`` after a non-zero exit) has the
    node's agent restart the process in place, with the kubelet's back-off, and the run goes
    on until it is killed; ``Never``: the task's exit is its end (Slurm's tasks)."""
    probes: Probes | None = None
    """Startup, liveness and readiness probes the agent runs against the process."""

    def __post_init__(self) -> None:
        if self.restart not in RESTART_POLICIES:
            raise SpecError(
                f"unsupported value {self.restart!r}: one of {', '.join(RESTART_POLICIES)}",
                field="restartPolicy",
            )


@dataclass(frozen=True, slots=True)
class JobSpec:
    """One job request: ``nodes`` x ``tasks_per_node`` tasks, started all at once or not at all."""

    name: str = "job"
    user: str = "user"
    account: str = "root"
    partition: str | None = None
    qos: str = "normal"
    nodes_min: int = 1
    nodes_max: int = 1
    tasks_per_node: int = 1
    gpus_per_task: int = 0
    gpu_milli: int = 0
    """Fraction of one GPU (thousandths, 1-999) for a single-task job on a shared device."""
    cpus_per_task: int = 1
    mem_per_node_mb: int = 0
    gpu_models: frozenset[str] = frozenset()
    """Allowed GPU models; empty means any."""
    features: frozenset[str] = frozenset()
    time_limit: Duration | None = None
    """None: the partition's default time applies."""
    switches: int | None = None
    """``--switches=N@wait``: at most N leaf switches, held for up to ``switches_wait``."""
    switches_wait: Duration = 0
    exclusive: bool = False
    requeue: bool = True
    checkpoint_interval: Duration | None = None
    checkpoint_on_signal: bool = False
    """The job saves a checkpoint when it gets SIGTERM and exits once it is saved; run again,
    it resumes from there. A preemption whose grace outlasts the save then costs the save and
    the restore, not the work since the last periodic checkpoint (Tiresias' suspension)."""
    signal: int = SIGNALS["TERM"]
    signal_lead: Duration = 0
    """Send ``signal`` this long before the time limit."""
    dependencies: tuple[Dependency, ...] = ()
    array: ArraySpec | None = None
    begin: Instant | None = None
    hold: bool = False
    nice: int = 0
    comment: str = ""
    command: tuple[str, ...] = ()
    """What each task runs (argv; never passed through a shell). Empty in simulation."""
    workdir: str = "."
    """Directory the tasks start in (Slurm's submit directory)."""
    output: str | None = None
    """stdout file name pattern (``%j`` ...); None: ``slurm-%j.out`` (``slurm-%A_%a.out``)."""
    error: str | None = None
    """stderr file name pattern; None: stderr goes with stdout."""
    environment: tuple[tuple[str, str], ...] = ()
    """Variables the tasks start with, before the ones Phalanx sets."""
    batch: bool = False
    """Slurm's batch job: ``command`` (the script) runs once, on the first node, holding the
    whole allocation; ``srun`` inside it starts steps over the allocation."""
    extra: tuple[tuple[str, str], ...] = field(default=())
    tasks: tuple[TaskLaunch, ...] = ()
    """Per rank, where tasks differ: rank r runs ``tasks[r]`` instead of ``command``. Empty:
    every task runs ``command`` with ``environment`` (Slurm's jobs are all like that)."""
    elastic: bool = False
    """Phalanx's own (Slurm has no such option; ``sbatch --elastic``): while it runs, the
    job may be grown onto free nodes up to ``nodes_max`` and shrunk back down to ``nodes_min``
    instead of being preempted whole. Nodes come and go at the end of its allocation (its
    highest ranks); per-rank ``tasks`` then name every rank up to ``nodes_max``."""

    def __post_init__(self) -> None:
        if self.nodes_min < 1 or self.nodes_max < self.nodes_min:
            raise SpecError(f"invalid node count {self.nodes_min}-{self.nodes_max}", field="nodes")
        if self.tasks_per_node < 1:
            raise SpecError("tasks per node must be at least 1", field="ntasks-per-node")
        if self.gpus_per_task < 0:
            raise SpecError("GPU count cannot be negative", field="gpus")
        if self.gpu_milli:
            if not 0 < self.gpu_milli < MILLI:
                raise SpecError("a GPU fraction must be between 0 and 1", field="gpu_milli")
            if self.gpus_per_task or self.tasks_per_node != 1 or self.nodes_max != 1:
                raise SpecError("a GPU fraction is only for a single-task job", field="gpu_milli")
        if self.cpus_per_task < 0 or self.mem_per_node_mb < 0:
            raise SpecError("CPUs and memory cannot be negative", field="cpus/mem")
        if self.time_limit is not None and self.time_limit <= 0:
            raise SpecError("time limit must be positive", field="time")
        if not -MAX_NICE <= self.nice <= MAX_NICE:
            raise SpecError(f"nice must be between -{MAX_NICE} and {MAX_NICE}", field="nice")
        for name, value in (
            ("time", self.time_limit),
            ("switches", self.switches_wait),
            ("signal", self.signal_lead),
            ("checkpoint_interval", self.checkpoint_interval),
            ("begin", self.begin),
        ):
            if value is not None and value > MAX_TIME:
                raise SpecError("beyond 31,700 years", field=name)
        if self.switches is not None and self.switches < 1:
            raise SpecError("switch count must be at least 1", field="switches")
        if self.tasks:
            if (self.nodes_min != self.nodes_max and not self.elastic) or self.batch:
                raise SpecError("tasks of their own need a fixed node count", field="tasks")
            if len(self.tasks) != self.nodes_max * self.tasks_per_node:
                raise SpecError(
                    f"{len(self.tasks)} task launches for "
                    f"{self.nodes_max * self.tasks_per_node} tasks",
                    field="tasks",
                )
        if self.elastic and self.gpu_milli:
            raise SpecError("a GPU fraction cannot be elastic", field="elastic")

    @property
    def gpus_per_node(self) -> int:
        return self.tasks_per_node * self.gpus_per_task

    @property
    def cpus_per_node(self) -> int:
        return self.tasks_per_node * self.cpus_per_task

    @property
    def min_gpus(self) -> int:
        """Whole GPUs of the smallest allocation (a fraction counts as none)."""
        return self.nodes_min * self.gpus_per_node

    @property
    def gpu_equivalent(self) -> float:
        """GPUs at ``nodes_min``, a fraction counted as its share of one GPU."""
        return self.min_gpus + self.gpu_milli / MILLI
