"""How ``phalanx simulate`` shows its progress: a bar per policy on a terminal, else one line each.

Progress goes to stderr so that stdout holds only the results and can be redirected.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from types import TracebackType
from typing import TextIO

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
)

__all__ = ["RunProgress"]


class RunProgress:
    """A context manager: ``start`` a policy, feed its callback, then say it ``finished``.

    On a terminal (``stream.isatty()``) each policy gets a rich bar of jobs finished out of the
    total; elsewhere each finished policy prints ``policy X: N jobs in W s (J jobs/s)``.
    """

    def __init__(self, stream: TextIO | None = None) -> None:
        self._stream = sys.stderr if stream is None else stream
        self._bar: Progress | None = None
        self._task: TaskID | None = None
        if self._stream.isatty():
            self._bar = Progress(
                TextColumn("{task.description}"),
                BarColumn(),
                MofNCompleteColumn(),
                TextColumn("jobs"),
                TimeElapsedColumn(),
                console=Console(file=self._stream),
            )

    def __enter__(self) -> RunProgress:
        if self._bar is not None:
            self._bar.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._bar is not None:
            self._bar.stop()

    def start(self, policy: str, total: int) -> Callable[[int, int], None] | None:
        """Begin ``policy``; returns the simulator's progress callback (None: nothing to show)."""
        bar = self._bar
        if bar is None:
            return None
        task = bar.add_task(f"policy {policy}", total=total)
        self._task = task

        def update(done: int, total_now: int) -> None:
            bar.update(task, completed=done, total=total_now)

        return update

    def finished(self, policy: str, jobs: int, wall_s: float) -> None:
        """``policy`` is done: ``jobs`` jobs simulated in ``wall_s`` seconds."""
        rate = jobs / wall_s if wall_s > 0 else 0.0
        line = f"policy {policy}: {jobs:,} jobs in {wall_s:.1f} s ({rate:,.0f} jobs/s)"
        if self._bar is not None and self._task is not None:
            self._bar.update(
                self._task,
                completed=jobs,
                total=jobs,
                description=f"policy {policy} ({rate:,.0f} jobs/s)",
            )
            return
        print(line, file=self._stream, flush=True)
