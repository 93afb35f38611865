"""The asyncio driver: runs the control loop on the wall clock and reaps local processes.

It wakes when the loop's next event or timer is due, or every ``poll_interval`` seconds to
notice tasks that ended, whichever comes first. The controller process (and its API) run
this beside their server; tests run it until a condition holds.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from phalanx.live.clock import Clock
from phalanx.live.loop import ControlLoop
from phalanx.live.process import ProcessExecutor

__all__ = ["AsyncDriver"]


class AsyncDriver:
    def __init__(
        self,
        loop: ControlLoop,
        executor: ProcessExecutor,
        clock: Clock,
        *,
        poll_interval: float = 0.02,
    ) -> None:
        self.loop = loop
        self.executor = executor
        self.clock = clock
        self.poll_interval = poll_interval

    def step(self) -> None:
        """Reap ended tasks, then handle everything due."""
        self.executor.poll(self.clock.now())
        self.loop.run_due()

    async def run(self, until: Callable[[], bool], timeout: float) -> bool:
        """Drive until ``until()`` holds (True) or ``timeout`` seconds pass (False)."""
        deadline = asyncio.get_running_loop().time() + timeout
        while True:
            self.step()
            if until():
                return True
            now = asyncio.get_running_loop().time()
            if now >= deadline:
                return False
            due = self.loop.next_due()
            wait = self.poll_interval
            if due is not None:
                wait = min(wait, max(0.0, (due - self.clock.now()) / 1000))
            await asyncio.sleep(min(wait, deadline - now))
