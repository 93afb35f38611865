"""``EngineDriver``: the driver loop (``phalanx.runtime.Driver``) with a fake clock and a fake
executor, for tests of the engine and its policies."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from phalanx.domain.cluster import Cluster
from phalanx.domain.jobspec import JobSpec
from phalanx.domain.state import JobState
from phalanx.domain.time import Duration, Instant
from phalanx.engine.commands import PASS, Command
from phalanx.engine.decisions import Decision, Submitted
from phalanx.engine.engine import Engine
from phalanx.engine.events import (
    Cancel,
    Event,
    LaunchFailed,
    NodeDown,
    NodeUp,
    Submit,
    TasksExited,
    TimerFired,
)
from phalanx.policies.catalog import profile as named_profile
from phalanx.runtime import Driver, FakeClock, FakeExecutor
from phalanx.sched.job import Job
from phalanx.sched.profile import Profile
from phalanx.sim.workload import TraceJob

__all__ = ["EngineDriver", "run_engine"]

_FOREVER: Instant = 1 << 62


class EngineDriver:
    """Drives one ``Engine`` deterministically with a fake clock and a fake executor.

    Typical use::

        d = EngineDriver(small_cluster(), "slurm")
        [a] = d.submit(make_job(gpus=8), runtime=10 * MINUTE)
        d.settle()                      # runs the pass of this instant
        assert d.state(a) is JobState.RUNNING
        d.advance(10 * MINUTE)          # the job ends, the next pass runs

    The fake executor ends a launched run with ``TasksExited`` after the job's runtime (if one
    was given; else it runs until killed), a kill at once, an epilog after ``cleanup_ms``.
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
        self.clock = FakeClock()
        self.cleanup_ms = cleanup_ms
        self.commands: list[tuple[Instant, Command]] = []
        """Every command the engine gave, with the instant it gave it."""
        self.events: list[Event] = []
        """Every event fed to the engine, in order."""
        self.runtimes: dict[int, Duration | None] = {}
        """How long each job's processes run once launched (None: until killed)."""
        self.submitted: list[list[int]] = []
        """Job ids of each ``Submit`` handled, in order (an array gives several)."""
        self._runtime_of: dict[int, Duration | None] = {}
        """Runtime of each queued ``Submit`` (by ``id()``), until it is handled."""
        self.driver = Driver(self.engine, self.clock, observer=self)
        self.executor = FakeExecutor(
            self.driver.deliver,
            self.runtimes,
            launch_latency_ms=0,
            cleanup_ms=cleanup_ms,
            default_runtime=None,
        )
        self.driver.attach(self.executor)

    @property
    def now(self) -> Instant:
        return self.clock.now()

    # -- the observer port ------------------------------------------------------------------
    def handled(
        self, event: Event, decisions: Sequence[Decision], commands: Sequence[Command]
    ) -> None:
        self.events.append(event)
        self.commands.extend((event.at, cmd) for cmd in commands)
        if type(event) is Submit:
            runtime = self._runtime_of.pop(id(event), None)
            ids = [d.job_id for d in decisions if type(d) is Submitted]
            for job_id in ids:
                self.runtimes[job_id] = runtime
            self.submitted.append(ids)

    # -- feeding --------------------------------------------------------------------------
    def feed(self, event: Event) -> list[Command]:
        """Hand one event to the engine now and answer its commands (no pass is run)."""
        self.clock.set(max(self.now, event.at))
        return self.driver.handle(event)

    def submit(self, spec: JobSpec, runtime: Duration | None = None) -> list[int]:
        """Submit now; returns the new job ids. Call ``settle()`` to run the pass."""
        event = Submit(self.now, spec)
        self._runtime_of[id(event)] = runtime
        self.feed(event)
        return self.submitted[-1]

    def submit_at(self, at: Instant, spec: JobSpec, runtime: Duration | None = None) -> None:
        """Submit at a later instant (ids appear in ``submitted`` once it is handled)."""
        event = Submit(at, spec)
        self._runtime_of[id(event)] = runtime
        self.driver.deliver(event)

    # -- running --------------------------------------------------------------------------
    def next_at(self) -> Instant | None:
        """When the next queued event happens, if any."""
        return self.driver.next_due()

    def step(self) -> Event | None:
        """Handle the next queued event; returns it (None if nothing is queued)."""
        at = self.driver.next_due()
        if at is None:
            return None
        self.clock.set(max(self.now, at))
        self.driver.run_due(at, limit=1)
        return self.events[-1]

    def advance(self, to: Instant, *, max_events: int = 1_000_000) -> None:
        """Handle every queued event up to and including ``to``; the clock is then ``to``."""
        self._run(to, max_events, f"more than {max_events} events before {to}")
        self.clock.set(max(self.now, to))

    def settle(self) -> None:
        """Handle everything queued for the current instant (the pass comes last)."""
        self.advance(self.now)

    def run(self, until: Instant | None = None, *, max_events: int = 1_000_000) -> None:
        """Handle events until none is left (or the next is after ``until``)."""
        self._run(
            _FOREVER if until is None else until,
            max_events,
            f"more than {max_events} events: a job that never ends?",
        )

    def _run(self, until: Instant, max_events: int, too_many: str) -> None:
        driver = self.driver
        handled = driver.run_due(until, limit=max_events)
        if handled:
            self.clock.set(max(self.now, driver.last_at))
        due = driver.next_due()
        if handled == max_events and due is not None and due <= until:
            raise RuntimeError(too_many)

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

    def decisions(self, kind: type[Any] | None = None, job_id: int | None = None) -> list[Any]:
        """Entries of the decision log, optionally of one type (``Started``, ``Ended``...)
        and one job."""
        return [
            d
            for d in self.engine.decisions.entries
            if (kind is None or type(d) is kind)
            and (job_id is None or getattr(d, "job_id", None) == job_id)
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
