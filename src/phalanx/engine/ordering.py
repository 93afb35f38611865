"""The order of events that share an instant, the same for every driver.

Ends first (resources come back), then arrivals and node changes, then timers, and the
scheduling pass last, so that one pass sees everything that happened at its instant. The
simulator and the live loop both sort by ``(at, order_of(event), seq)``; a replay through
either gives the same decision log.
"""

from __future__ import annotations

from phalanx.engine.events import (
    CleanupDone,
    Event,
    LaunchFailed,
    TasksExited,
    TimerFired,
)
from phalanx.engine.timers import PassTimer

__all__ = ["ARRIVAL", "END", "PASS_ORDER", "TIMER", "order_of", "timer_order"]

END, ARRIVAL, TIMER, PASS_ORDER = 0, 1, 2, 3


_BY_TYPE: dict[type, int] = {TasksExited: END, CleanupDone: END, LaunchFailed: END}
"""Events that are not listed are arrivals (Submit, Cancel, Update, Requeue, node changes)."""


def order_of(event: Event) -> int:
    if type(event) is TimerFired:
        return timer_order(event)
    return _BY_TYPE.get(type(event), ARRIVAL)


def timer_order(event: TimerFired) -> int:
    return PASS_ORDER if type(event.key) is PassTimer else TIMER
