"""The order of events that share an instant, the same for every driver.

Ends first (resources come back), then arrivals and node changes, then timers, and the
scheduling pass last, so that one pass sees everything that happened at its instant. The
simulator and the live loop both sort by ``(at, order_of(event), seq)``; a replay through
either gives the same decision log.
"""

from __future__ import annotations

from typing import Final, cast

from phalanx.engine.events import (
    CleanupDone,
    Event,
    LaunchFailed,
    TasksExited,
    TimerFired,
)
from phalanx.engine.timers import PassTimer

__all__ = ["ARRIVAL", "END", "PASS_ORDER", "TIMER", "order_of", "timer_order"]

# Final, as ``_BY_TYPE`` and ``_TIMER_FIRED``: compiled, a Final name is a constant or a C
# static, where another module-level name is looked up in the module's dict at each use (and
# every event the drivers queue asks for its order).
END: Final = 0
ARRIVAL: Final = 1
TIMER: Final = 2
PASS_ORDER: Final = 3


_BY_TYPE: Final[dict[type, int]] = {TasksExited: END, CleanupDone: END, LaunchFailed: END}
"""Events that are not listed are arrivals (Submit, Cancel, Update, Requeue, node changes)."""

_TIMER_FIRED: Final[type] = TimerFired
"""The one event class that is ordered by its key (``events`` is not compiled: its classes
are module-level names a compiled module would look up)."""


def order_of(event: Event) -> int:
    cls = type(event)
    if cls is _TIMER_FIRED:
        return timer_order(cast(TimerFired, event))
    return _BY_TYPE.get(cls, ARRIVAL)


def timer_order(event: TimerFired) -> int:
    return PASS_ORDER if type(event.key) is PassTimer else TIMER
