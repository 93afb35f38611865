"""The decision log: every decision the engine took, in order, as typed records.

The same trace and seed give the same log, in simulation and live with a fake clock; tests
compare logs. Each record is a small frozen dataclass with the instant (``at``) first; readers
(the simulated executor, the live efficiency ledger) dispatch on the record's type. Records of
different types never compare equal, even with the same fields.
"""

from __future__ import annotations

from dataclasses import dataclass

from phalanx.domain.cluster import PreemptMode
from phalanx.domain.state import JobState
from phalanx.domain.time import Instant

__all__ = [
    "Cancelled",
    "Deadlocked",
    "Decision",
    "DecisionLog",
    "Ended",
    "Exited",
    "Held",
    "LaunchLost",
    "NodeFailure",
    "NodeWentDown",
    "NodeWentUp",
    "Preempted",
    "Rejected",
    "RequeueAsked",
    "Requeued",
    "Resized",
    "Started",
    "Submitted",
    "TimedOut",
    "Unheld",
    "Updated",
]


@dataclass(frozen=True, slots=True)
class Submitted:
    """A job was created (one per array task); ``seq`` is its unique submit sequence."""

    at: Instant
    job_id: int
    seq: int


@dataclass(frozen=True, slots=True)
class Rejected:
    """The job could never run here (Slurm refuses it at submission); it ends FAILED."""

    at: Instant
    job_id: int
    problem: str


@dataclass(frozen=True, slots=True)
class Started:
    at: Instant
    job_id: int
    run: int
    nodes: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class Held:
    """k8s-default: some of a gang's pods hold ``gpus`` on ``nodes`` while the rest wait."""

    at: Instant
    job_id: int
    nodes: tuple[int, ...]
    gpus: float


@dataclass(frozen=True, slots=True)
class Unheld:
    """A hold (``Held``) was given back."""

    at: Instant
    job_id: int
    nodes: tuple[int, ...]
    gpus: float


@dataclass(frozen=True, slots=True)
class Preempted:
    """Run ``run`` of the job was chosen as a victim for job ``for_job``."""

    at: Instant
    job_id: int
    run: int
    for_job: int
    mode: PreemptMode
    suspend: bool = False
    """The victim is asked to checkpoint at the signal and requeued with that work (a
    suspension: the profile's ``suspend_grace``, Tiresias)."""


@dataclass(frozen=True, slots=True)
class Resized:
    """Run ``run`` of an elastic job now holds ``nodes``: grown onto ``added`` (free nodes no
    waiting job could use), or shrunk off ``removed`` for job ``for_job`` (instead of being
    preempted whole)."""

    at: Instant
    job_id: int
    run: int
    nodes: tuple[int, ...]
    added: tuple[int, ...] = ()
    removed: tuple[int, ...] = ()
    for_job: int | None = None


@dataclass(frozen=True, slots=True)
class Deadlocked:
    """Gangs hold parts of the cluster that none can complete (k8s-default); ``job_id`` is
    the first of ``jobs``."""

    at: Instant
    job_id: int
    jobs: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class TimedOut:
    at: Instant
    job_id: int
    run: int


@dataclass(frozen=True, slots=True)
class Exited:
    """Every task of run ``run`` has ended; the job is COMPLETING."""

    at: Instant
    job_id: int
    run: int
    exit_code: int
    signal: int


@dataclass(frozen=True, slots=True)
class Requeued:
    """The job is PENDING again under its id."""

    at: Instant
    job_id: int
    run: int


@dataclass(frozen=True, slots=True)
class Ended:
    """The job reached the final ``state``."""

    at: Instant
    job_id: int
    run: int
    state: JobState


@dataclass(frozen=True, slots=True)
class Cancelled:
    """A cancel by ``by`` was taken (a running job gets SIGTERM, then SIGKILL)."""

    at: Instant
    job_id: int
    by: str


@dataclass(frozen=True, slots=True)
class Updated:
    at: Instant
    job_id: int
    hold: bool | None
    time_limit: int | None
    priority: float | None


@dataclass(frozen=True, slots=True)
class RequeueAsked:
    """A requeue of the running run ``run`` was asked by ``by``: it is killed first."""

    at: Instant
    job_id: int
    run: int
    by: str


@dataclass(frozen=True, slots=True)
class LaunchLost:
    """The driver could not start run ``run``: the job is pending again."""

    at: Instant
    job_id: int
    run: int
    reason: str


@dataclass(frozen=True, slots=True)
class NodeFailure:
    """Run ``run`` of the job lost ``node``: it is killed."""

    at: Instant
    job_id: int
    run: int
    node: int


@dataclass(frozen=True, slots=True)
class NodeWentDown:
    at: Instant
    node: int


@dataclass(frozen=True, slots=True)
class NodeWentUp:
    at: Instant
    node: int


Decision = (
    Submitted
    | Rejected
    | Started
    | Held
    | Unheld
    | Preempted
    | Resized
    | Deadlocked
    | TimedOut
    | Exited
    | Requeued
    | Ended
    | Cancelled
    | Updated
    | RequeueAsked
    | LaunchLost
    | NodeFailure
    | NodeWentDown
    | NodeWentUp
)


class DecisionLog:
    __slots__ = ("add", "entries")

    def __init__(self) -> None:
        self.entries: list[Decision] = []
        self.add = self.entries.append
        """Append one decision (the list's own ``append``: the log grows on every event)."""

    def __len__(self) -> int:
        return len(self.entries)

    def since(self, index: int) -> list[Decision]:
        return self.entries[index:]
