"""One small interface per extension point, each with its contract.

The engine calls plugins during a scheduling pass through a ``PassContext``; plugins keep no
state between passes except through the occupancy and the job records the context exposes.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Protocol

from phalanx.domain.cluster import Cluster
from phalanx.domain.time import Instant
from phalanx.sched.capacity import Allocation, Capacity
from phalanx.sched.job import Job
from phalanx.sched.occupancy import Occupancy
from phalanx.sched.shape import Shape
from phalanx.sched.status import Status
from phalanx.sched.usage import Usage

__all__ = [
    "AdmitPlugin",
    "PassContext",
    "PreemptPlugin",
    "PriorityPlugin",
    "SchedulerPlugin",
    "SelectPlugin",
]


class PassContext(Protocol):
    """What a scheduling pass may see and do. Implemented by the engine."""

    @property
    def now(self) -> Instant: ...
    @property
    def cluster(self) -> Cluster: ...
    @property
    def state(self) -> Occupancy: ...
    @property
    def usage(self) -> Usage: ...

    def params(self, plugin: str) -> Mapping[str, object]:
        """The profile's parameters for ``plugin`` (empty if none)."""

    def pending(self) -> Sequence[Job]:
        """Pending jobs that are eligible now (not held, dependencies met), by priority."""

    def running(self) -> Iterable[Job]:
        """Jobs holding resources and running, in no particular order."""

    def place(self, job: Job, cap: Capacity | None = None) -> Allocation | None:
        """Where the whole gang fits in ``cap`` (default: free now), by the select plugin.

        Honours ``--switches=N@wait`` (relaxed once the job has waited long enough). Changes
        nothing: the caller starts, reserves or drops the result.
        """

    def place_shape(
        self, shape: Shape, nodes: int, cap: Capacity | None = None
    ) -> Allocation | None:
        """Like ``place`` for a bare shape (one pod of a job, say), with no switch limit."""

    def admit(self, job: Job) -> Status:
        """Run the admission plugins (quotas, limits). SUCCESS or the first refusal."""

    def start(self, job: Job, alloc: Allocation) -> None:
        """Assume the allocation and emit the launch. The job leaves the pending list."""

    def wait(self, job: Job, status: Status, expected_start: Instant | None = None) -> None:
        """Record why the job did not start this pass."""

    def wait_rest(self, jobs: Sequence[Job], start: int, status: Status) -> None:
        """``wait`` for ``jobs[start:]``: a pass that stops early still gives every job a
        reason (cheaply: jobs that already carry it are not touched)."""

    def could_preempt(self, job: Job) -> bool:
        """Whether ``job`` could preempt anything at all (by its QOS or partition tier)."""

    def preemptors_pending(self) -> bool:
        """Whether some pending job could preempt (a full cluster is then no reason to stop)."""

    def hold(self, job: Job, alloc: Allocation) -> None:
        """k8s-default only: keep one pod's resources while the rest of the gang waits."""

    def held(self) -> list[Job]:
        """k8s-default only: pending jobs that hold some pods, in submit order."""

    def release_holds(self, job: Job) -> None:
        """k8s-default only: give back every pod the job holds (timeout or deadlock)."""

    def preempt(self, victims: Sequence[Job], for_job: Job) -> None:
        """Signal, then requeue or cancel, each victim as its QOS or partition says."""

    def note_deadlock(self, jobs: Sequence[Job]) -> None:
        """Count a deadlock among partially placed gangs (k8s-default)."""

    def find_victims(self, job: Job) -> list[Job] | None:
        """Ask the profile's preempt plugin for victims (None without a plugin)."""

    def is_preempting(self, job: Job) -> bool:
        """Whether ``job`` was already signalled for preemption and is on its way out."""

    def wake_at(self, at: Instant) -> None:
        """Ask for another pass at ``at`` (a timeout a plugin waits for)."""

    def more_than_whole_gpus_pending(self) -> bool:
        """Whether some pending job needs no whole GPU (CPU-only or a GPU share)."""


class PriorityPlugin(Protocol):
    """``priority/*``: a number per pending job, higher first, with its factor breakdown.

    Called for every pending job when priorities are recalculated (on submit and every
    ``calc_period``); the breakdown is what ``sprio`` prints.
    """

    def compute(
        self, job: Job, ctx: PassContext, now: Instant
    ) -> tuple[float, Mapping[str, float]]: ...

    def compute_many(
        self, jobs: Sequence[Job], ctx: PassContext, now: Instant
    ) -> list[tuple[float, Mapping[str, float]]]:
        """``compute`` for every job of a recalculation, in order (may share work)."""


class SelectPlugin(Protocol):
    """``select/*``: choose ``nodes`` node indexes that can each hold one node's share of
    ``shape`` in ``cap``, spanning at most ``max_leaves`` leaf switches if given, or None.

    Pure: reads ``state`` (static facts) and ``cap`` (free resources), changes neither.
    """

    def place(
        self,
        state: Occupancy,
        cap: Capacity,
        shape: Shape,
        nodes: int,
        max_leaves: int | None,
    ) -> list[int] | None: ...


class AdmitPlugin(Protocol):
    """``admit/*``: may this job take resources now? (quotas, QOS limits). Pure."""

    def admit(self, job: Job, ctx: PassContext) -> Status: ...


class PreemptPlugin(Protocol):
    """``preempt/*``: the cheapest set of running jobs whose removal lets ``job`` start, or
    None. Must not change anything; the scheduler calls ``ctx.preempt`` with the answer."""

    def victims(self, job: Job, ctx: PassContext) -> list[Job] | None: ...


class SchedulerPlugin(Protocol):
    """``sched/*``: one scheduling pass over ``ctx.pending()``: starts, waits, preemptions.

    Every pending job it looks at ends the pass either started or with a ``wait`` status.
    """

    def schedule(self, ctx: PassContext) -> None: ...
