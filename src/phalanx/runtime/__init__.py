"""The one driver loop, between the engine and its two homes (the simulator, the live controller).

``Driver`` holds the event heap and carries the engine's commands out through two ports: a
clock (``Clock``: virtual in the simulator, the wall clock live, a fake one in tests) and an
executor (``Executor``: simulated runs, the fleet of node agents, a fake). Inputs from outside
go through a journal port before they are queued (``Journal``; ``MemoryJournal`` is its
in-memory twin). Nothing here knows which pair of ports it was given.
"""

from phalanx.runtime.clock import Clock, FakeClock, VirtualClock
from phalanx.runtime.driver import Driver
from phalanx.runtime.fake import FakeExecutor
from phalanx.runtime.ports import Executor, Journal, JournalError, MemoryJournal, Observer

__all__ = [
    "Clock",
    "Driver",
    "Executor",
    "FakeClock",
    "FakeExecutor",
    "Journal",
    "JournalError",
    "MemoryJournal",
    "Observer",
    "VirtualClock",
]
