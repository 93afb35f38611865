"""Public test helpers, in the spirit of ``trio.testing``: builders and a deterministic driver.

- ``make_job(gpus=8, nodes=4, time_limit=HOUR, account="a")``: a ``JobSpec`` with a few
  readable defaults (GPUs are per node, like ``--gpus-per-node``; one task per node).
- ``small_cluster(nodes=4, gpus=8, per_leaf=2, accounts={"a": 1, "b": 1})``: a uniform
  ``Cluster`` (``regular_cluster``) with optional accounts, quotas and partition settings.
- ``EngineDriver``: feeds events to one ``Engine`` in virtual time and answers its commands
  like a fake executor: ``WakeAt`` becomes a ``TimerFired`` at that instant, ``Launch`` ends
  with ``TasksExited`` after the job's runtime (if one was given; else it runs until killed),
  ``Kill`` ends the run at once, ``Cleanup`` gives ``CleanupDone`` after ``cleanup_ms``.
  Events of one instant are handled in the simulator's order: ends, arrivals, timers, and the
  scheduling pass last. No clock is read; everything is deterministic.
- ``run_engine(cluster, profile, jobs)``: a driver that replays ``(submit, spec, runtime)``
  entries (or ``TraceJob``s) to the end and is returned for inspection.
"""

from __future__ import annotations

import dataclasses
import heapq
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from phalanx.config.clusterspec import regular_cluster
from phalanx.domain.cluster import Account, Cluster, Partition, PreemptMode
from phalanx.domain.jobspec import JobSpec
from phalanx.domain.state import JobState
from phalanx.domain.time import HOUR, Duration, Instant
from phalanx.engine.commands import PASS, Cleanup, Command, Kill, Launch, WakeAt
from phalanx.engine.decisions import Decision
from phalanx.engine.engine import Engine
from phalanx.engine.events import (
    Cancel,
    CleanupDone,
    Event,
    LaunchFailed,
    NodeDown,
    NodeUp,
    Submit,
    TasksExited,
    TimerFired,
)
from phalanx.live.clock import WallClock
from phalanx.live.driver import AsyncDriver
from phalanx.live.journal import MemoryJournal
from phalanx.live.loop import ControlLoop
from phalanx.live.process import ProcessExecutor
from phalanx.policies.catalog import POLICIES
from phalanx.policies.catalog import profile as named_profile
from phalanx.sched.job import Job
from phalanx.sched.profile import Profile
from phalanx.sim.workload import TraceJob

if TYPE_CHECKING:
    from phalanx.sim.records import RunRecord

__all__ = [
    "EngineDriver",
    "LiveStack",
    "large_run",
    "live_stack",
    "make_job",
    "run_engine",
    "small_cluster",
]

_END, _ARRIVE, _TIMER, _PASS = 0, 1, 2, 3
"""Order of events at one instant, as in ``phalanx.sim.simulator``."""


def make_job(
    gpus: int = 1,
    nodes: int = 1,
    time_limit: Duration | None = HOUR,
    account: str = "root",
    *,
    name: str = "job",
    user: str = "user",
    qos: str = "normal",
    nodes_max: int | None = None,
    **extra: Any,
) -> JobSpec:
    """A job of ``nodes`` nodes with ``gpus`` GPUs on each (one task per node).

    Any other ``JobSpec`` field may be given by keyword (``switches=1``, ``requeue=False``,
    ``dependencies=...``, ``tasks_per_node=2`` -- then ``gpus`` is per task).
    """
    return JobSpec(
        name=name,
        user=user,
        account=account,
        qos=qos,
        nodes_min=nodes,
        nodes_max=nodes if nodes_max is None else nodes_max,
        gpus_per_task=gpus,
        time_limit=time_limit,
        **extra,
    )


def large_run(n: int = 82_000, *, seed: int = 1, accounts: int = 1) -> RunRecord:
    """A finished simulated run the size of the Philly trace: ``n`` one-GPU jobs of up to
    6 h submitted over 30 days on 128 nodes x 8 GPUs, one segment each, with the allocation
    timeline of every start and end; accounts ``a`` (one) or ``acct0``... (several)."""
    import numpy as np

    from phalanx.domain.time import DAY, SECOND
    from phalanx.sim.records import JobRecord, RunRecord, Segment

    rng = np.random.default_rng(seed)
    submit = np.sort(rng.integers(0, 30 * DAY, n))
    start = submit + rng.integers(0, HOUR, n)
    end = start + rng.integers(SECOND, 6 * HOUR, n)
    node = rng.integers(0, 128, n)
    jobs = [
        JobRecord(
            job_id=k,
            account="a" if accounts == 1 else f"acct{k % accounts}",
            user="u",
            gpus=1.0,
            submit=int(submit[k]),
            runtime_ms=int(end[k] - start[k]),
            first_start=int(start[k]),
            end=int(end[k]),
        )
        for k in range(n)
    ]
    segments = [Segment(k, int(node[k]), int(start[k]), int(end[k]), 1.0) for k in range(n)]
    times = np.concatenate([start, end])
    deltas = np.concatenate([np.ones(n), -np.ones(n)])
    order = np.argsort(times, kind="stable")
    timeline = list(zip(times[order].tolist(), np.cumsum(deltas[order]).tolist(), strict=True))
    return RunRecord(
        policy="big",
        total_gpus=1024,
        node_count=128,
        jobs=jobs,
        alloc_timeline=timeline,
        segments=segments,
    )


def small_cluster(
    nodes: int = 4,
    gpus: int = 8,
    per_leaf: int = 2,
    *,
    leaves_per_spine: int | None = None,
    accounts: Mapping[str, int] | None = None,
    quotas: Mapping[str, int] | None = None,
    default_time: Duration | None = None,
    max_time: Duration | None = None,
    preempt_mode: PreemptMode = PreemptMode.OFF,
    grace_time: Duration = 0,
) -> Cluster:
    """A ``regular_cluster`` of ``nodes`` x ``gpus``, ``per_leaf`` nodes per leaf switch.

    ``accounts`` maps account names (children of root) to their shares; ``quotas`` gives
    some of them a nominal GPU quota. The one partition ``gpu`` takes the time and preemption
    settings given. QOS ``normal`` and ``high`` (which may preempt ``normal``) exist.
    """
    cluster = regular_cluster(nodes, gpus, per_leaf, leaves_per_spine=leaves_per_spine)
    quotas = quotas or {}
    accts: dict[str, Account] = {"root": Account("root", None)}
    for acct_name, shares in (accounts or {}).items():
        accts[acct_name] = Account(acct_name, "root", shares, quotas.get(acct_name))
    for acct_name, quota in quotas.items():
        if acct_name not in accts:
            accts[acct_name] = Account(acct_name, "root", 1, quota)
    part = dataclasses.replace(
        cluster.partitions["gpu"],
        default_time=default_time,
        max_time=max_time,
        preempt_mode=preempt_mode,
        grace_time=grace_time,
    )
    partitions: dict[str, Partition] = {"gpu": part}
    return dataclasses.replace(cluster, accounts=accts, partitions=partitions)


class EngineDriver:
    """Drives one ``Engine`` deterministically with a fake clock and a fake executor.

    Typical use::

        d = EngineDriver(small_cluster(), "slurm")
        [a] = d.submit(make_job(gpus=8), runtime=10 * MINUTE)
        d.settle()                      # runs the pass of this instant
        assert d.state(a) is JobState.RUNNING
        d.advance(10 * MINUTE)          # the job ends, the next pass runs
    """

    def __init__(
        self,
        cluster: Cluster,
        profile: Profile | str = "fifo",
        *,
        cleanup_ms: Duration = 0,
        first_job_id: int = 1,
    ) -> None:
        self.profile = named_profile(profile) if isinstance(profile, str) else profile
        self.engine = Engine(cluster, self.profile, first_job_id=first_job_id)
        self.now: Instant = 0
        self.cleanup_ms = cleanup_ms
        self.commands: list[tuple[Instant, Command]] = []
        """Every command the engine gave, with the instant it gave it."""
        self.events: list[Event] = []
        """Every event fed to the engine, in order."""
        self.runtimes: dict[int, Duration | None] = {}
        """How long each job's processes run once launched (None: until killed)."""
        self.submitted: list[list[int]] = []
        """Job ids of each ``Submit`` handled, in order (an array gives several)."""
        self._heap: list[tuple[Instant, int, int, Event | tuple[JobSpec, Duration | None]]] = []
        self._seq = 0

    # -- feeding --------------------------------------------------------------------------
    def _push(self, at: Instant, prio: int, item: Event | tuple[JobSpec, Duration | None]) -> None:
        self._seq += 1
        heapq.heappush(self._heap, (at, prio, self._seq, item))

    def feed(self, event: Event) -> list[Command]:
        """Hand one event to the engine now and answer its commands (no pass is run)."""
        self.now = max(self.now, event.at)
        self.events.append(event)
        commands = self.engine.handle(event)
        for cmd in commands:
            self.commands.append((event.at, cmd))
            self._answer(event.at, cmd)
        return commands

    def _answer(self, at: Instant, cmd: Command) -> None:
        match cmd:
            case WakeAt(at=when, key=key):
                self._push(when, _PASS if key == PASS else _TIMER, TimerFired(when, key))
            case Launch(job_id=job_id, run=run):
                runtime = self.runtimes.get(job_id)
                if runtime is not None:
                    self._push(at + runtime, _END, TasksExited(at + runtime, job_id, run))
            case Kill(job_id=job_id, run=run):
                self._push(at, _END, TasksExited(at, job_id, run, 0, 9))
            case Cleanup(job_id=job_id, run=run):
                done = at + self.cleanup_ms
                self._push(done, _END, CleanupDone(done, job_id, run))
            case _:
                pass  # Signal and Persist need no answer: fake jobs ignore signals

    def _submit_now(self, spec: JobSpec, runtime: Duration | None) -> list[int]:
        first = self.engine.next_id
        self.feed(Submit(self.now, spec))
        ids = list(range(first, self.engine.next_id))
        for job_id in ids:
            self.runtimes[job_id] = runtime
        self.submitted.append(ids)
        return ids

    def submit(self, spec: JobSpec, runtime: Duration | None = None) -> list[int]:
        """Submit now; returns the new job ids. Call ``settle()`` to run the pass."""
        return self._submit_now(spec, runtime)

    def submit_at(self, at: Instant, spec: JobSpec, runtime: Duration | None = None) -> None:
        """Submit at a later instant (ids appear in ``submitted`` once it is handled)."""
        self._push(at, _ARRIVE, (spec, runtime))

    # -- running --------------------------------------------------------------------------
    def next_at(self) -> Instant | None:
        """When the next queued event happens, if any."""
        return self._heap[0][0] if self._heap else None

    def step(self) -> Event | None:
        """Handle the next queued event; returns it (None if nothing is queued)."""
        if not self._heap:
            return None
        at, _, _, item = heapq.heappop(self._heap)
        self.now = max(self.now, at)
        if isinstance(item, tuple):
            spec, runtime = item
            self._submit_now(spec, runtime)
            return self.events[-1]
        self.feed(item)
        return item

    def advance(self, to: Instant, *, max_events: int = 1_000_000) -> None:
        """Handle every queued event up to and including ``to``; the clock is then ``to``."""
        for _ in range(max_events):
            if not self._heap or self._heap[0][0] > to:
                self.now = max(self.now, to)
                return
            self.step()
        raise RuntimeError(f"more than {max_events} events before {to}")

    def settle(self) -> None:
        """Handle everything queued for the current instant (the pass comes last)."""
        self.advance(self.now)

    def run(self, until: Instant | None = None, *, max_events: int = 1_000_000) -> None:
        """Handle events until none is left (or the next is after ``until``)."""
        for _ in range(max_events):
            if not self._heap or (until is not None and self._heap[0][0] > until):
                return
            self.step()
        raise RuntimeError(f"more than {max_events} events: a job that never ends?")

    # -- shortcuts: feed one event at the current instant and settle -------------------------
    def finish(self, job_id: int, exit_code: int = 0) -> None:
        """The job's processes exit now with ``exit_code``; cleanup and the pass follow."""
        self.feed(TasksExited(self.now, job_id, self.job(job_id).run, exit_code))
        self.settle()

    def cancel(self, job_id: int, by: str = "root") -> None:
        self.feed(Cancel(self.now, job_id, by))
        self.settle()

    def fail_launch(self, job_id: int, reason: str = "launch failed") -> None:
        self.feed(LaunchFailed(self.now, job_id, self.job(job_id).run, reason))
        self.settle()

    def node_down(self, node: int) -> None:
        self.feed(NodeDown(self.now, node))
        self.settle()

    def node_up(self, node: int) -> None:
        self.feed(NodeUp(self.now, node))
        self.settle()

    def run_pass(self) -> None:
        """Run a scheduling pass now even if the engine did not ask for one."""
        self.feed(TimerFired(self.now, PASS))

    # -- looking ---------------------------------------------------------------------------
    def job(self, job_id: int) -> Job:
        return self.engine.jobs[job_id]

    def state(self, job_id: int) -> JobState:
        return self.engine.jobs[job_id].state

    def decisions(self, kind: str | None = None, job_id: int | None = None) -> list[Decision]:
        """Entries of the decision log, optionally of one kind and one job."""
        return [
            d
            for d in self.engine.decisions.entries
            if (kind is None or d[1] == kind) and (job_id is None or d[2] == job_id)
        ]

    def sent(self, kind: type[Any], job_id: int | None = None) -> list[Any]:
        """Commands of one type (``Launch``, ``Signal``, ``Kill``...), optionally for one job."""
        return [
            c
            for _, c in self.commands
            if isinstance(c, kind) and (job_id is None or getattr(c, "job_id", None) == job_id)
        ]


def run_engine(
    cluster: Cluster,
    profile: Profile | str,
    jobs: Iterable[tuple[Instant, JobSpec, Duration | None] | TraceJob],
    *,
    until: Instant | None = None,
    cleanup_ms: Duration = 0,
    max_events: int = 1_000_000,
) -> EngineDriver:
    """Replay ``jobs`` -- ``(submit, spec, runtime)`` tuples or ``TraceJob``s -- to the end.

    A runtime of None runs until the time limit kills the job. Returns the driver, whose
    ``engine``, ``submitted`` ids and ``commands`` are there to inspect.
    """
    driver = EngineDriver(cluster, profile, cleanup_ms=cleanup_ms)
    for entry in jobs:
        if isinstance(entry, TraceJob):
            driver.submit_at(entry.submit, entry.spec, entry.runtime)
        else:
            driver.submit_at(*entry)
    driver.run(until, max_events=max_events)
    return driver


@dataclass
class LiveStack:
    """The live driver wired to real local processes (see ``live_stack``)."""

    engine: Engine
    loop: ControlLoop
    driver: AsyncDriver
    journal: MemoryJournal


def live_stack(nodes: int = 2, gpus: int = 8, policy: str = "phalanx") -> LiveStack:
    """Emulated nodes that are all this machine (rank 0 listens on the loopback)."""
    cluster = regular_cluster(nodes, gpus, 2)
    engine = Engine(cluster, POLICIES[policy], persist=True)
    clock = WallClock()
    journal = MemoryJournal()
    loop = ControlLoop(engine, clock, journal)
    executor = ProcessExecutor(
        loop.report, cluster, addresses={n.name: "127.0.0.1" for n in cluster.nodes}
    )
    loop.attach(executor)
    return LiveStack(engine, loop, AsyncDriver(loop, executor, clock), journal)
