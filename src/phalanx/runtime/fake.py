"""The executor's in-memory twin: jobs that run for a given time, for tests."""

from __future__ import annotations

from collections.abc import Callable, Mapping

from mypy_extensions import mypyc_attr

from phalanx.domain.time import Duration, Instant
from phalanx.engine import (
    Cleanup,
    CleanupDone,
    Event,
    Kill,
    Launch,
    Resize,
    Signal,
    TasksExited,
)

__all__ = ["FakeExecutor"]


@mypyc_attr(allow_interpreted_subclasses=True)
class FakeExecutor:
    """Jobs that run for their runtime (``runtimes[job_id]``, else ``default_runtime``;
    None: until killed) after a fixed launch latency, ignore signals, die at once when
    killed (and run their whole runtime again if requeued). What happens is handed to
    ``report``."""

    def __init__(
        self,
        report: Callable[[Event], None],
        runtimes: Mapping[int, Duration | None],
        *,
        launch_latency_ms: Duration = 2_000,
        cleanup_ms: Duration = 1_000,
        default_runtime: Duration | None = 0,
    ) -> None:
        self._report = report
        self._runtimes = runtimes
        self._latency = launch_latency_ms
        self._cleanup = cleanup_ms
        self._default = default_runtime
        self.launched: list[tuple[Instant, int, int]] = []
        self.signals: list[tuple[Instant, int, int]] = []
        self.resized: list[tuple[Instant, int, tuple[int, ...]]] = []

    def launch(self, cmd: Launch, at: Instant) -> None:
        self.launched.append((at, cmd.job_id, cmd.run))
        runtime = self._runtimes.get(cmd.job_id, self._default)
        if runtime is not None:
            end = at + self._latency + runtime
            self._report(TasksExited(end, cmd.job_id, cmd.run, 0, 0))

    def resize(self, cmd: Resize, at: Instant) -> None:
        self.resized.append((at, cmd.job_id, cmd.alloc.nodes))

    def signal(self, cmd: Signal, at: Instant) -> None:
        self.signals.append((at, cmd.job_id, cmd.signal))

    def kill(self, cmd: Kill, at: Instant) -> None:
        self._report(TasksExited(at, cmd.job_id, cmd.run, 0, 9))

    def cleanup(self, cmd: Cleanup, at: Instant) -> None:
        self._report(CleanupDone(at + self._cleanup, cmd.job_id, cmd.run))
