"""Job states and pending reasons, with Slurm's names, and the one transition function.

Every change of a job's state goes through ``transition``, which checks it against Slurm's
state machine (the table below); a change the table does not allow is a bug and raises.
"""

from __future__ import annotations

import enum
from typing import Protocol

__all__ = ["BadTransition", "JobState", "Reason", "Stateful", "can_transition", "transition"]


class JobState(enum.Enum):
    PENDING = "PENDING"
    RUNNING = "RUNNING"
    SUSPENDED = "SUSPENDED"
    COMPLETING = "COMPLETING"
    COMPLETED = "COMPLETED"
    FAILED = "FAILED"
    CANCELLED = "CANCELLED"
    TIMEOUT = "TIMEOUT"
    PREEMPTED = "PREEMPTED"
    NODE_FAIL = "NODE_FAIL"
    REQUEUED = "REQUEUED"
    OUT_OF_MEMORY = "OUT_OF_MEMORY"

    @property
    def is_final(self) -> bool:
        return self in _FINAL

    @property
    def short(self) -> str:
        """Slurm's two-letter code, as ``squeue %t`` prints it."""
        return _SHORT[self]


_FINAL = frozenset(
    {
        JobState.COMPLETED,
        JobState.FAILED,
        JobState.CANCELLED,
        JobState.TIMEOUT,
        JobState.PREEMPTED,
        JobState.NODE_FAIL,
        JobState.OUT_OF_MEMORY,
    }
)

_SHORT = {
    JobState.PENDING: "PD",
    JobState.RUNNING: "R",
    JobState.SUSPENDED: "S",
    JobState.COMPLETING: "CG",
    JobState.COMPLETED: "CD",
    JobState.FAILED: "F",
    JobState.CANCELLED: "CA",
    JobState.TIMEOUT: "TO",
    JobState.PREEMPTED: "PR",
    JobState.NODE_FAIL: "NF",
    JobState.REQUEUED: "RQ",
    JobState.OUT_OF_MEMORY: "OOM",
}

_S = JobState
_ALLOWED: dict[JobState, frozenset[JobState]] = {
    _S.PENDING: frozenset({_S.RUNNING, _S.CANCELLED, _S.FAILED}),
    _S.RUNNING: frozenset(
        {_S.COMPLETING, _S.SUSPENDED, _S.REQUEUED, _S.CANCELLED, _S.PREEMPTED, _S.NODE_FAIL}
    ),
    _S.SUSPENDED: frozenset({_S.RUNNING, _S.CANCELLED, _S.REQUEUED}),
    _S.COMPLETING: frozenset(
        {
            _S.COMPLETED,
            _S.FAILED,
            _S.CANCELLED,
            _S.TIMEOUT,
            _S.PREEMPTED,
            _S.NODE_FAIL,
            _S.OUT_OF_MEMORY,
            _S.REQUEUED,
        }
    ),
    _S.REQUEUED: frozenset({_S.PENDING}),
    # ``scontrol requeue`` of a finished batch job (Slurm: "a running, suspended or finished
    # Slurm batch job") takes it back through REQUEUED to PENDING.
    **{final: frozenset({_S.REQUEUED}) for final in _FINAL},
}


def can_transition(old: JobState, new: JobState) -> bool:
    return new in _ALLOWED.get(old, frozenset())


class BadTransition(AssertionError):
    """A state change Slurm's state machine does not allow: a bug in the caller, never a
    user's doing."""


class Stateful(Protocol):
    """Anything with a job state (the scheduler's ``Job``)."""

    state: JobState


def transition(subject: Stateful, new: JobState) -> None:
    """Move ``subject`` to ``new``; raise ``BadTransition`` (and change nothing) if the
    table does not allow it. The one place a job's state is set after it is created."""
    old = subject.state
    # By the members' names: an Enum member hashes by an interpreted ``__hash__`` (this
    # runs at every start and end; the answer is ``can_transition``'s).
    if new._name_ not in _ALLOWED_NAMES.get(old._name_, _NOWHERE):
        raise BadTransition(f"a job cannot go from {old.value} to {new.value}")
    subject.state = new


_NOWHERE: frozenset[str] = frozenset()
_ALLOWED_NAMES: dict[str, frozenset[str]] = {
    old._name_: frozenset(new._name_ for new in allowed) for old, allowed in _ALLOWED.items()
}


class Reason:
    """Pending reasons exactly as Slurm prints them in ``squeue %r``."""

    NONE = "None"
    PRIORITY = "Priority"
    RESOURCES = "Resources"
    DEPENDENCY = "Dependency"
    DEPENDENCY_NEVER = "DependencyNeverSatisfied"
    BEGIN_TIME = "BeginTime"
    HELD_USER = "JobHeldUser"
    HELD_ADMIN = "JobHeldAdmin"
    LAUNCH_FAILED_HELD = "launch failed requeued held"
    """Held after its launch failed (Slurm shows this text as the reason)."""
    ARRAY_LIMIT = "JobArrayTaskLimit"
    PARTITION_TIME = "PartitionTimeLimit"
    PARTITION_NODES = "PartitionNodeLimit"
    PARTITION_CONFIG = "PartitionConfig"
    """More nodes than the partition has (queued only without ``EnforcePartLimits``)."""
    BAD_CONSTRAINTS = "BadConstraints"
    QUOTA = "AssocGrpGRES"
    QUOTA_CPU = "AssocGrpCpuLimit"
    QUOTA_MEM = "AssocGrpMemLimit"
    INVALID_ACCOUNT = "InvalidAccount"
    """No queue takes the job's account (namespace): no LocalQueue, or a ClusterQueue whose
    namespaceSelector leaves it out."""
    QUEUE_STOPPED = "Stopped"
    """Kueue's reason for a ClusterQueue or LocalQueue whose ``stopPolicy`` holds admission."""
    QOS_QUOTA = "QOSGrpGRES"
    NODE_DOWN = "ReqNodeNotAvail"
    GANG_WAIT = "GangWait"
    """k8s-default only: some pods placed, waiting for the rest."""
