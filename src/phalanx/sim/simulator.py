"""The discrete-event simulator: a heap of events in virtual time driving one ``Engine``.

Heap entries are ``(time, order, seq, event)``, the order of ``phalanx.engine.ordering`` (ends,
arrivals, timers, the pass last); ``seq`` makes it total and deterministic.
"""

from __future__ import annotations

import dataclasses
import heapq
import time
from collections.abc import Callable, Sequence

from phalanx.domain.cluster import Cluster
from phalanx.domain.time import SECOND
from phalanx.engine import (
    Cleanup,
    CleanupDone,
    Engine,
    Event,
    Kill,
    Launch,
    NodeDown,
    NodeUp,
    Submit,
    TasksExited,
    TimerFired,
    WakeAt,
)
from phalanx.engine.commands import PASS, Command
from phalanx.engine.ordering import ARRIVAL, END, PASS_ORDER, TIMER
from phalanx.sched.profile import Profile
from phalanx.sim.executor import SimulatedExecutor
from phalanx.sim.faults import FaultModel
from phalanx.sim.leaves import fewest_leaves_table, leaf_of_nodes
from phalanx.sim.records import JobRecord, RunRecord
from phalanx.sim.workload import TraceJob

__all__ = ["Simulator"]


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
    ) -> None:
        self.cluster = cluster
        self.profile = profile
        self.workload = workload
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
        )
        self._heap: list[tuple[int, int, int, object]] = []
        self._seq = 0

    def _push(self, at: int, prio: int, item: object) -> None:
        self._seq += 1
        heapq.heappush(self._heap, (at, prio, self._seq, item))

    def run(self, progress: Callable[[int, int], None] | None = None) -> RunRecord:
        wall0 = time.perf_counter()
        heap = self._heap
        for i, tj in enumerate(self.workload):
            heap.append((tj.submit, ARRIVAL, -len(self.workload) + i, tj))
        if self.faults is not None and self.workload:
            horizon = max(tj.submit for tj in self.workload) + max(
                tj.runtime for tj in self.workload
            )
            for ev in self.faults.events(len(self.cluster.nodes), horizon):
                heap.append((ev.at, ARRIVAL, self._seq, ev))
                self._seq += 1
        heapq.heapify(heap)
        engine = self.engine
        executor = self.executor
        decisions = engine.decisions
        seen = 0
        total = len(self.workload)
        submitted = 0
        steps = 0
        pop = heapq.heappop
        while heap:
            at, _, _, item = pop(heap)
            if isinstance(item, TraceJob):
                event: Event = Submit(at, item.spec)
                first = engine.next_id
                commands = engine.handle(event)
                for job_id in range(first, engine.next_id):
                    self._register(job_id, item)
                submitted += 1
            elif isinstance(item, TasksExited):
                if not executor.exited(at, item.job_id, item.run):
                    continue
                commands = engine.handle(item)
            elif isinstance(item, _Killed):
                commands = engine.handle(item.event)
            else:
                assert isinstance(item, CleanupDone | TimerFired | NodeDown | NodeUp)
                if isinstance(item, CleanupDone):
                    executor.cleanup_done(at, item.job_id)
                commands = engine.handle(item)
            if len(decisions.entries) > seen:
                executor.observe(decisions.since(seen))
                seen = len(decisions.entries)
            if commands:
                self._carry_out(at, commands)
            steps += 1
            if progress is not None and steps % 4096 == 0:
                progress(executor.finished, total)
            if submitted == total and executor.finished >= len(self.records):
                break
        if progress is not None:
            progress(executor.finished, total)
        return RunRecord(
            policy=self.profile.name,
            total_gpus=self.cluster.total_gpus,
            node_count=len(self.cluster.nodes),
            jobs=list(self.records.values()),
            alloc_timeline=executor.timeline,
            segments=executor.segments,
            idle_pending_timeline=executor.idle_pending,
            deadlocks=engine.deadlocks,
            sim_wall_s=time.perf_counter() - wall0,
            mfu=self.mfu,
            passes=engine.passes,
        )

    def _register(self, job_id: int, tj: TraceJob) -> None:
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

    def _carry_out(self, at: int, commands: list[Command]) -> None:
        executor = self.executor
        for cmd in commands:
            if isinstance(cmd, WakeAt):
                prio = PASS_ORDER if cmd.key == PASS else TIMER
                self._push(cmd.at, prio, TimerFired(cmd.at, cmd.key))
            elif isinstance(cmd, Launch):
                ev = executor.launch(at, cmd.job_id, cmd.run, cmd.alloc.gpus, cmd.alloc.nodes)
                self._push(ev.at, END, ev)
            elif isinstance(cmd, Kill):
                killed = executor.kill(at, cmd.job_id, cmd.run)
                if killed is not None:
                    self._push(at, END, _Killed(killed))
            elif isinstance(cmd, Cleanup):
                done = executor.cleanup_started(at, cmd.job_id, cmd.run)
                self._push(done.at, END, done)
            # Signal and Persist need nothing in simulation: simulated jobs ignore signals.


class _Killed:
    """A kill's exit: already booked by the executor, so it goes straight to the engine."""

    __slots__ = ("event",)

    def __init__(self, event: TasksExited) -> None:
        self.event = event
