"""The discrete-event simulator: the driver loop on a virtual clock with simulated runs.

``phalanx.runtime.Driver`` orders the events (ends, arrivals, timers, the pass last) and hands
them to one ``Engine``; the simulator only fills its two ports: a ``VirtualClock``, which jumps
to each next event, and the simulated executor (``SimulatedRuns``), which turns launches into
exits after the work a job has left and books where the GPU time went.
"""

from __future__ import annotations

import dataclasses
import gc
import time
from collections.abc import Callable, Sequence

from mypy_extensions import mypyc_attr

from phalanx.domain.cluster import Cluster
from phalanx.domain.time import SECOND, Instant
from phalanx.engine import (
    Cleanup,
    CleanupDone,
    Command,
    Engine,
    Event,
    Kill,
    Launch,
    Resize,
    Signal,
    Submit,
    TasksExited,
    TimerFired,
)
from phalanx.engine.decisions import Decision
from phalanx.engine.timers import KillTimer, LimitTimer, RecalcTimer, ReleaseTimer
from phalanx.runtime import Driver, VirtualClock
from phalanx.sched.profile import Profile
from phalanx.sim.executor import CHECKPOINT_RESTORE_MS, CHECKPOINT_SAVE_MS, SimulatedExecutor
from phalanx.sim.faults import FaultModel
from phalanx.sim.leaves import fewest_leaves_table, leaf_of_nodes
from phalanx.sim.records import JobRecord, RunRecord
from phalanx.sim.workload import TraceJob

__all__ = ["SimulatedRuns", "Simulator"]

_PROGRESS_EVERY = 4096
"""Events between two progress reports."""
_OVER = (RecalcTimer, LimitTimer, KillTimer, ReleaseTimer)
"""Timers that start nothing once no run is left (``Simulator.stalled``)."""


@mypyc_attr(allow_interpreted_subclasses=True)
class Simulator:
    def __init__(
        self,
        cluster: Cluster,
        profile: Profile,
        workload: Sequence[TraceJob],
        *,
        launch_latency_ms: int = 2 * SECOND,
        cleanup_ms: int = 1 * SECOND,
        faults: FaultModel | None = None,
        mfu: float = 0.4,
        keep_segments: bool = True,
        checkpoint_save_ms: int = CHECKPOINT_SAVE_MS,
        checkpoint_restore_ms: int = CHECKPOINT_RESTORE_MS,
    ) -> None:
        self.cluster = cluster
        self.profile = profile
        # Submissions of one instant are handled in the trace's order: a stable sort keeps it.
        self.workload = sorted(workload, key=lambda tj: tj.submit)
        # A replay refuses what could never run here, as Slurm with EnforcePartLimits does:
        # such trace jobs are reported as rejected, not left pending to the end of the run.
        self.engine = Engine(dataclasses.replace(cluster, enforce_part_limits=True), profile)
        self.faults = faults
        self.mfu = mfu
        self.records: dict[int, JobRecord] = {}
        self._remaining: dict[int, int] = {}
        self._checkpoints: dict[int, int | None] = {}
        self.executor = SimulatedExecutor(
            self.records,
            self._remaining,
            self._checkpoints,
            launch_latency_ms=launch_latency_ms,
            cleanup_ms=cleanup_ms,
            keep_segments=keep_segments,
            total_gpus=float(cluster.total_gpus),
            node_gpus=tuple(node.gpus for node in cluster.nodes),
            leaf_of=leaf_of_nodes(cluster),
            fewest_leaves=fewest_leaves_table(cluster),
            checkpoint_save_ms=checkpoint_save_ms,
            checkpoint_restore_ms=checkpoint_restore_ms,
        )
        self.driver = Driver(self.engine, VirtualClock())
        runs = SimulatedRuns(self.executor, self.driver.deliver, self.driver.withdraw)
        self.driver.observer = runs
        self.driver.attach(runs)

    def run(self, progress: Callable[[int, int], None] | None = None) -> RunRecord:
        """Replay the workload to its end. Python's cyclic garbage collector is off meanwhile
        (and back as it was after): a run builds a heap of long-lived objects (jobs, records,
        the decision log) and next to no reference cycles, so the collector's full passes
        over that growing heap cost time (8 % of a 20,000-job Philly replay, more on deep
        queues) and free almost nothing (a few thousand objects a run)."""
        enabled = gc.isenabled()
        gc.disable()
        try:
            return self._run(progress)
        finally:
            if enabled:
                gc.enable()

    def _run(self, progress: Callable[[int, int], None] | None) -> RunRecord:
        wall0 = time.perf_counter()
        driver = self.driver
        executor = self.executor
        total = len(self.workload)
        # Job ids are handed out in the order submissions are handled: the trace's.
        job_id = self.engine.next_id
        for tj in self.workload:
            count = len(tj.spec.array.task_ids) if tj.spec.array is not None else 1
            for _ in range(count):
                self.register(job_id, tj)
                job_id += 1
        # Queued as one sorted batch beside the event heap: the heap then holds only the
        # events in flight, not the whole trace (``Driver.preload``).
        driver.preload([Submit(tj.submit, tj.spec) for tj in self.workload])
        if self.faults is not None and self.workload:
            horizon = max(tj.submit for tj in self.workload) + max(
                tj.runtime for tj in self.workload
            )
            for ev in self.faults.events(len(self.cluster.nodes), horizon):
                driver.deliver(ev)
        jobs = len(self.records)

        def finished() -> bool:
            return executor.finished >= jobs

        while (
            driver.run_due(stop=finished, limit=_PROGRESS_EVERY) == _PROGRESS_EVERY
            and not finished()
            and not self.stalled()
        ):
            if progress is not None:
                progress(executor.finished, total)
        if progress is not None:
            progress(executor.finished, total)
        return self.record(time.perf_counter() - wall0)

    def stalled(self) -> bool:
        """True when nothing can happen any more though jobs are left: no run holds GPUs
        and every queued event is the periodic priority recalculation or belongs to a run
        that is over (its natural end, time limit or kill timer, now stale). Jobs that wait
        on an idle cluster with no input to come (one no LocalQueue admits, one no quota
        can ever hold) would wait forever, and the recalculation's timer, which stays set
        while the queue is not empty, would keep the run going forever (or, behind a
        cancelled service's stale end years ahead, for millions of recalculations): the
        replay ends there instead, and those jobs are reported unfinished (no end)."""
        executor = self.executor
        if executor.runs or executor.allocated > 1e-6:  # float residue of many bookings
            return False
        return all(
            type(event) is TasksExited or (type(event) is TimerFired and type(event.key) in _OVER)
            for event in self.driver.queued()
        )

    def record(self, sim_wall_s: float) -> RunRecord:
        """What the run produced so far, as a ``RunRecord`` (the records are shared)."""
        executor = self.executor
        return RunRecord(
            policy=self.profile.name,
            total_gpus=self.cluster.total_gpus,
            node_count=len(self.cluster.nodes),
            jobs=list(self.records.values()),
            alloc_timeline=executor.timeline,
            segments=executor.segments,
            idle_pending_timeline=executor.idle_pending,
            deadlocks=self.engine.deadlocks,
            sim_wall_s=sim_wall_s,
            mfu=self.mfu,
            passes=self.engine.passes,
            queues=self.cluster.queues if self.cluster.queues.cluster_queues else None,
        )

    def register(self, job_id: int, tj: TraceJob) -> None:
        """Book job ``job_id`` (made from ``tj``) before the engine handles its submission:
        its record, the work it needs, its checkpointing."""
        spec = tj.spec
        self.records[job_id] = JobRecord(
            job_id=job_id,
            account=spec.account,
            user=spec.user,
            gpus=spec.gpu_equivalent,
            submit=tj.submit,
            runtime_ms=tj.runtime,
        )
        self._remaining[job_id] = tj.runtime
        if spec.hold or spec.dependencies or spec.begin is not None:
            self.executor.not_eligible.add(job_id)
        self._checkpoints[job_id] = spec.checkpoint_interval
        if spec.checkpoint_on_signal:
            self.executor.savers.add(job_id)
        if tj.scaling is not None and spec.elastic:
            self.executor.scaling[job_id] = tj.scaling


@mypyc_attr(allow_interpreted_subclasses=True)
class SimulatedRuns:
    """The simulator's executor port over ``SimulatedExecutor``: what a command becomes is
    computed at once and queued for its instant (``deliver``, not journaled: nothing here
    comes from outside). It also watches each handled event, to book a run's natural end and
    its epilog when the engine takes them, and to see the engine's decisions."""

    __slots__ = ("deliver", "executor", "withdraw")

    def __init__(
        self,
        executor: SimulatedExecutor,
        deliver: Callable[[Event], None],
        withdraw: Callable[[Event], None],
    ) -> None:
        self.executor = executor
        self.deliver = deliver
        self.withdraw = withdraw

    def launch(self, cmd: Launch, at: Instant) -> None:
        alloc = cmd.alloc
        self.deliver(self.executor.launch(at, cmd.job_id, cmd.run, alloc.gpus, alloc.nodes))

    def resize(self, cmd: Resize, at: Instant) -> None:
        # A job that works faster or slower at its new size ends at another time.
        moved = self.executor.resize(at, cmd.job_id, cmd.run, cmd.alloc.gpus, cmd.alloc.nodes)
        if moved is not None:
            self.withdraw(moved[0])
            self.deliver(moved[1])

    def signal(self, cmd: Signal, at: Instant) -> None:
        # A job that checkpoints on SIGTERM (or is asked to) exits once saved; others ignore it.
        saved = self.executor.signal(at, cmd.job_id, cmd.run, cmd.signal)
        if saved is not None:
            self.deliver(saved)

    def kill(self, cmd: Kill, at: Instant) -> None:
        killed = self.executor.kill(at, cmd.job_id, cmd.run)
        if killed is not None:
            self.deliver(killed)

    def cleanup(self, cmd: Cleanup, at: Instant) -> None:
        self.deliver(self.executor.cleanup_started(at, cmd.job_id, cmd.run))

    def handled(
        self, event: Event, decisions: Sequence[Decision], commands: Sequence[Command]
    ) -> None:
        executor = self.executor
        if type(event) is TasksExited:
            # The exit of a job that saved a checkpoint on a signal books what it kept; a
            # natural end books the run's work; the end of a run killed before it (stale,
            # ignored by the engine too) and a kill's own exit book nothing here.
            if not executor.saved(event.at, event.job_id, event.run):
                executor.exited(event.at, event.job_id, event.run)
        elif type(event) is CleanupDone:
            executor.cleanup_done(event.at, event.job_id)
        if decisions:
            executor.observe(decisions)
