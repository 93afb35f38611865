"""The control loop: inputs journaled, then the engine, then commands out to the executor.

Inputs from outside the engine (submissions, cancels, ended runs, failed launches, node
changes) are committed to the journal before they are queued (``accept``); the engine's own
timers are not stored, because a replay of the inputs regenerates them. Events wait in one
heap ordered ``(at, order_of(event), seq)`` (``phalanx.engine.ordering``, the simulator's
order), so a replay with a fake clock and a fake executor gives the simulator's decision log,
and a replay of the journal after a crash gives the state the controller had.

An input is stamped no earlier than 1 ms after the last event handled: it then sorts after
everything already handled, in the live run and in any replay alike.

The loop itself never waits: a driver (asyncio live, a test's fake clock) calls ``run_due``
when ``next_due`` comes.
"""

from __future__ import annotations

import dataclasses
import heapq
from collections.abc import Sequence

from phalanx.domain.jobspec import JobSpec
from phalanx.domain.time import Instant
from phalanx.engine import (
    Cleanup,
    CleanupDone,
    Command,
    Engine,
    Event,
    Kill,
    Launch,
    Signal,
    Submit,
    TimerFired,
    WakeAt,
)
from phalanx.engine.ordering import order_of
from phalanx.live.clock import Clock
from phalanx.live.executor import Executor
from phalanx.live.journal import Journal, MemoryJournal

__all__ = ["ControlLoop"]


class ControlLoop:
    def __init__(self, engine: Engine, clock: Clock, journal: Journal | None = None) -> None:
        self.engine = engine
        self.clock = clock
        self.journal: Journal = journal if journal is not None else MemoryJournal()
        self.executor: Executor | None = None
        self.handled = 0
        self._heap: list[tuple[Instant, int, int, Event]] = []
        self._seq = 0
        self._last_at: Instant = -1
        self._accepted_until: Instant = -1
        self._unhandled_ids = 0
        """Job ids that accepted, not yet handled, submissions will take."""

    def attach(self, executor: Executor) -> None:
        self.executor = executor

    # ------------------------------------------------------------------ inputs
    def accept(self, events: Sequence[Event]) -> list[Event]:
        """Commit inputs to the journal, then queue them; return them as stamped.

        Raises ``JournalError`` (and queues nothing) when the journal cannot take them."""
        floor = self._last_at + 1
        stamped = [e if e.at >= floor else dataclasses.replace(e, at=floor) for e in events]
        self.journal.write(stamped)
        if stamped:
            self._accepted_until = max(self._accepted_until, max(e.at for e in stamped))
        for event in stamped:
            self._push(event)
            if isinstance(event, Submit):
                self._unhandled_ids += _id_count(event.spec)
        return stamped

    def submit_many(self, specs: Sequence[JobSpec]) -> list[list[int]]:
        """Submit now; return each request's job ids (one per array task), known before the
        engine handles them because submissions are handled in the order accepted."""
        now = self.clock.now()
        first = self.engine.next_id + self._unhandled_ids
        self.accept([Submit(now, spec) for spec in specs])
        out = []
        for spec in specs:
            n = _id_count(spec)
            out.append(list(range(first, first + n)))
            first += n
        return out

    def submit(self, spec: JobSpec) -> list[int]:
        return self.submit_many([spec])[0]

    def deliver(self, event: Event) -> None:
        """Queue an event the engine's own commands imply (a timer, an epilog's end): it is
        not journaled, since a replay makes it again."""
        self._push(event)

    def report(self, event: Event) -> None:
        """What an executor calls: ends of runs and failed launches are inputs (journaled);
        an epilog's end follows from the journal and is only queued."""
        if isinstance(event, CleanupDone | TimerFired):
            self.deliver(event)
        else:
            self.accept([event])

    # ------------------------------------------------------------------ running
    def next_due(self) -> Instant | None:
        return self._heap[0][0] if self._heap else None

    def run_due(self, until: Instant | None = None) -> int:
        """Handle every event due by ``until`` (the clock's now), in order; return how many."""
        now = self.clock.now() if until is None else until
        handled = 0
        heap = self._heap
        while heap and heap[0][0] <= now:
            _, _, _, event = heapq.heappop(heap)
            self._last_at = event.at
            if isinstance(event, Submit):
                self._unhandled_ids -= _id_count(event.spec)
            self._carry_out(self.engine.handle(event))
            handled += 1
        self.handled += handled
        return handled

    def replay(self, until: Instant) -> int:
        """Rebuild the engine from the journal: queue every committed input and handle all
        that was due by ``until`` (the executor sees the commands again: it must tell those
        already carried out from new ones). Return how many inputs were read."""
        count = 0
        for event in self.journal.read():
            self._push(event)
            if isinstance(event, Submit):
                self._unhandled_ids += _id_count(event.spec)
            count += 1
        self.run_due(until)
        return count

    def settle(self) -> int:
        """Handle every input accepted so far (and what falls due before it), even if the
        clock has not reached the stamp yet (it is at most 1 ms ahead): a query or cancel
        then sees the jobs it has just been told about."""
        if self._accepted_until > self._last_at:
            return self.run_due(max(self._accepted_until, self.clock.now()))
        return 0

    def _push(self, event: Event) -> None:
        self._seq += 1
        heapq.heappush(self._heap, (event.at, order_of(event), self._seq, event))

    def _carry_out(self, commands: list[Command]) -> None:
        executor = self.executor
        assert executor is not None, "attach an executor before running the loop"
        for cmd in commands:
            if isinstance(cmd, WakeAt):
                self._push(TimerFired(cmd.at, cmd.key))
            elif isinstance(cmd, Launch):
                executor.launch(cmd, self._last_at)
            elif isinstance(cmd, Signal):
                executor.signal(cmd, self._last_at)
            elif isinstance(cmd, Kill):
                executor.kill(cmd, self._last_at)
            elif isinstance(cmd, Cleanup):
                executor.cleanup(cmd, self._last_at)
            # Persist: the journal already holds the inputs that caused it.


def _id_count(spec: JobSpec) -> int:
    return len(spec.array.task_ids) if spec.array is not None else 1
