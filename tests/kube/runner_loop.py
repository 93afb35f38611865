"""The controller's loop, played by a test of the workload runners."""

from __future__ import annotations

import time
from collections.abc import Callable

from phalanx.testing.live import LiveStack

__all__ = ["Loop"]


class Loop:
    """The controller's loop, played by the test: deferred calls run on ``step``; ``run``
    steps every ``pause`` seconds until a condition holds."""

    def __init__(self, stack: LiveStack, pause: float = 0.02) -> None:
        self.stack = stack
        self.pause = pause
        self.calls: list[Callable[[], None]] = []

    def defer(self, fn: Callable[[], None]) -> None:
        self.calls.append(fn)

    def step(self) -> None:
        self.stack.step()
        while self.calls:
            calls, self.calls = self.calls, []
            for fn in calls:
                fn()

    def run(self, until: Callable[[], bool], timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        while not until():
            if time.monotonic() > deadline:
                return False
            self.step()
            time.sleep(self.pause)
        return True
