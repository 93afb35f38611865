"""The driver loop: one event heap, one engine, commands out to an executor, time from a clock.

Events wait in one heap ordered ``(at, order_of(event), seq)`` (``phalanx.engine.ordering``:
ends, arrivals, timers, the pass last; ``seq`` makes the order total), so every driver --
the simulator's, the live controller's, a test's -- gives the same decision log for the same
inputs. They differ only in their ports: the clock says when an event is due, the executor
carries out launches, signals, kills and epilogs.

Inputs from outside the engine (submissions, cancels, ended runs, failed launches, node
changes) are committed to the journal before they are queued (``accept``); the engine's own
timers are not stored, because a replay of the inputs regenerates them. An accepted input is
stamped no earlier than 1 ms after the last event handled (live, also no earlier than any
input accepted before it): it then sorts after everything already handled, in the live run
and in any replay alike.

The loop itself never waits: whoever owns it (the simulator, an asyncio task, a test) calls
``run_due`` and, live, sleeps until ``next_due``.
"""

from __future__ import annotations

import dataclasses
import heapq
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from mypy_extensions import mypyc_attr

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
    Resize,
    Signal,
    Submit,
    TimerFired,
    WakeAt,
)
from phalanx.engine.ordering import order_of, timer_order
from phalanx.engine.timers import is_stale
from phalanx.runtime.clock import Clock
from phalanx.runtime.ports import Executor, Journal, MemoryJournal, Observer

__all__ = ["Checkpoint", "Driver"]


@mypyc_attr(allow_interpreted_subclasses=True)
@dataclasses.dataclass
class Checkpoint:
    """Everything a driver and its engine hold between two events: the engine itself and
    the queue (accepted inputs not handled yet, timers set). A copy of it (``pickle``) made
    after input N and restored, then fed inputs N+1..., gives the decisions and the state a
    driver that never stopped would have (the executor is not in it: see ``restore``)."""

    engine: Engine
    heap: list[tuple[Instant, int, int, Event]]
    seq: int
    last_at: Instant
    accepted_until: Instant
    unhandled_ids: int
    handled: int


@mypyc_attr(allow_interpreted_subclasses=True)
class Driver:
    def __init__(
        self,
        engine: Engine,
        clock: Clock,
        journal: Journal | None = None,
        *,
        observer: Observer | None = None,
        monotonic: bool = False,
    ) -> None:
        """The executor comes with ``attach`` (it reports to this driver, so it is made
        after it). ``observer`` sees every handled event with its decisions and commands.
        ``monotonic``: an input is never stamped before one accepted earlier, so the
        journal's instants never decrease whatever the wall clock does, and a standby
        following the journal may handle everything before the last instant it read (no
        later input can sort before it). The live controller's inputs arrive at "now";
        a test or replay that accepts inputs dated ahead leaves it off."""
        self.engine = engine
        self.clock = clock
        self.journal: Journal = journal if journal is not None else MemoryJournal()
        self.observer = observer
        self.monotonic = monotonic
        self.executor: Executor | None = None
        self.handled = 0
        self.accepted = 0
        """Inputs committed to the journal by this driver (not counting a replay)."""
        self._heap: list[tuple[Instant, int, int, Event]] = []
        self._seq = 0
        self._last_at: Instant = -1
        self._accepted_until: Instant = -1
        self._unhandled_ids = 0
        """Job ids that queued, not yet handled, submissions will take."""
        self._later: list[tuple[Instant, int, int, Event]] = []
        """Queued entries besides the heap, sorted (``preload``); ``_next`` is the first left."""
        self._next = 0
        self._withdrawn: set[int] = set()
        """``id()`` of queued events withdrawn (``withdraw``): dropped when they come up."""
        self._carry: dict[type, Callable[[Any, Instant], None]] = {
            Launch: _unattached,
            Resize: _unattached,
            Signal: _unattached,
            Kill: _unattached,
            Cleanup: _unattached,
            WakeAt: self._wake,
        }
        """How each command type is carried out: a table, filled by ``attach``."""

    def attach(self, executor: Executor) -> None:
        self.executor = executor
        self._carry.update(
            {
                Launch: executor.launch,
                Resize: executor.resize,
                Signal: executor.signal,
                Kill: executor.kill,
                Cleanup: executor.cleanup,
            }
        )

    @property
    def last_at(self) -> Instant:
        """The instant of the last event handled (-1 before the first)."""
        return self._last_at

    # ------------------------------------------------------------------ inputs
    def accept(self, events: Sequence[Event]) -> list[Event]:
        """Commit inputs to the journal, then queue them; return them as stamped.

        Raises ``JournalError`` (and queues nothing) when the journal cannot take them."""
        floor = self._last_at + 1
        if self.monotonic:
            floor = max(floor, self._accepted_until)
        stamped = [e if e.at >= floor else dataclasses.replace(e, at=floor) for e in events]
        self.journal.write(stamped)
        self.accepted += len(stamped)
        if stamped:
            self._accepted_until = max(self._accepted_until, max(e.at for e in stamped))
        for event in stamped:
            self._push(event)
        return stamped

    def deliver(self, event: Event) -> None:
        """Queue an event that needs no journal: one the engine's own commands imply (a
        timer, an epilog's end), or one a simulation computes."""
        self._push(event)

    def preload(self, events: Iterable[Event]) -> None:
        """``deliver`` each of ``events``, in order, as one batch (a simulation's whole
        trace): they wait in a sorted list beside the heap, not in it, so that every other
        event pushed and popped meanwhile costs what a heap of the events in flight costs,
        not one as long as the trace. The order of handling is the same as ``deliver``'s."""
        entries = self._later[self._next :]
        for event in events:
            self._seq += 1
            entries.append((event.at, order_of(event), self._seq, event))
            if type(event) is Submit:
                self._unhandled_ids += _id_count(event.spec)
        entries.sort()  # seq is unique: the events themselves are never compared
        self._later[:] = entries  # in place: ``run_due`` holds the list
        self._next = 0

    def report(self, event: Event) -> None:
        """What an executor calls with what happened: ends of runs and failed launches are
        inputs (journaled); an epilog's end follows from the journal and is only queued."""
        if isinstance(event, CleanupDone | TimerFired):
            self.deliver(event)
        else:
            self.accept([event])

    def submit_many(
        self, specs: Sequence[JobSpec], keys: Sequence[str] | None = None
    ) -> list[list[int]]:
        """Submit now; return each request's job ids (one per array task), known before the
        engine handles them because submissions are handled in the order queued. ``keys``:
        each request's idempotency key ("" for none), kept with it."""
        now = self.clock.now()
        first = self.engine.next_id + self._unhandled_ids
        keyed = keys if keys is not None else [""] * len(specs)
        self.accept([Submit(now, spec, key) for spec, key in zip(specs, keyed, strict=True)])
        out = []
        for spec in specs:
            n = _id_count(spec)
            out.append(list(range(first, first + n)))
            first += n
        return out

    def submit(self, spec: JobSpec) -> list[int]:
        return self.submit_many([spec])[0]

    # ------------------------------------------------------------------ running
    def next_due(self) -> Instant | None:
        heap, later = self._heap, self._later
        if self._next < len(later):
            first = later[self._next][0]
            return min(first, heap[0][0]) if heap else first
        return heap[0][0] if heap else None

    def queued(self) -> list[Event]:
        """The events queued and not handled yet, in no particular order."""
        gone = self._withdrawn
        entries = [*self._heap, *self._later[self._next :]]
        return [entry[3] for entry in entries if id(entry[3]) not in gone]

    def withdraw(self, event: Event) -> None:
        """Drop ``event``, queued by ``deliver`` and not handled yet (the very object): a
        simulated run's end that a resize moved. Never for a journaled input."""
        self._withdrawn.add(id(event))

    def run_due(
        self,
        until: Instant | None = None,
        *,
        stop: Callable[[], bool] | None = None,
        limit: int | None = None,
    ) -> int:
        """Handle, in order, every event that is due: by the clock, or at or before ``until``
        if given. Stop early once ``stop()`` holds after an event, or after ``limit`` events.
        Return how many were handled."""
        heap = self._heap
        due = self.clock.due if until is None else until.__ge__
        handle = self.handle
        pop = heapq.heappop
        handled = 0
        left = -1 if limit is None else limit
        withdrawn = self._withdrawn
        later = self._later
        while handled != left:
            # The next entry: the heap's first or the preloaded list's, whichever sorts first.
            if self._next < len(later) and (not heap or later[self._next] < heap[0]):
                entry = later[self._next]
                if not due(entry[0]):
                    break
                self._next += 1
                if self._next == len(later):
                    later.clear()
                    self._next = 0
            elif heap and due(heap[0][0]):
                entry = pop(heap)
            else:
                break
            event = entry[3]
            if withdrawn and id(event) in withdrawn:
                withdrawn.discard(id(event))
                continue
            if type(event) is Submit:
                self._unhandled_ids -= _id_count(event.spec)
            handle(event)
            handled += 1
            if stop is not None and stop():
                break
        self.handled += handled
        return handled

    def handle(self, event: Event) -> list[Command]:
        """Hand one event to the engine now (the heap is bypassed) and carry out the
        commands it gives; return them."""
        at = event.at
        self._last_at = at
        engine = self.engine
        observer = self.observer
        if observer is None:
            commands = engine.handle(event)
        else:
            entries = engine.decisions.entries
            logged = len(entries)
            commands = engine.handle(event)
            observer.handled(event, entries[logged:], commands)
        carry = self._carry
        for cmd in commands:
            carry[type(cmd)](cmd, at)
        return commands

    def replay(self, until: Instant, events: Iterable[Event] | None = None) -> int:
        """Rebuild the engine from the journal: queue every committed input (or ``events``,
        the journal's tail after a restored ``Checkpoint``) and handle all that was due by
        ``until`` (the executor sees the commands again: it must tell those already carried
        out from new ones). Return how many inputs were read."""
        count = 0
        latest = self._accepted_until
        for event in self.journal.read() if events is None else events:
            self._push(event)
            latest = max(latest, event.at)
            count += 1
        # What this driver accepts next is stamped after the journal's inputs, even on a
        # host whose clock is behind the one that wrote them (a standby taking over).
        self._accepted_until = latest
        self.run_due(until)
        return count

    def checkpoint(self) -> Checkpoint:
        """The state to save (shared, not copied: serialise it before the next event)."""
        self._merge_later()
        return Checkpoint(
            self.engine,
            self._heap,
            self._seq,
            self._last_at,
            self._accepted_until,
            self._unhandled_ids,
            self.handled,
        )

    def restore(self, saved: Checkpoint) -> None:
        """Continue from ``saved`` (before any event was handled here): its engine replaces
        this driver's. The executor's own state is its owner's to rebuild: the commands it
        carried out before ``saved`` are not given again."""
        self.engine = saved.engine
        self._heap = saved.heap
        self._later.clear()
        self._next = 0
        self._seq = saved.seq
        self._last_at = saved.last_at
        self._accepted_until = saved.accepted_until
        self._unhandled_ids = saved.unhandled_ids
        self.handled = saved.handled

    def compact(self) -> int:
        """Drop, between two events, what can no longer change a decision: the timers that
        are stale (``is_stale``: those of runs that are over, which a job that ran for less than
        its time limit leaves behind: with a year's limit they would pile up for a year),
        and what the engine's plugins give up (``Points.compact``). A dropped timer would
        have done nothing, so this driver, and one restored from a checkpoint taken now,
        decide as if nothing was dropped. Return the timers dropped."""
        self._merge_later()
        heap = self._heap
        jobs = self.engine.jobs
        kept = []
        for entry in heap:
            event = entry[3]
            if type(event) is not TimerFired or not is_stale(event.key, jobs):
                kept.append(entry)
        dropped = len(heap) - len(kept)
        if dropped:
            # Entries are unique (seq), so any heap of them pops in the same order.
            heapq.heapify(kept)
            heap[:] = kept
        # What the engine's plugins keep only as a cache (``Compacts``) changes nothing either.
        self.engine.points.compact()
        return dropped

    def settle(self) -> int:
        """Handle every input accepted so far (and what falls due before it), even if the
        clock has not reached the stamp yet (it is at most 1 ms ahead): a query or cancel
        then sees the jobs it has just been told about."""
        if self._accepted_until > self._last_at:
            return self.run_due(max(self._accepted_until, self.clock.now()))
        return 0

    # ------------------------------------------------------------------ internals
    def _merge_later(self) -> None:
        """Move the preloaded entries left into the heap (what a checkpoint holds)."""
        if self._next < len(self._later):
            self._heap.extend(self._later[self._next :])
            heapq.heapify(self._heap)
        self._later.clear()
        self._next = 0

    def _push(self, event: Event) -> None:
        self._seq += 1
        heapq.heappush(self._heap, (event.at, order_of(event), self._seq, event))
        if type(event) is Submit:
            self._unhandled_ids += _id_count(event.spec)

    def _wake(self, cmd: WakeAt, at: Instant) -> None:
        event = TimerFired(cmd.at, cmd.key)
        self._seq += 1
        heapq.heappush(self._heap, (cmd.at, timer_order(event), self._seq, event))


def _unattached(cmd: Command, at: Instant) -> None:
    raise RuntimeError(f"no executor attached to carry out {type(cmd).__name__}")


def _id_count(spec: JobSpec) -> int:
    return len(spec.array.task_ids) if spec.array is not None else 1
