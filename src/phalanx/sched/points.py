"""The extension points of a scheduling pass: one ``Protocol`` each, with its contract.

The engine's recipe (``phalanx.engine.scheduling.recipe``) calls them in this order, as the
Kubernetes scheduling framework does (``framework/interface.go``) and as Kueue's
``schedule()`` steps go:

1. queue sort (``priority/*``)          5. reserve (``reserve/*``)
2. pre-filter (``admit/*``)             6. permit (``permit/*``)
3. filter (``filter/*``)                7. post-filter, preemption (``preempt/*``)
4. score (``select/*``)                 8. reservation and backfill (``sched/*``)

The engine itself takes a placement into the pass's snapshot (a start, or a pod held while its
gang waits); reserve plugins are told before it does. A profile names the plugins at each
point (``phalanx.sched.profile``). Expected outcomes are ``Status`` values, never exceptions.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

from phalanx.domain.time import Instant
from phalanx.sched.capacity import Allocation, Capacity, IntArray
from phalanx.sched.context import GangContext, PassContext
from phalanx.sched.job import Job
from phalanx.sched.occupancy import BoolArray, Occupancy
from phalanx.sched.shape import Shape
from phalanx.sched.status import Status

FloatArray = npt.NDArray[np.float64]

__all__ = [
    "Compacts",
    "FilterPlugin",
    "Idle",
    "PermitPlugin",
    "PostFilterPlugin",
    "PreFilterPlugin",
    "QueueSortPlugin",
    "Reprioritizes",
    "ReservationPlugin",
    "ReservationStep",
    "ReservePlugin",
    "ScorePlugin",
]


@runtime_checkable
class Compacts(Protocol):
    """A plugin, at any point, that keeps state it can compute again (a cache; rows of jobs
    long gone) may give it up: ``compact`` is called between two events, before the engine's
    state is saved (``phalanx.live.snapshot``), and must change no decision and no answer, so
    that a state saved after it and restored decides as the one that goes on."""

    def compact(self) -> None: ...


@runtime_checkable
class Idle(Protocol):
    """A pre-filter or reserve plugin that may have nothing to check on some clusters (Kueue's
    ClusterQueues on a cluster that has none). ``idle`` is asked once at the start of each
    pass; True promises that each of its ``pre_filter`` and ``reserve`` calls in that pass
    would return SUCCESS and change nothing, and the pass then makes none (a deep queue
    asks every job's pre-filter)."""

    def idle(self, ctx: PassContext) -> bool: ...


class QueueSortPlugin(Protocol):
    """``priority/*`` (queue sort): a number per pending job, higher first, with its factors.

    ``compute`` is called when a job is queued, ``compute_many`` for the whole queue at every
    recalculation (``calc_period``); the breakdown is what ``sprio`` prints. The queue keeps
    jobs by (priority, submit sequence). ``order`` is called once per pass with that queue and
    returns the order the pass visits it in: the queue itself for most plugins; a plugin may
    return a lazy iterator that reads ``ctx.state`` between jobs (Volcano's DRF re-sorts
    accounts after each start). Every job must come at most once.
    """

    def compute(
        self, job: Job, ctx: PassContext, now: Instant
    ) -> tuple[float, Mapping[str, float]]: ...

    def compute_many(
        self, jobs: Sequence[Job], ctx: PassContext, now: Instant
    ) -> list[tuple[float, Mapping[str, float]]]: ...

    def order(self, jobs: Sequence[Job], ctx: PassContext) -> Iterable[Job]: ...


@runtime_checkable
class Reprioritizes(Protocol):
    """A queue sort whose factors are live views (``compute`` gives each job the mapping its
    later calculations update in place) may give a recalculation the priorities alone: the
    engine then writes one number per queued job, not a pair. ``priorities`` returns what
    ``compute_many`` would (the same floats, bit for bit), as a new array the caller may
    change, or None where it cannot (a job never computed), and the engine calls
    ``compute_many``. ``seqs`` holds each job's submit sequence (``seqs[i] == jobs[i].seq``)
    as an array, built once per recalculation: a sort that keeps per-job state finds it by
    array indexing."""

    def priorities(
        self, jobs: Sequence[Job], ctx: PassContext, now: Instant, seqs: IntArray
    ) -> FloatArray | None: ...


class PreFilterPlugin(Protocol):
    """``admit/*`` (pre-filter): may this job take resources now? (quotas, QOS limits).

    Called for each job the pass looks at, before any placement. SUCCESS lets it go on; WAIT
    (with the reason ``squeue`` shows) skips it this pass. Pure: changes nothing.
    """

    def pre_filter(self, job: Job, ctx: PassContext) -> Status: ...


class FilterPlugin(Protocol):
    """``filter/*`` (filter): the nodes that could hold one node's share of ``shape`` in
    ``cap``. The masks of all filter plugins are combined with AND. Pure."""

    def filter(self, state: Occupancy, cap: Capacity, shape: Shape) -> BoolArray: ...


class ScorePlugin(Protocol):
    """``select/*`` (score): choose ``nodes`` of the filtered nodes (``mask``) for the gang,
    spanning at most ``max_leaves`` leaf switches if given, or None if they cannot hold it.

    The choice is the scoring (topology, packing, spreading), done for the whole gang at once
    as Slurm's select plugins do. Pure: reads ``state`` (static facts) and ``cap``.
    """

    def place(
        self,
        state: Occupancy,
        cap: Capacity,
        shape: Shape,
        mask: BoolArray,
        nodes: int,
        max_leaves: int | None,
    ) -> list[int] | None: ...


class ReservePlugin(Protocol):
    """``reserve/*`` (reserve): claim what a placement needs besides nodes, before permit.

    ``reserve`` is called once a placement was found for a job (for the whole gang, or for one
    pod with ``members="pods"``), before the engine takes it. SUCCESS lets it go on. WAIT
    refuses it: ``unreserve`` is then called on the reserve plugins that had succeeded for it,
    in reverse order, and the job waits with that status. ``unreserve`` is also called when a
    pod-by-pod gang gives back its held members (permit timeout, cancel, a node lost). It
    must be idempotent: a job may be unreserved more often than it was reserved.
    """

    def reserve(self, job: Job, alloc: Allocation, ctx: PassContext) -> Status: ...

    def unreserve(self, job: Job, ctx: PassContext) -> None: ...


class PermitPlugin(Protocol):
    """``permit/*`` (permit): a gang placed member by member waits here for all its members.

    Only profiles that place one member (pod) at a time have one; a whole-gang placement has
    every member at once, so nothing partial ever starts. ``begin`` is called at the start of
    each pass (time out waiting gangs with ``ctx.unreserve``, or ``ctx.requeue`` to send them
    behind the jobs of their priority too); ``permit`` for each job of the pass that holds
    members once no more of its ``members`` can be placed: SUCCESS starts it if it holds all
    of them (never with fewer), WAIT keeps them reserved and the job waits with that status.
    ``end`` is called after the last job of the pass.
    """

    def begin(self, ctx: GangContext) -> None: ...

    def permit(self, job: Job, members: int, ctx: GangContext) -> Status: ...

    def end(self, ctx: GangContext) -> None: ...


class PostFilterPlugin(Protocol):
    """``preempt/*`` (post-filter): for a job that fits nowhere, the running jobs to preempt.

    Called only for blocked jobs, at most once each per pass. Returns whole gangs whose freed
    resources form a placement the job can use (checked with ``ctx.place`` on a copy of the
    free capacity); ``[]`` when jobs already on their way out (``ctx.is_preempting``) will
    free one, so the job waits for them rather than preempting more; or None. Must not
    change anything: the engine signals the victims, and the job waits for them, nominated
    for what they free (``ctx.nominated``: kept from other jobs until it starts).
    """

    def victims(self, job: Job, ctx: PassContext) -> list[Job] | None: ...


class ReservationStep(Protocol):
    """One pass of a reservation plugin: what blocked jobs get, where later jobs may start.

    The recipe calls, for each job in order:

    - ``exhausted``, only while no whole GPU is free: True ends the pass; the jobs not looked
      at get ``rest`` (or keep their status if it is None);
    - ``known``, only for a job whose shape key is in ``failed``: a status if the job fails
      as that one did (it is then skipped with it); after such a status, while a whole GPU is
      free, ``pass_over`` with the jobs still to come and how many of them the pass may still
      look at (``bound``; negative: no bound): it consumes those that ``known`` would skip
      too, in order, at most ``bound`` (each given its status through ``wait`` if it has
      another, as the recipe does), and returns how many with the next job, the first it
      does not pass over or the one after the bound (None: none left), which the recipe goes
      on with;
    - after pre-filter, ``view``: the capacity the job may start in without delaying a
      reservation (None: all that is free), then ``started`` if it did;
    - for a job that did not start, ``blocked`` gives its status (None: it keeps the one it
      has); ``search`` says whether to ask the post-filter for victims, ``preempting`` if
      some were found; with ``stop_at_blocked`` the pass then ends, else ``settle`` gives the
      final status (a reservation, or a memo for ``known``; None keeps the job's).

    ``finish`` once at the end: the expected starts of the jobs it reserved for.
    """

    rest: Status | None
    rest_new_only: bool
    """``rest`` goes only to jobs that carry no reason yet; the others keep theirs."""
    stop_at_blocked: bool
    max_jobs: int | None
    """At most this many jobs are looked at; the others keep what they had (None: all)."""

    @property
    def failed(self) -> Mapping[object, object]:
        """Shape keys (``Job.key``) of jobs that failed this pass."""

    def exhausted(self, job: Job) -> bool: ...
    def known(self, job: Job) -> Status | None: ...
    def pass_over(
        self, jobs: Iterator[Job], wait: Callable[[Job, Status], None], bound: int = -1
    ) -> tuple[int, Job | None]: ...
    def view(self, job: Job) -> Capacity | None: ...
    def started(self, job: Job, alloc: Allocation) -> None: ...
    def blocked(self, job: Job) -> Status | None: ...
    def search(self, job: Job) -> bool: ...
    def preempting(self, job: Job) -> None: ...
    def settle(self, job: Job, status: Status | None) -> Status | None: ...
    def finish(self) -> None: ...


class ReservationPlugin(Protocol):
    """``sched/*`` (reservation and backfill): Slurm's SchedulerType.

    ``begin`` is called once per pass, after the snapshot, and returns that pass's step.
    ``could_preempt`` tells, for a job, whether its QOS or partition tier lets it preempt;
    None when no pending job can (the step may then end a pass on a full cluster early).
    """

    def begin(
        self, ctx: PassContext, *, could_preempt: Callable[[Job], bool] | None
    ) -> ReservationStep: ...
