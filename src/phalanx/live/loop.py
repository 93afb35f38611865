"""The control loop: events in, engine, commands out to the store and the executor.

Events (from the API, the executor, node health) and the engine's own timers wait in one heap
ordered ``(at, order_of(event), seq)`` (``phalanx.engine.ordering``, the simulator's order), so
that a replay with a fake clock and a fake executor gives the simulator's decision log.
``Persist`` commands reach the store before the launch that follows them (write-ahead).

The loop itself never waits: a driver (asyncio live, a test's fake clock) calls ``run_due``
when ``next_due`` comes.
"""

from __future__ import annotations

import heapq

from phalanx.domain.job import JobSpec
from phalanx.domain.time import Instant
from phalanx.engine import (
    Cleanup,
    Command,
    Engine,
    Event,
    Kill,
    Launch,
    Persist,
    Signal,
    Submit,
    TimerFired,
    WakeAt,
)
from phalanx.engine.ordering import order_of
from phalanx.live.clock import Clock
from phalanx.live.executor import Executor
from phalanx.live.store import Record, Store

__all__ = ["ControlLoop"]

class ControlLoop:
    def __init__(self, engine: Engine, clock: Clock, store: Store) -> None:
        self.engine = engine
        self.clock = clock
        self.store = store
        self.executor: Executor | None = None
        self._heap: list[tuple[Instant, int, int, Event]] = []
        self._seq = 0

    def attach(self, executor: Executor) -> None:
        self.executor = executor

    def deliver(self, event: Event) -> None:
        """Queue an event; it is handled by the next ``run_due`` at or after ``event.at``."""
        self._seq += 1
        heapq.heappush(self._heap, (event.at, order_of(event), self._seq, event))

    def submit(self, spec: JobSpec) -> list[int]:
        """Submit now and return the new job ids (one per array task), the submission
        persisted and the pass it asks for queued by the time this returns."""
        at = self.clock.now()
        first = self.engine.next_id
        self._carry_out(at, self.engine.handle(Submit(at, spec)))
        return list(range(first, self.engine.next_id))

    def next_due(self) -> Instant | None:
        return self._heap[0][0] if self._heap else None

    def run_due(self) -> int:
        """Handle every event due by the clock's now, in order; return how many."""
        now = self.clock.now()
        handled = 0
        while self._heap and self._heap[0][0] <= now:
            _, _, _, event = heapq.heappop(self._heap)
            self._carry_out(event.at, self.engine.handle(event))
            handled += 1
        return handled

    def _carry_out(self, at: Instant, commands: list[Command]) -> None:
        executor = self.executor
        assert executor is not None, "attach an executor before running the loop"
        for cmd in commands:
            if isinstance(cmd, WakeAt):
                self.deliver(TimerFired(cmd.at, cmd.key))
            elif isinstance(cmd, Persist):
                self.store.append(Record(at, cmd.job_id, cmd.what, dict(cmd.data)))
            elif isinstance(cmd, Launch):
                executor.launch(cmd, at)
            elif isinstance(cmd, Signal):
                executor.signal(cmd, at)
            elif isinstance(cmd, Kill):
                executor.kill(cmd, at)
            elif isinstance(cmd, Cleanup):
                executor.cleanup(cmd, at)
