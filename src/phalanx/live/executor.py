"""The executor port: carries out launches, signals, kills and epilogs, and reports back.

Real executors (node agents running processes) and the in-memory ``FakeExecutor`` both report
what happened as engine events through ``ControlLoop.deliver``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Protocol

from phalanx.domain.time import Duration, Instant
from phalanx.engine import Cleanup, CleanupDone, Event, Kill, Launch, Signal, TasksExited

__all__ = ["Executor", "FakeExecutor"]


class Executor(Protocol):
    def launch(self, cmd: Launch, at: Instant) -> None:
        """Start the job's tasks; report ``TasksExited`` when all have ended, or
        ``LaunchFailed`` if they could not start."""

    def signal(self, cmd: Signal, at: Instant) -> None:
        """Send ``cmd.signal`` to every task of the run."""

    def kill(self, cmd: Kill, at: Instant) -> None:
        """End every task of the run now; report ``TasksExited``."""

    def cleanup(self, cmd: Cleanup, at: Instant) -> None:
        """Run the epilog on the run's nodes; report ``CleanupDone``."""


class FakeExecutor:
    """Jobs that run for a given time after a fixed launch latency, ignore signals, die at
    once when killed (and then run their whole runtime again if requeued)."""

    def __init__(
        self,
        deliver: Callable[[Event], None],
        runtimes: Mapping[int, Duration],
        *,
        launch_latency_ms: Duration = 2_000,
        cleanup_ms: Duration = 1_000,
    ) -> None:
        self._deliver = deliver
        self._runtimes = runtimes
        self._latency = launch_latency_ms
        self._cleanup = cleanup_ms
        self.launched: list[tuple[Instant, int, int]] = []
        self.signals: list[tuple[Instant, int, int]] = []

    def launch(self, cmd: Launch, at: Instant) -> None:
        self.launched.append((at, cmd.job_id, cmd.run))
        end = at + self._latency + self._runtimes.get(cmd.job_id, 0)
        self._deliver(TasksExited(end, cmd.job_id, cmd.run, 0, 0))

    def signal(self, cmd: Signal, at: Instant) -> None:
        self.signals.append((at, cmd.job_id, cmd.signal))

    def kill(self, cmd: Kill, at: Instant) -> None:
        self._deliver(TasksExited(at, cmd.job_id, cmd.run, 0, 9))

    def cleanup(self, cmd: Cleanup, at: Instant) -> None:
        self._deliver(CleanupDone(at + self._cleanup, cmd.job_id, cmd.run))
