"""The simulated executor: runs jobs in virtual time and books where their GPU time went.

It is the simulator's side of the engine's commands: a ``Launch`` becomes a ``TasksExited``
after the launch latency (plus the restore of a checkpoint, for a job that resumes) and the work
the job has left (an elastic job's work goes at its size's rate, ``phalanx.sim.elastic``, and
a ``Resize`` moves its end); a ``Kill`` ends the run at once, keeping the work up to the last
checkpoint; a
``Signal`` (SIGTERM) makes a job that checkpoints on the signal (its spec says so, or the
preemption asked for a suspension) save its work and exit ``checkpoint_save_ms`` later, as a
live job that catches SIGTERM does; a ``Cleanup`` becomes ``CleanupDone`` after the epilog
time. Every GPU-millisecond a job holds is booked to one term of the efficiency model
(``phalanx.sim.records.JobRecord``).

Besides, it keeps two step timelines of the cluster: GPUs allocated, and min(idle GPUs, GPUs
asked by pending jobs), the capacity left idle while work waited. A job is pending from its
submission (or requeue) until it is launched, less the GPUs its placed pods already hold;
rejected jobs never are. Jobs submitted with a hold, a dependency or a begin time are left out
of that sum until they first start (the trace readers and the generator make none).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from mypy_extensions import mypyc_attr

from phalanx.domain.jobspec import SIGNALS
from phalanx.domain.time import SECOND, Duration, Instant
from phalanx.engine.decisions import (
    Cancelled,
    Decision,
    Ended,
    Held,
    NodeFailure,
    NodeWentDown,
    NodeWentUp,
    Preempted,
    Rejected,
    Requeued,
    Submitted,
    TimedOut,
    Unheld,
)
from phalanx.engine.events import CleanupDone, TasksExited
from phalanx.sim.records import JobRecord, Segment

if TYPE_CHECKING:
    from phalanx.sim.elastic import Scaling

__all__ = ["CHECKPOINT_RESTORE_MS", "CHECKPOINT_SAVE_MS", "RunState", "SimulatedExecutor"]

CHECKPOINT_SAVE_MS: Duration = 15 * SECOND
"""Time a job takes to save a checkpoint when signalled (Tiresias, NSDI'19, counts a
preemption as a save and a restore of tens of seconds together)."""
CHECKPOINT_RESTORE_MS: Duration = 15 * SECOND
"""Time a job that resumes from a checkpoint takes to load it before it does work again."""


@mypyc_attr(allow_interpreted_subclasses=True)
class RunState:
    __slots__ = (
        "alloc_nodes",
        "done",
        "exit",
        "gpus",
        "launched",
        "mark",
        "rate",
        "run",
        "running_from",
        "saving_from",
        "stopped",
    )

    def __init__(self, run: int, gpus: float, nodes: tuple[int, ...], at: Instant, lat: int):
        self.run = run
        self.gpus = gpus
        self.alloc_nodes = nodes
        self.launched = at
        self.running_from = at + lat
        self.saving_from: Instant | None = None
        """When the job began saving a checkpoint on a signal (it exits once saved)."""
        self.stopped = False
        self.rate = 1.0
        """Work done per ms at its size (an elastic job's ``Scaling.rate``; else 1)."""
        self.mark: Instant = self.running_from
        """Work is counted at ``rate`` from here (a resize moves it)."""
        self.done = 0.0
        """Work done by ``mark``."""
        self.exit: TasksExited | None = None
        """The natural end queued for this run (a resize replaces it)."""


@mypyc_attr(allow_interpreted_subclasses=True)
class SimulatedExecutor:
    def __init__(
        self,
        records: dict[int, JobRecord],
        remaining: dict[int, int],
        checkpoints: dict[int, int | None],
        *,
        launch_latency_ms: int,
        cleanup_ms: int,
        keep_segments: bool = True,
        total_gpus: float = 0.0,
        node_gpus: Sequence[int] = (),
        leaf_of: Sequence[int] = (),
        fewest_leaves: Sequence[int] = (),
        checkpoint_save_ms: Duration = CHECKPOINT_SAVE_MS,
        checkpoint_restore_ms: Duration = CHECKPOINT_RESTORE_MS,
    ) -> None:
        """``node_gpus`` and ``leaf_of`` are indexed by node; ``fewest_leaves[n]`` is the fewest
        leaf switches that hold ``n`` nodes (``phalanx.sim.leaves.fewest_leaves_table``).
        Without them no placement is judged and down nodes are not told from idle ones."""
        self.records = records
        self.remaining = remaining
        """Work (ms) each job still has to do; shrinks at each checkpoint kept."""
        self.checkpoints = checkpoints
        self.savers: set[int] = set()
        """Jobs that checkpoint on SIGTERM (``JobSpec.checkpoint_on_signal``)."""
        self.scaling: dict[int, Scaling] = {}
        """Elastic jobs' throughput by size: their end moves when they are resized."""
        self.suspending: set[int] = set()
        """Jobs whose preemption asked them to checkpoint now (a suspension, Tiresias)."""
        self.latency = launch_latency_ms
        self.cleanup = cleanup_ms
        self.save_ms = checkpoint_save_ms
        self.restore_ms = checkpoint_restore_ms
        self.keep_segments = keep_segments
        self.runs: dict[int, RunState] = {}
        self.preempted_at: dict[int, Instant] = {}
        """When a victim got its preemption signal: from then on its GPUs are evicting."""
        self.failed_nodes: set[int] = set()
        self.final_kill: set[int] = set()
        """Jobs killed for good (time limit, cancel): what they did counts as compute."""
        self.holds: dict[tuple[int, tuple[int, ...]], list[Instant]] = {}
        self.allocated = 0.0
        self.timeline: list[tuple[Instant, float]] = [(0, 0.0)]
        self.segments: list[Segment] = []
        self.finished = 0
        self.total_gpus = total_gpus
        self.node_gpus = node_gpus
        self.leaf_of = leaf_of
        self.fewest_leaves = fewest_leaves
        self.pending: dict[int, float] = {}
        """GPUs each pending job still asks for (its own less what its placed pods hold)."""
        self.pending_gpus = 0.0
        self.not_eligible: set[int] = set()
        """Jobs submitted with a hold, dependency or begin time: not counted as pending."""
        self.requeued_at: dict[int, Instant] = {}
        self.down_gpus = 0.0
        self.idle_pending: list[tuple[Instant, float]] = [(0, 0.0)]
        self._on: dict[type, Callable[[Any], None]] = {
            Preempted: self._preempted,
            TimedOut: self._final_kill,
            Cancelled: self._final_kill,
            NodeFailure: self._node_failure,
            Requeued: self._requeued,
            Ended: self._ended,
            Rejected: self._rejected,
            Held: self._held,
            Unheld: self._unheld,
            Submitted: self._submitted,
            NodeWentDown: self._node_went,
            NodeWentUp: self._node_went,
        }
        """What each kind of decision books (the others book nothing here)."""

    # -- allocation timeline --------------------------------------------------------------
    def _alloc(self, at: Instant, delta: float) -> None:
        self.allocated += delta
        last = self.timeline[-1]
        if last[0] == at:
            self.timeline[-1] = (at, self.allocated)
        else:
            self.timeline.append((at, self.allocated))
        self._note_idle_pending(at)

    def _note_idle_pending(self, at: Instant) -> None:
        idle = self.total_gpus - self.allocated - self.down_gpus
        value = min(idle, self.pending_gpus) if idle > 0 else 0.0
        last = self.idle_pending[-1]
        if last[1] == value:
            return
        if last[0] == at:
            self.idle_pending[-1] = (at, value)
        else:
            self.idle_pending.append((at, value))

    def _pend(self, at: Instant, job_id: int, gpus: float) -> None:
        """``job_id`` asks for ``gpus`` more (negative: fewer) while it waits."""
        self.pending[job_id] = self.pending.get(job_id, 0.0) + gpus
        self.pending_gpus += gpus
        self._note_idle_pending(at)

    def _unpend(self, at: Instant, job_id: int) -> None:
        asked = self.pending.pop(job_id, None)
        if asked is not None:
            self.pending_gpus -= asked
            if not self.pending:
                self.pending_gpus = 0.0  # no float residue once nothing waits
            self._note_idle_pending(at)

    def _judge_placement(self, rec: JobRecord, nodes: tuple[int, ...]) -> None:
        if len(nodes) < 2 or not self.leaf_of:
            return
        leaf_of = self.leaf_of
        spanned = len({leaf_of[n] for n in nodes})
        extra = spanned - self.fewest_leaves[len(nodes)]
        if extra > rec.extra_leaves:
            rec.extra_leaves = extra

    # -- commands -------------------------------------------------------------------------
    def launch(
        self, at: Instant, job_id: int, run: int, gpus: float, nodes: tuple[int, ...]
    ) -> TasksExited:
        rec = self.records[job_id]
        resumes = self.remaining[job_id] < rec.runtime_ms
        # Loading the checkpoint holds the GPUs like the launch does (booked with it).
        state = RunState(run, gpus, nodes, at, self.latency + (self.restore_ms if resumes else 0))
        self.runs[job_id] = state
        if rec.first_start is None:
            rec.first_start = at
        self._judge_placement(rec, nodes)
        requeued = self.requeued_at.pop(job_id, None)
        if requeued is not None:
            rec.requeue_wait_ms += at - requeued
        asked = self.pending.pop(job_id, None)
        if asked is not None:
            self.pending_gpus -= asked
            if not self.pending:
                self.pending_gpus = 0.0
        self._alloc(at, gpus)
        left = self.remaining[job_id]
        scaling = self.scaling.get(job_id)
        if scaling is not None:
            state.rate = scaling.rate(len(nodes))
            left = math.ceil(left / state.rate)
        state.exit = TasksExited(state.running_from + left, job_id, run, 0, 0)
        return state.exit

    def resize(
        self, at: Instant, job_id: int, run: int, gpus: float, nodes: tuple[int, ...]
    ) -> tuple[TasksExited, TasksExited] | None:
        """An elastic run now holds ``gpus`` on ``nodes``. What it held so far is booked
        (the end books the run at its last size, so the difference up to now is owed). A
        job with a ``Scaling`` works at its new size's rate from now: returns its queued end
        and the one that replaces it (None when the end does not move)."""
        state = self.runs.get(job_id)
        if state is None or state.run != run or state.stopped:
            return None
        rec = self.records[job_id]
        delta = state.gpus - gpus
        rec.launch_gpu_ms += int(delta * (min(at, state.running_from) - state.launched))
        rec.compute_gpu_ms += int(delta * max(0, at - state.running_from))
        resized = len(nodes) != len(state.alloc_nodes)
        state.gpus = gpus
        state.alloc_nodes = nodes
        self._alloc(at, -delta)
        scaling = self.scaling.get(job_id)
        old = state.exit
        if scaling is None or not resized or old is None or state.saving_from is not None:
            return None
        if at > state.mark:
            state.done += (at - state.mark) * state.rate
            state.mark = at
        state.rate = scaling.rate(len(nodes))
        left = max(0.0, self.remaining[job_id] - state.done)
        state.exit = TasksExited(state.mark + math.ceil(left / state.rate), job_id, run, 0, 0)
        return old, state.exit

    def _progress(self, state: RunState, job_id: int, until: Instant) -> tuple[int, int]:
        """(ms the run computed, work it did: ms at its base size) by ``until``, the work
        capped by what it had left. The two differ only for a job with a ``Scaling``."""
        spent = max(0, until - state.running_from)
        if job_id not in self.scaling:
            spent = min(spent, self.remaining[job_id])
            return spent, spent
        work = state.done + max(0, until - state.mark) * state.rate
        return spent, min(int(work), self.remaining[job_id])

    def exited(self, at: Instant, job_id: int, run: int) -> bool:
        """A natural exit: True if it is still current (the run was not killed before)."""
        state = self.runs.get(job_id)
        if state is None or state.run != run or state.stopped:
            return False
        state.stopped = True
        self.preempted_at.pop(job_id, None)  # it finished within its grace: nothing evicted
        self.suspending.discard(job_id)
        rec = self.records[job_id]
        rec.launch_gpu_ms += int(state.gpus * (state.running_from - state.launched))
        rec.compute_gpu_ms += int(state.gpus * (at - state.running_from))
        self.remaining[job_id] = 0
        return True

    def signal(self, at: Instant, job_id: int, run: int, signum: int) -> TasksExited | None:
        """SIGTERM to a job that checkpoints on it, or that a suspension asked to: it saves its
        work up to now and exits when the save is done (the returned exit, to hand to ``saved``
        then). Other jobs and signals change nothing (a job that does not catch SIGTERM is
        killed at the end of its grace)."""
        state = self.runs.get(job_id)
        if (
            signum != SIGNALS["TERM"]
            or (job_id not in self.savers and job_id not in self.suspending)
            or state is None
            or state.run != run
            or state.stopped
            or state.saving_from is not None
        ):
            return None
        state.saving_from = at
        return TasksExited(at + self.save_ms, job_id, run, 0, 0)

    def saved(self, at: Instant, job_id: int, run: int) -> bool:
        """The exit of a job whose checkpoint on a signal is saved: True if the run is still
        current (not ended or killed before the save was done). The work up to the signal is
        kept; the save is booked as eviction when a preemption asked for it."""
        state = self.runs.get(job_id)
        if (
            state is None
            or state.run != run
            or state.stopped
            or state.saving_from is None
            or at != state.saving_from + self.save_ms  # another exit of the run, not the save's
        ):
            return False
        state.stopped = True
        self.suspending.discard(job_id)
        rec = self.records[job_id]
        g = state.gpus
        work_end = max(state.saving_from, state.launched)
        rec.launch_gpu_ms += int(g * (min(state.running_from, work_end) - state.launched))
        spent, progress = self._progress(state, job_id, work_end)
        rec.compute_gpu_ms += int(g * spent)
        self.remaining[job_id] -= progress
        self.final_kill.discard(job_id)
        if self.preempted_at.pop(job_id, None) is not None:
            rec.evict_gpu_ms += int(g * (at - work_end))
        else:
            rec.compute_gpu_ms += int(g * (at - work_end))
        return True

    def kill(self, at: Instant, job_id: int, run: int) -> TasksExited | None:
        state = self.runs.get(job_id)
        if state is None or state.run != run or state.stopped:
            return None
        state.stopped = True
        self.suspending.discard(job_id)
        rec = self.records[job_id]
        g = state.gpus
        signalled = self.preempted_at.pop(job_id, None)
        work_end = at if signalled is None else max(min(signalled, at), state.launched)
        launch_end = min(state.running_from, work_end)
        rec.launch_gpu_ms += int(g * (launch_end - state.launched))
        spent, progress = self._progress(state, job_id, work_end)
        if signalled is not None:
            rec.evict_gpu_ms += int(g * (at - work_end))
        if job_id in self.final_kill:
            self.final_kill.discard(job_id)
            rec.compute_gpu_ms += int(g * spent)
            self.remaining[job_id] -= progress
        else:
            interval = self.checkpoints.get(job_id)
            kept = (progress // interval) * interval if interval else 0
            # The GPU time behind the work kept (the same ms unless the job scales).
            kept_ms = kept if spent == progress else (spent * kept // progress if progress else 0)
            rec.compute_gpu_ms += int(g * kept_ms)
            rec.lost_gpu_ms += int(g * (spent - kept_ms))
            self.remaining[job_id] -= kept
        return TasksExited(at, job_id, run, 0, 9)

    def cleanup_started(self, at: Instant, job_id: int, run: int) -> CleanupDone:
        return CleanupDone(at + self.cleanup, job_id, run)

    def cleanup_done(self, at: Instant, job_id: int) -> None:
        state = self.runs.get(job_id)
        if state is None:
            return
        rec = self.records[job_id]
        rec.cleanup_gpu_ms += int(state.gpus * self.cleanup)
        rec.held.append((state.launched, at))
        self._alloc(at, -state.gpus)
        if self.keep_segments:
            share = state.gpus / max(len(state.alloc_nodes), 1)
            for node in state.alloc_nodes:
                self.segments.append(Segment(job_id, node, state.launched, at, share))
        del self.runs[job_id]

    # -- what the engine decided ----------------------------------------------------------
    def observe(self, decisions: Sequence[Decision]) -> None:
        on = self._on
        for d in decisions:
            book = on.get(type(d))
            if book is not None:
                book(d)

    def _preempted(self, d: Preempted) -> None:
        self.preempted_at[d.job_id] = d.at
        if d.suspend:
            self.suspending.add(d.job_id)
        rec = self.records[d.job_id]
        rec.preemptions += 1
        rec.preempted_for.append(d.for_job)

    def _final_kill(self, d: TimedOut | Cancelled) -> None:
        self.final_kill.add(d.job_id)

    def _node_failure(self, d: NodeFailure) -> None:
        self.records[d.job_id].node_failures += 1

    def _requeued(self, d: Requeued) -> None:
        self.records[d.job_id].restarts += 1
        self.requeued_at[d.job_id] = d.at
        self._pend(d.at, d.job_id, self.records[d.job_id].gpus)

    def _ended(self, d: Ended) -> None:
        self._unpend(d.at, d.job_id)
        rec = self.records[d.job_id]
        rec.state = d.state.value
        rec.end = d.at
        self.finished += 1

    def _rejected(self, d: Rejected) -> None:
        self._unpend(d.at, d.job_id)
        rec = self.records[d.job_id]
        rec.rejected = d.problem
        rec.state = "REJECTED"
        rec.end = d.at
        self.finished += 1

    def _held(self, d: Held) -> None:
        self.holds.setdefault((d.job_id, d.nodes), []).append(d.at)
        self.pending[d.job_id] = self.pending.get(d.job_id, 0.0) - d.gpus
        self.pending_gpus -= d.gpus
        self._alloc(d.at, d.gpus)
        rec = self.records[d.job_id]
        if rec.first_start is None:
            rec.first_start = d.at

    def _unheld(self, d: Unheld) -> None:
        since = self.holds[(d.job_id, d.nodes)].pop()
        self.records[d.job_id].gang_wait_gpu_ms += int(d.gpus * (d.at - since))
        if d.job_id in self.pending:  # released while the job still waits
            self.pending[d.job_id] += d.gpus
            self.pending_gpus += d.gpus
        self._alloc(d.at, -d.gpus)

    def _submitted(self, d: Submitted) -> None:
        if d.job_id not in self.not_eligible:
            self._pend(d.at, d.job_id, self.records[d.job_id].gpus)

    def _node_went(self, d: NodeWentDown | NodeWentUp) -> None:
        down = type(d) is NodeWentDown
        if self.node_gpus and (d.node in self.failed_nodes) != down:
            self.down_gpus += self.node_gpus[d.node] * (1 if down else -1)
            self._note_idle_pending(d.at)
        if down:
            self.failed_nodes.add(d.node)
        else:
            self.failed_nodes.discard(d.node)
