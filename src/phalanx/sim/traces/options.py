"""The options every trace reader shares: which jobs to keep and how fast they arrive.

Every reader (and ``read_trace``) takes them as one ``TraceOptions`` value rather than
re-declaring ``limit``, ``window``, ``load`` and ``seed`` in its own signature.

One function, ``select``, applies them in a fixed order so that every format means the same
thing by ``limit``, ``window`` and ``load``:

1. order jobs by (submit, position in the file): a stable replay order;
2. ``window=(start, end)``: keep jobs submitted in ``[start, end)`` milliseconds after the
   trace's first submit (the window is in the trace's own time, before any compression);
3. ``limit=N``: keep the first N of those;
4. rebase so the first kept job is submitted at 0;
5. ``load=X``: divide every submit time by X (X=2 doubles the arrival rate; runtimes unchanged).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from phalanx.domain.time import SECOND, Instant
from phalanx.errors import TraceError
from phalanx.sim.traces.row import MAX_SECONDS

__all__ = ["NO_OPTIONS", "TraceOptions", "select"]


@dataclass(frozen=True, slots=True)
class TraceOptions:
    """The shared reader options; ``seed`` feeds ``estimates`` where a trace has no limits."""

    limit: int | None = None
    window: tuple[Instant, Instant] | None = None
    load: float = 1.0
    seed: int = 0

    def check(self, source: str) -> None:
        """Fail on options that cannot mean anything, before the file is read."""
        if self.limit is not None and self.limit < 0:
            raise TraceError(
                f"limit cannot be negative: {self.limit}", source=source, field="limit"
            )
        if self.window is not None and self.window[1] < self.window[0]:
            raise TraceError(
                f"window ends before it starts: {self.window}", source=source, field="window"
            )
        if not (math.isfinite(self.load) and self.load > 0):
            raise TraceError(
                f"load must be a positive number: {self.load}", source=source, field="load"
            )


NO_OPTIONS = TraceOptions()
"""Every job, at the trace's own arrival rate, estimates from seed 0: every reader's default."""


def select(submits: Sequence[Instant], options: TraceOptions) -> list[tuple[int, Instant]]:
    """Apply ``options`` to jobs submitted at ``submits`` (any epoch, one entry per job).

    Returns ``(index into submits, new submit time)`` for each kept job, in replay order.
    """
    # sorted() is stable, so equal submit times keep their order in the file.
    order = sorted(range(len(submits)), key=submits.__getitem__)
    if not order:
        return []
    if options.window is not None:
        start = submits[order[0]]
        low, high = options.window
        order = [i for i in order if low <= submits[i] - start < high]
    if options.limit is not None:
        order = order[: options.limit]
    if not order:
        return []
    base = submits[order[0]]
    if options.load == 1.0:
        return [(i, submits[i] - base) for i in order]
    scaled = [(i, (submits[i] - base) / options.load) for i in order]
    # The last is the latest. int() of inf raised; past 10^15 ms (31,700 years) the policies'
    # int64 columns overflowed.
    if not scaled[-1][1] <= MAX_SECONDS * SECOND:
        raise TraceError(
            f"load {options.load:g} stretches the submit times past 31,700 years", field="load"
        )
    return [(i, int(at)) for i, at in scaled]
