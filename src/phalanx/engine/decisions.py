"""The decision log: every decision the engine took, in order, as typed records.

The same trace and seed give the same log, in simulation and live with a fake clock; tests
compare logs. Each record is a small ``Record`` (``engine.records``: it behaves as the frozen
dataclass it was) with the instant (``at``) first; readers (the simulated executor, the live
efficiency ledger) dispatch on the record's type. Records of different types never compare
equal, even with the same fields.
"""

from __future__ import annotations

from phalanx.domain.cluster import PreemptMode
from phalanx.domain.state import JobState
from phalanx.domain.time import Instant
from phalanx.engine.records import Record

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


class Submitted(Record):
    """A job was created (one per array task); ``seq`` is its unique submit sequence."""

    __match_args__ = ("at", "job_id", "seq")
    __slots__ = ("at", "job_id", "seq")

    def __init__(self, at: Instant, job_id: int, seq: int) -> None:
        self.at = at
        self.job_id = job_id
        self.seq = seq


class Rejected(Record):
    """The job could never run here (Slurm refuses it at submission); it ends FAILED."""

    __match_args__ = ("at", "job_id", "problem")
    __slots__ = ("at", "job_id", "problem")

    def __init__(self, at: Instant, job_id: int, problem: str) -> None:
        self.at = at
        self.job_id = job_id
        self.problem = problem


class Started(Record):
    __match_args__ = ("at", "job_id", "run", "nodes")
    __slots__ = ("at", "job_id", "nodes", "run")

    def __init__(self, at: Instant, job_id: int, run: int, nodes: tuple[int, ...]) -> None:
        self.at = at
        self.job_id = job_id
        self.run = run
        self.nodes = nodes


class Held(Record):
    """k8s-default: some of a gang's pods hold ``gpus`` on ``nodes`` while the rest wait."""

    __match_args__ = ("at", "job_id", "nodes", "gpus")
    __slots__ = ("at", "gpus", "job_id", "nodes")

    def __init__(self, at: Instant, job_id: int, nodes: tuple[int, ...], gpus: float) -> None:
        self.at = at
        self.job_id = job_id
        self.nodes = nodes
        self.gpus = gpus


class Unheld(Record):
    """A hold (``Held``) was given back."""

    __match_args__ = ("at", "job_id", "nodes", "gpus")
    __slots__ = ("at", "gpus", "job_id", "nodes")

    def __init__(self, at: Instant, job_id: int, nodes: tuple[int, ...], gpus: float) -> None:
        self.at = at
        self.job_id = job_id
        self.nodes = nodes
        self.gpus = gpus


class Preempted(Record):
    """Run ``run`` of the job was chosen as a victim for job ``for_job``."""

    __match_args__ = ("at", "job_id", "run", "for_job", "mode", "suspend")
    __slots__ = ("at", "for_job", "job_id", "mode", "run", "suspend")

    def __init__(
        self,
        at: Instant,
        job_id: int,
        run: int,
        for_job: int,
        mode: PreemptMode,
        suspend: bool = False,
    ) -> None:
        self.at = at
        self.job_id = job_id
        self.run = run
        self.for_job = for_job
        self.mode = mode
        self.suspend = suspend
        """The victim is asked to checkpoint at the signal and requeued with that work (a
        suspension: the profile's ``suspend_grace``, Tiresias)."""


class Resized(Record):
    """Run ``run`` of an elastic job now holds ``nodes``: grown onto ``added`` (free nodes no
    waiting job could use), or shrunk off ``removed`` for job ``for_job`` (instead of being
    preempted whole)."""

    __match_args__ = ("at", "job_id", "run", "nodes", "added", "removed", "for_job")
    __slots__ = ("added", "at", "for_job", "job_id", "nodes", "removed", "run")

    def __init__(
        self,
        at: Instant,
        job_id: int,
        run: int,
        nodes: tuple[int, ...],
        added: tuple[int, ...] = (),
        removed: tuple[int, ...] = (),
        for_job: int | None = None,
    ) -> None:
        self.at = at
        self.job_id = job_id
        self.run = run
        self.nodes = nodes
        self.added = added
        self.removed = removed
        self.for_job = for_job


class Deadlocked(Record):
    """Gangs hold parts of the cluster that none can complete (k8s-default); ``job_id`` is
    the first of ``jobs``."""

    __match_args__ = ("at", "job_id", "jobs")
    __slots__ = ("at", "job_id", "jobs")

    def __init__(self, at: Instant, job_id: int, jobs: tuple[int, ...]) -> None:
        self.at = at
        self.job_id = job_id
        self.jobs = jobs


class TimedOut(Record):
    __match_args__ = ("at", "job_id", "run")
    __slots__ = ("at", "job_id", "run")

    def __init__(self, at: Instant, job_id: int, run: int) -> None:
        self.at = at
        self.job_id = job_id
        self.run = run


class Exited(Record):
    """Every task of run ``run`` has ended; the job is COMPLETING."""

    __match_args__ = ("at", "job_id", "run", "exit_code", "signal")
    __slots__ = ("at", "exit_code", "job_id", "run", "signal")

    def __init__(self, at: Instant, job_id: int, run: int, exit_code: int, signal: int) -> None:
        self.at = at
        self.job_id = job_id
        self.run = run
        self.exit_code = exit_code
        self.signal = signal


class Requeued(Record):
    """The job is PENDING again under its id."""

    __match_args__ = ("at", "job_id", "run")
    __slots__ = ("at", "job_id", "run")

    def __init__(self, at: Instant, job_id: int, run: int) -> None:
        self.at = at
        self.job_id = job_id
        self.run = run


class Ended(Record):
    """The job reached the final ``state``."""

    __match_args__ = ("at", "job_id", "run", "state")
    __slots__ = ("at", "job_id", "run", "state")

    def __init__(self, at: Instant, job_id: int, run: int, state: JobState) -> None:
        self.at = at
        self.job_id = job_id
        self.run = run
        self.state = state


class Cancelled(Record):
    """A cancel by ``by`` was taken (a running job gets SIGTERM, then SIGKILL)."""

    __match_args__ = ("at", "job_id", "by")
    __slots__ = ("at", "by", "job_id")

    def __init__(self, at: Instant, job_id: int, by: str) -> None:
        self.at = at
        self.job_id = job_id
        self.by = by


class Updated(Record):
    __match_args__ = ("at", "job_id", "hold", "time_limit", "priority")
    __slots__ = ("at", "hold", "job_id", "priority", "time_limit")

    def __init__(
        self,
        at: Instant,
        job_id: int,
        hold: bool | None,
        time_limit: int | None,
        priority: float | None,
    ) -> None:
        self.at = at
        self.job_id = job_id
        self.hold = hold
        self.time_limit = time_limit
        self.priority = priority


class RequeueAsked(Record):
    """A requeue of the running run ``run`` was asked by ``by``: it is killed first."""

    __match_args__ = ("at", "job_id", "run", "by")
    __slots__ = ("at", "by", "job_id", "run")

    def __init__(self, at: Instant, job_id: int, run: int, by: str) -> None:
        self.at = at
        self.job_id = job_id
        self.run = run
        self.by = by


class LaunchLost(Record):
    """The driver could not start run ``run``: the job is pending again."""

    __match_args__ = ("at", "job_id", "run", "reason")
    __slots__ = ("at", "job_id", "reason", "run")

    def __init__(self, at: Instant, job_id: int, run: int, reason: str) -> None:
        self.at = at
        self.job_id = job_id
        self.run = run
        self.reason = reason


class NodeFailure(Record):
    """Run ``run`` of the job lost ``node``: it is killed."""

    __match_args__ = ("at", "job_id", "run", "node")
    __slots__ = ("at", "job_id", "node", "run")

    def __init__(self, at: Instant, job_id: int, run: int, node: int) -> None:
        self.at = at
        self.job_id = job_id
        self.run = run
        self.node = node


class NodeWentDown(Record):
    __match_args__ = ("at", "node")
    __slots__ = ("at", "node")

    def __init__(self, at: Instant, node: int) -> None:
        self.at = at
        self.node = node


class NodeWentUp(Record):
    __match_args__ = ("at", "node")
    __slots__ = ("at", "node")

    def __init__(self, at: Instant, node: int) -> None:
        self.at = at
        self.node = node


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
