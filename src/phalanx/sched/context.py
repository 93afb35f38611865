"""What plugins may see and do during a scheduling pass: narrow contexts, one per need.

The engine runs the pass (``phalanx.engine.scheduling``) and hands plugins one of these, never
itself. Plugins keep no state between passes except through the occupancy and job records;
``scratch`` is theirs for the length of one pass.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Protocol

from phalanx.domain.cluster import Cluster
from phalanx.domain.time import Instant
from phalanx.sched.capacity import Allocation, Capacity
from phalanx.sched.job import Job
from phalanx.sched.occupancy import BoolArray, Occupancy
from phalanx.sched.shape import Shape
from phalanx.sched.usage import Usage

__all__ = ["GangContext", "PassContext"]


class PassContext(Protocol):
    """The view of one pass every extension point gets."""

    @property
    def now(self) -> Instant: ...
    @property
    def cluster(self) -> Cluster: ...
    @property
    def state(self) -> Occupancy:
        """The snapshot: free resources by node, running allocations and their ends. Plugins
        read it; only the engine changes it (starts, holds)."""

    @property
    def usage(self) -> Usage: ...
    @property
    def scratch(self) -> dict[object, object]:
        """A cache for plugins, emptied at the start of every pass."""

    def params(self, plugin: str) -> Mapping[str, object]:
        """The profile's parameters for ``plugin`` (empty if none): a plugin that shares
        another's settings (preemption by the queue sort's queues) reads them here."""

    def running(self) -> Iterable[Job]:
        """Jobs holding resources and running, in no particular order."""

    def place(self, job: Job, cap: Capacity | None = None) -> Allocation | None:
        """Filter, then score: where the whole gang fits in ``cap`` (default: free now),
        less what is kept for other jobs nominated after a preemption (``nominated``).

        Honours ``--switches=N@wait`` (relaxed once the job has waited long enough, with a
        wake-up asked for that moment). Changes nothing: the caller starts, reserves or drops
        the result."""

    def narrow(self, job: Job, nodes: BoolArray) -> None:
        """For the rest of this pass, ``place`` puts ``job`` only on ``nodes`` (a mask over
        the cluster's nodes), as Kubernetes' ``PreFilterResult.NodeNames`` does. Called by
        pre-filter plugins (a quota that assigns a flavor); narrowing again intersects."""

    def leaf_limit(self, job: Job) -> int | None:
        """The most leaf switches ``place`` lets ``job`` span now: its ``--switches``, or the
        profile's default for multi-node gangs, until it has waited long enough; ``None``
        when unlimited."""

    def place_shape(
        self, shape: Shape, nodes: int, cap: Capacity | None = None
    ) -> Allocation | None:
        """Like ``place`` for a bare shape (one pod of a job, say), with no switch limit,
        in ``cap`` as given (the caller leaves out what is kept for nominated jobs)."""

    def is_preempting(self, job: Job) -> bool:
        """Whether ``job`` was already signalled for preemption and is on its way out."""

    def victims_leaving(self, job: Job) -> bool:
        """Whether running jobs ``job`` preempted in an earlier pass are still ending."""

    def nominated(self) -> Sequence[Job]:
        """Pending jobs for which resources freed by preemption are kept (kube-scheduler's
        nominated pods): they preempted, or wait for jobs already leaving, and have not
        started yet. ``place`` already keeps their placements from other jobs; a quota plugin
        counts their quota as held, for them alone. In the order they were nominated."""

    def expect(self, job: Job, start: Instant | None) -> None:
        """Record a blocked job's expected start (its reason stays)."""

    def wake_at(self, at: Instant) -> None:
        """Ask for another pass at ``at`` (a timeout a plugin waits for)."""

    def more_than_whole_gpus_pending(self) -> bool:
        """Whether some pending job needs no whole GPU (CPU-only or a GPU share)."""


class GangContext(PassContext, Protocol):
    """What a permit plugin gets besides: the gangs waiting with some members reserved."""

    def waiting(self) -> Sequence[Job]:
        """Pending jobs holding the resources of some of their members, in submit order."""

    def unreserve(self, job: Job) -> None:
        """Give back every member ``job`` holds. Idempotent."""

    def requeue(self, job: Job) -> None:
        """``unreserve`` ``job``, and queue it again behind the pending jobs of its priority
        (ahead of those that come later), as kube-scheduler queues a pod again under a new
        timestamp after a failed attempt. Call it before the pass takes its queue (``begin``).
        """

    def note_deadlock(self, jobs: Sequence[Job]) -> None:
        """Count a deadlock among partially reserved gangs (the decision log keeps it)."""
