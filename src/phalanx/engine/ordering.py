"""The order of events that share an instant, the same for every driver.

Ends first (resources come back), then arrivals and node changes, then timers, and the
scheduling pass last, so that one pass sees everything that happened at its instant. The
simulator and the live loop both sort by ``(at, order_of(event), seq)``; a replay through
either gives the same decision log.
"""

from __future__ import annotations

from phalanx.engine.commands import PASS
from phalanx.engine.events import (
    CleanupDone,
    Event,
    LaunchFailed,
    TasksExited,
    TimerFired,
)

__all__ = ["ARRIVAL", "END", "PASS_ORDER", "TIMER", "order_of"]

END, ARRIVAL, TIMER, PASS_ORDER = 0, 1, 2, 3


def order_of(event: Event) -> int:
    if isinstance(event, TasksExited | CleanupDone | LaunchFailed):
        return END
    if isinstance(event, TimerFired):
        return PASS_ORDER if event.key == PASS else TIMER
    return ARRIVAL  # Submit, Cancel, NodeDown, NodeUp
