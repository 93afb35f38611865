"""Inputs of the engine. Every event carries ``at``: time is data.

Events are dataclasses that nothing changes once made. Most are frozen; the three a simulation
makes for every run (``TasksExited``, ``CleanupDone``, ``TimerFired``) are not: a frozen
dataclass's ``__init__`` sets each field through ``object.__setattr__``, several times the
cost of a plain one. They compare and hash as the frozen ones do (``unsafe_hash``)."""

from __future__ import annotations

from dataclasses import dataclass

from phalanx.domain.jobspec import JobSpec
from phalanx.domain.jobstep import StepRecord
from phalanx.domain.queues import Queues
from phalanx.domain.rusage import RunUsage
from phalanx.domain.time import Instant
from phalanx.engine.timers import TimerKey

__all__ = [
    "AccountingChange",
    "Cancel",
    "CleanupDone",
    "Event",
    "LaunchFailed",
    "NodeDown",
    "NodeUp",
    "NodeUpdate",
    "QueuesChange",
    "Requeue",
    "Submit",
    "TasksExited",
    "TimerFired",
    "Update",
]


@dataclass(frozen=True, slots=True)
class Submit:
    at: Instant
    spec: JobSpec
    key: str = ""
    """The request's idempotency key (its user's), "" for none: a request retried with the
    same key, as across a controller's failover, gets the ids of the first
    (``Engine.request_ids``)."""


@dataclass(frozen=True, slots=True)
class Cancel:
    at: Instant
    job_id: int
    by: str = "root"


@dataclass(frozen=True, slots=True)
class Update:
    """Change a job (``scontrol hold/release/update``). ``hold``: True holds a pending job,
    False releases it; ``time_limit`` (ms) and ``priority`` (a fixed value; None keeps the
    plugin's) apply where given. ``admin`` marks a hold as the administrator's."""

    at: Instant
    job_id: int
    by: str = "root"
    hold: bool | None = None
    time_limit: int | None = None
    priority: float | None = None
    admin: bool = False


@dataclass(frozen=True, slots=True)
class Requeue:
    """Put a running or finished job back to PENDING under the same id (``scontrol
    requeue``); a running one is killed first. Its restart count goes up."""

    at: Instant
    job_id: int
    by: str = "root"


@dataclass(frozen=True, slots=True)
class LaunchFailed:
    """The driver could not start the processes of run ``run``: the engine forgets it."""

    at: Instant
    job_id: int
    run: int
    reason: str = ""


@dataclass(slots=True, unsafe_hash=True)
class TasksExited:
    """Every process of run ``run`` has ended; ``exit_code`` is the highest, ``signal`` set
    if a signal ended them. ``usage``: what the run's own processes used (the batch script,
    or every task of a job that is not one); ``steps_usage``: its steps (``srun`` in the
    allocation) that ended before it, together. None where nothing was measured; kept on the
    job for accounting, never a reason for a decision. ``steps``: the run's steps as
    accounting shows them (one still running when the run ended is CANCELLED), likewise."""

    at: Instant
    job_id: int
    run: int
    exit_code: int = 0
    signal: int = 0
    usage: RunUsage | None = None
    steps_usage: RunUsage | None = None
    steps: tuple[StepRecord, ...] = ()


@dataclass(slots=True, unsafe_hash=True)
class CleanupDone:
    """The epilog of run ``run`` finished: its resources are free."""

    at: Instant
    job_id: int
    run: int


@dataclass(slots=True, unsafe_hash=True)
class TimerFired:
    """A ``WakeAt`` came due (drivers make these; they are never journaled)."""

    at: Instant
    key: TimerKey


@dataclass(frozen=True, slots=True)
class NodeDown:
    at: Instant
    node: int
    reason: str = "Not responding"


@dataclass(frozen=True, slots=True)
class NodeUp:
    at: Instant
    node: int


@dataclass(frozen=True, slots=True)
class NodeUpdate:
    """An administrator's (or a health check's) change of a node's state, as ``scontrol
    update NodeName=N State=S Reason=R``: ``drain`` (no new jobs; running jobs go on unless
    ``kill``), ``down`` (out of service, its jobs killed as on a node failure, until resumed
    even while its agent answers) or ``resume`` (back in service)."""

    at: Instant
    node: int
    state: str
    reason: str = ""
    user: str = "root"
    kill: bool = False
    """``drain`` only: end the node's jobs now, as on a node failure (a fatal GPU fault)."""


@dataclass(frozen=True, slots=True)
class Forget:
    """Forget the jobs that ended at or before ``before`` (Slurm's MinJobAge: their records
    are in the accounting store by now). An input, journaled, so that a replay and a standby
    following the journal forget the same jobs at the same point as the controller did --
    a forgotten job changes decisions (a dependency on it is ignored, as Slurm does)."""

    at: Instant
    before: Instant


@dataclass(frozen=True, slots=True)
class AccountingChange:
    """An administrator's ``sacctmgr add|modify|delete account|user|qos`` (accounts,
    associations, QOS and their limits: ``domain.accounting.change``), checked before it was
    accepted. ``where`` and ``settings`` are ``(key, value)`` pairs as typed."""

    at: Instant
    verb: str
    entity: str
    names: tuple[str, ...]
    where: tuple[tuple[str, str], ...] = ()
    settings: tuple[tuple[str, str], ...] = ()
    by: str = "root"


@dataclass(frozen=True, slots=True)
class QueuesChange:
    """The cluster's queue objects (Kueue's ClusterQueues, Cohorts, LocalQueues,
    ResourceFlavors, WorkloadPriorityClasses; Volcano's Queues) are now ``queues``, whole:
    what the Kubernetes API holds after a create, update or delete of one of them.
    ``objects`` is where they were read from (the objects' JSON, as the journal keeps it;
    the engine reads only ``queues``). Jobs already running keep running; pending ones are
    admitted against the new quota from the next pass on."""

    at: Instant
    queues: Queues
    objects: tuple[str, ...] = ()


Event = (
    Submit
    | Cancel
    | Update
    | Requeue
    | LaunchFailed
    | TasksExited
    | CleanupDone
    | TimerFired
    | NodeDown
    | NodeUp
    | NodeUpdate
    | Forget
    | AccountingChange
    | QueuesChange
)
