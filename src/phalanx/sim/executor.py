"""The simulated executor: runs jobs in virtual time and books where their GPU time went.

It is the simulator's side of the engine's commands: a ``Launch`` becomes a ``TasksExited``
after the launch latency plus the work the job has left; a ``Kill`` ends the run at once,
keeping the work up to the last checkpoint; a ``Cleanup`` becomes ``CleanupDone`` after the
epilog time. Every GPU-millisecond a job holds is booked to one term of the efficiency model
(``phalanx.sim.records.JobRecord``).

Besides, it keeps two step timelines of the cluster: GPUs allocated, and min(idle GPUs, GPUs
asked by pending jobs), the capacity left idle while work waited. A job is pending from its
submission (or requeue) until it is launched, less the GPUs its placed pods already hold;
rejected jobs never are. Jobs submitted with a hold, a dependency or a begin time are left out
of that sum until they first start (the trace readers and the generator make none).
"""

from __future__ import annotations

from collections.abc import Sequence

from phalanx.domain.time import Instant
from phalanx.engine.decisions import Decision
from phalanx.engine.events import CleanupDone, TasksExited
from phalanx.sim.records import JobRecord, Segment

__all__ = ["RunState", "SimulatedExecutor"]


class RunState:
    __slots__ = ("alloc_nodes", "gpus", "launched", "run", "running_from", "stopped")

    def __init__(self, run: int, gpus: float, nodes: tuple[int, ...], at: Instant, lat: int):
        self.run = run
        self.gpus = gpus
        self.alloc_nodes = nodes
        self.launched = at
        self.running_from = at + lat
        self.stopped = False


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
    ) -> None:
        """``node_gpus`` and ``leaf_of`` are indexed by node; ``fewest_leaves[n]`` is the fewest
        leaf switches that hold ``n`` nodes (``phalanx.sim.leaves.fewest_leaves_table``).
        Without them no placement is judged and down nodes are not told from idle ones."""
        self.records = records
        self.remaining = remaining
        """Work (ms) each job still has to do; shrinks at each checkpoint kept."""
        self.checkpoints = checkpoints
        self.latency = launch_latency_ms
        self.cleanup = cleanup_ms
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
        state = RunState(run, gpus, nodes, at, self.latency)
        self.runs[job_id] = state
        rec = self.records[job_id]
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
        return TasksExited(state.running_from + self.remaining[job_id], job_id, run, 0, 0)

    def exited(self, at: Instant, job_id: int, run: int) -> bool:
        """A natural exit: True if it is still current (the run was not killed before)."""
        state = self.runs.get(job_id)
        if state is None or state.run != run or state.stopped:
            return False
        state.stopped = True
        rec = self.records[job_id]
        rec.launch_gpu_ms += int(state.gpus * (state.running_from - state.launched))
        rec.compute_gpu_ms += int(state.gpus * (at - state.running_from))
        self.remaining[job_id] = 0
        return True

    def kill(self, at: Instant, job_id: int, run: int) -> TasksExited | None:
        state = self.runs.get(job_id)
        if state is None or state.run != run or state.stopped:
            return None
        state.stopped = True
        rec = self.records[job_id]
        g = state.gpus
        signalled = self.preempted_at.pop(job_id, None)
        work_end = at if signalled is None else max(min(signalled, at), state.launched)
        launch_end = min(state.running_from, work_end)
        rec.launch_gpu_ms += int(g * (launch_end - state.launched))
        progress = max(0, work_end - state.running_from)
        progress = min(progress, self.remaining[job_id])
        if signalled is not None:
            rec.evict_gpu_ms += int(g * (at - work_end))
        if job_id in self.final_kill:
            self.final_kill.discard(job_id)
            rec.compute_gpu_ms += int(g * progress)
            self.remaining[job_id] -= progress
        else:
            interval = self.checkpoints.get(job_id)
            kept = (progress // interval) * interval if interval else 0
            rec.compute_gpu_ms += int(g * kept)
            rec.lost_gpu_ms += int(g * (progress - kept))
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
        self._alloc(at, -state.gpus)
        if self.keep_segments:
            share = state.gpus / max(len(state.alloc_nodes), 1)
            for node in state.alloc_nodes:
                self.segments.append(Segment(job_id, node, state.launched, at, share))
        del self.runs[job_id]

    # -- what the engine decided ----------------------------------------------------------
    def observe(self, decisions: list[Decision]) -> None:
        for at, kind, job_id, detail in decisions:
            if kind == "submit":
                if job_id not in self.not_eligible:
                    self._pend(at, job_id, self.records[job_id].gpus)
            elif kind == "preempt":
                self.preempted_at[job_id] = at
                self.records[job_id].preemptions += 1
            elif kind in ("timeout", "cancel"):
                self.final_kill.add(job_id)
            elif kind == "node_fail":
                self.records[job_id].node_failures += 1
            elif kind == "requeue":
                self.records[job_id].restarts += 1
                self.requeued_at[job_id] = at
                self._pend(at, job_id, self.records[job_id].gpus)
            elif kind == "end":
                self._unpend(at, job_id)
                rec = self.records[job_id]
                rec.state = str(detail[1])
                rec.end = at
                self.finished += 1
            elif kind == "reject":
                self._unpend(at, job_id)
                rec = self.records[job_id]
                rec.rejected = str(detail[0])
                rec.state = "REJECTED"
                rec.end = at
                self.finished += 1
            elif kind == "hold":
                nodes, gpus = detail
                assert isinstance(nodes, tuple) and isinstance(gpus, float)
                self.holds.setdefault((job_id, nodes), []).append(at)
                self.pending[job_id] = self.pending.get(job_id, 0.0) - gpus
                self.pending_gpus -= gpus
                self._alloc(at, gpus)
                rec = self.records[job_id]
                if rec.first_start is None:
                    rec.first_start = at
            elif kind == "unhold":
                nodes, gpus = detail
                assert isinstance(nodes, tuple) and isinstance(gpus, float)
                since = self.holds[(job_id, nodes)].pop()
                self.records[job_id].gang_wait_gpu_ms += int(gpus * (at - since))
                if job_id in self.pending:  # released while the job still waits
                    self.pending[job_id] += gpus
                    self.pending_gpus += gpus
                self._alloc(at, -gpus)
            elif kind == "node_down" or kind == "node_up":
                node = detail[0]
                assert isinstance(node, int)
                down = kind == "node_down"
                if self.node_gpus and (node in self.failed_nodes) != down:
                    self.down_gpus += self.node_gpus[node] * (1 if down else -1)
                    self._note_idle_pending(at)
                if down:
                    self.failed_nodes.add(node)
                else:
                    self.failed_nodes.discard(node)
