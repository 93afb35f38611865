"""Elastic jobs in the pass: grown onto nodes nobody waits for, shrunk instead of preempted.

A job whose spec says ``elastic`` runs on between ``nodes_min`` and ``nodes_max`` nodes, and
the count may change while it runs (Phalanx's own; Slurm starts ``--nodes=MIN-MAX`` with what
fits and never changes it). Nodes are added at the end of its allocation and taken from the
end, so its lowest ranks (rank 0, where a rendezvous or a batch script lives) never move.

The rules, each one safe on its own:

- **Grow** (after step 6 of the pass, when every job that could start has): onto free nodes
  outside the partitions of every job still waiting in the eligible queue. A waiting job's
  reservation lies in its partition, so a grown job delays neither a waiting job nor a
  reservation. Not under ClusterQueues (growth would bypass quota) and never onto a node the
  run gave up before (agents know a run by job and run: a node that left it does not rejoin).
- **Shrink** (step 5, before whole gangs are chosen as victims): a blocked job that could
  preempt an elastic job (the same QOS and partition-tier rules as preemption) takes nodes
  from the end of elastic jobs above their minimum, lowest priority first, until it fits;
  it starts in the same pass. The shrunk job keeps running on the rest.

Every change is a ``Resized`` decision and a ``Resize`` command: the new ranks launched, the
removed ones sent SIGTERM, and SIGKILL after ``KILL_WAIT`` (a ``ReleaseTimer``) if still
there. The removed nodes are free at once: the job that needed them starts in the same pass
while the old tasks leave (a torchrun agent stops its workers and exits in a second or two).
A job's attained service counts what it actually held over time.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from mypy_extensions import mypyc_attr

from phalanx.domain.cluster import Cluster
from phalanx.domain.state import JobState
from phalanx.engine.commands import Command, Resize, WakeAt
from phalanx.engine.decisions import DecisionLog, Resized
from phalanx.engine.scheduling.preemption import Preemption
from phalanx.engine.timers import KILL_WAIT, ReleaseTimer
from phalanx.policies.preempt_checkpoint import may_preempt
from phalanx.sched.capacity import Allocation, Capacity
from phalanx.sched.context import PassContext
from phalanx.sched.job import Job
from phalanx.sched.occupancy import BoolArray, Occupancy

__all__ = ["Elastic", "part_of", "without"]

Place = Callable[[Job, Capacity], Allocation | None]
"""Where a gang would go in a capacity (the pass's filter and score), or None."""
PlaceNodes = Callable[[Job, int, Capacity], Allocation | None]
"""``nodes`` more nodes of a job's per-node shape in a capacity, or None."""


def part_of(alloc: Allocation, positions: range) -> Allocation:
    """The allocation's nodes at ``positions`` (in order), as an allocation of their own."""
    return Allocation(
        tuple(alloc.nodes[i] for i in positions),
        tuple(alloc.devices[i] for i in positions),
        alloc.milli,
        alloc.cpus,
        alloc.mem_mb,
    )


def without(alloc: Allocation, count: int) -> Allocation:
    """The allocation less its last ``count`` nodes."""
    return part_of(alloc, range(len(alloc.nodes) - count))


@mypyc_attr(allow_interpreted_subclasses=True)
class Elastic:
    """The running elastic jobs, and the grow and shrink steps of a pass."""

    def __init__(
        self,
        cluster: Cluster,
        state: Occupancy,
        decisions: DecisionLog,
        emit: Callable[[Command], None],
        preemption: Preemption,
    ) -> None:
        self._cluster = cluster
        self._state = state
        self._decisions = decisions
        self._emit = emit
        self._preemption = preemption
        self.jobs: dict[int, Job] = {}
        """Elastic jobs started and maybe still running (``running`` filters them)."""
        self._left: dict[int, tuple[int, frozenset[int]]] = {}
        """Job id -> (run, the nodes that run gave up): they do not rejoin it."""
        self.resizes = 0

    def track(self, job: Job) -> None:
        """``job`` just started: follow it if it is elastic."""
        if job.spec.elastic:
            self.jobs[job.id] = job

    def running(self) -> list[Job]:
        """The elastic jobs running now, by submission (forgetting those that are not)."""
        gone = [i for i, j in self.jobs.items() if j.state is not JobState.RUNNING]
        for i in gone:
            del self.jobs[i]
            self._left.pop(i, None)
        return sorted(self.jobs.values(), key=lambda j: j.seq)

    # -- shrink -------------------------------------------------------------------------
    def shrink_for(self, job: Job, ctx: PassContext, cap: Capacity | None, place: Place) -> bool:
        """Step 5's first resort: shrink elastic jobs ``job`` may preempt so that it fits in
        ``cap`` (the reservation step's view, None for all that is free). True if they were
        shrunk (``job`` then fits); nothing changes otherwise."""
        if not self.jobs or not self._preemption.could_preempt(job):
            return False
        cluster = self._cluster
        donors = [
            r
            for r in self.running()
            if r.id != job.id
            and r.alloc is not None
            and len(r.alloc.nodes) > r.spec.nodes_min
            and not self._preemption.is_preempting(r)
            and may_preempt(job, r, cluster)
        ]
        if not donors:
            return False
        donors.sort(key=lambda r: (r.priority, -r.seq))
        trial = (self._state.cap if cap is None else cap).copy()
        taken: list[tuple[Job, int]] = []
        fits = False
        for r in donors:
            assert r.alloc is not None
            n = len(r.alloc.nodes)
            count = 0
            while n - count > r.spec.nodes_min and not fits:
                count += 1
                trial.give(part_of(r.alloc, range(n - count, n - count + 1)))
                fits = place(job, trial) is not None
            taken.append((r, count))
            if fits:
                break
        if not fits:
            return False
        now = ctx.now
        for r, count in taken:
            assert r.alloc is not None
            removed = r.alloc.nodes[len(r.alloc.nodes) - count :]
            self._resize(r, without(r.alloc, count), (), removed, now, job.id)
        return True

    # -- grow ---------------------------------------------------------------------------
    def grow(self, ctx: PassContext, waiting: list[Job], place_nodes: PlaceNodes) -> None:
        """After the pass: grow running elastic jobs onto free nodes outside the partitions
        of the ``waiting`` jobs (module docstring), higher priority first."""
        if not self.jobs or self._cluster.queues.cluster_queues:
            return
        growing = [
            r
            for r in self.running()
            if r.alloc is not None
            and len(r.alloc.nodes) < r.spec.nodes_max
            and not self._preemption.is_preempting(r)
        ]
        if not growing:
            return
        state = self._state
        barred: BoolArray = np.zeros(state.n, dtype=np.bool_)
        seen: set[object] = set()
        for w in waiting:
            shape = w.shape
            key = (shape.partition, shape.models, shape.features)
            if key in seen:
                continue  # a long queue has few distinct placements
            seen.add(key)
            barred |= state.static_mask(shape)
            if barred.all():
                return
        growing.sort(key=lambda r: (-r.priority, r.seq))
        for r in growing:
            alloc = r.alloc
            assert alloc is not None
            left = self._left.get(r.id)
            off = barred.copy()
            off[list(alloc.nodes)] = True
            if left is not None and left[0] == r.run:
                off[list(left[1])] = True
            trial = state.cap.copy()
            trial.gpus[off] = -1
            trial.cpus[off] = -1
            trial.mem[off] = -1
            for more in range(r.spec.nodes_max - len(alloc.nodes), 0, -1):
                extra = place_nodes(r, more, trial)
                if extra is not None and not off[list(extra.nodes)].any():
                    grown = Allocation(
                        alloc.nodes + extra.nodes,
                        alloc.devices + extra.devices,
                        alloc.milli,
                        min(alloc.cpus, extra.cpus),
                        min(alloc.mem_mb, extra.mem_mb),
                    )
                    self._resize(r, grown, extra.nodes, (), ctx.now, None)
                    break

    # -- both ---------------------------------------------------------------------------
    def _resize(
        self,
        job: Job,
        alloc: Allocation,
        added: tuple[int, ...],
        removed: tuple[int, ...],
        now: int,
        for_job: int | None,
    ) -> None:
        old = job.alloc
        assert old is not None and job.start is not None
        self._state.resize(job.id, job.account, alloc)
        # The end of the run counts the allocation it ends with over the whole run: what the
        # old one held up to now, less what the new one will be counted for it, is owed.
        job.attained_gpu_ms += int((old.gpus - alloc.gpus) * (now - job.start))
        job.alloc = alloc
        if removed:
            run, left = self._left.get(job.id, (job.run, frozenset()))
            if run != job.run:
                left = frozenset()
            self._left[job.id] = (job.run, left | frozenset(removed))
        self.resizes += 1
        self._decisions.add(Resized(now, job.id, job.run, alloc.nodes, added, removed, for_job))
        self._emit(self._command(job, added, removed, kill=False))
        if removed:
            self._emit(WakeAt(now + KILL_WAIT, ReleaseTimer(job.id, job.run, removed)))

    def release(self, key: ReleaseTimer) -> None:
        """The grace of the tasks a run gave up is over: SIGKILL those still there."""
        job = self.jobs.get(key.job_id)
        if job is not None and job.run == key.run and job.state is JobState.RUNNING:
            self._emit(self._command(job, (), key.nodes, kill=True))

    @staticmethod
    def _command(
        job: Job, added: tuple[int, ...], removed: tuple[int, ...], *, kill: bool
    ) -> Resize:
        assert job.alloc is not None
        return Resize(
            job.id,
            job.run,
            job.alloc,
            added,
            removed,
            job.spec,
            job.time_limit,
            job.array_job_id,
            job.array_task_id,
            kill,
        )
