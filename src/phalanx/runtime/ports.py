"""The driver's ports besides the clock: where commands go, where inputs are committed, and
who watches each handled event.

The executor carries out the engine's side effects and reports what happened as engine events
through the driver: ``Driver.report`` for facts from outside (an ended run, a failed launch:
journaled first), ``Driver.deliver`` for what follows from the journal anyway (an epilog's
end) or, in a simulation, what the executor computes itself.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Protocol

from phalanx.domain.time import Instant
from phalanx.engine import Cleanup, Command, Event, Kill, Launch, Resize, Signal
from phalanx.engine.decisions import Decision
from phalanx.errors import StateStoreError

__all__ = ["Executor", "Journal", "JournalError", "MemoryJournal", "Observer"]


class Executor(Protocol):
    """Carries out the engine's side effects. ``at`` is the instant of the event whose
    handling gave the command. None of these may call back into the engine directly: results
    are reported to the driver, which queues them."""

    def launch(self, cmd: Launch, at: Instant) -> None:
        """Start the run's tasks; report ``TasksExited`` once all have ended, or
        ``LaunchFailed`` if they could not start."""

    def resize(self, cmd: Resize, at: Instant) -> None:
        """An elastic run changed size: start its tasks on ``cmd.added``, end those on
        ``cmd.removed`` (nothing is reported for them); the run goes on."""

    def signal(self, cmd: Signal, at: Instant) -> None:
        """Send ``cmd.signal`` to every task of the run (nothing is reported)."""

    def kill(self, cmd: Kill, at: Instant) -> None:
        """End every task of the run now; report ``TasksExited``."""

    def cleanup(self, cmd: Cleanup, at: Instant) -> None:
        """Run the epilog on the run's nodes; report ``CleanupDone``."""


class Observer(Protocol):
    def handled(
        self, event: Event, decisions: Sequence[Decision], commands: Sequence[Command]
    ) -> None:
        """Called after the engine handled ``event``, before its ``commands`` are carried
        out, with the decisions it logged meanwhile (often none)."""


class JournalError(StateStoreError):
    """The journal cannot take more (disk full, read-only, gone): nothing was written."""


class Journal(Protocol):
    def write(self, events: Sequence[Event]) -> None:
        """Commit ``events`` atomically, in order; raise ``JournalError`` and write none if
        that is impossible."""

    def read(self) -> Iterator[Event]:
        """Every committed event, in the order written."""


class MemoryJournal:
    """The in-memory twin of a durable journal."""

    def __init__(self) -> None:
        self.events: list[Event] = []
        self.fail = False
        """Tests set this to act out a full disk."""

    def write(self, events: Sequence[Event]) -> None:
        if self.fail:
            raise JournalError("the journal is full")
        self.events.extend(events)

    def read(self) -> Iterator[Event]:
        return iter(list(self.events))
