"""What changed since the last pass: whether the next one may end behind the new jobs.

A pass is a function of the occupancy, the running jobs, the queue (with its priorities),
the plugins' state and the clock. After a pass that took nothing (started, preempted,
nominated nothing; nothing is on its way out), a second pass over the same inputs would take
nothing either. If the only inputs that changed since are jobs newly queued by submissions,
and the clock changed no plugin's answers (every plugin is ``Clocked`` and its
``clock_signature`` is the same at both instants, and no leaf-switch limit of a queued job
relaxed in between), then every job ahead of the first new one fares as it did in the last
pass; and once the new jobs are looked at without any of them (or a job between them)
taking anything -- no decision, no reservation, not the first blocked job
(``ReservationStep.marker``) -- every job behind them fares as it did too. The pass then
ends there (``Recipe.run``'s ``span``), and those jobs keep their statuses.

What this does not do: ask for a wake-up at the instant a running job becomes a cheap
victim. A pass at that instant would take decisions the engine did not take before (passes
run when an event asks for one), and a wake-up that only marked the inputs changed would do
what comparing the signatures of the two passes does, without a timer.
"""

from __future__ import annotations

import bisect
from collections.abc import Hashable

from phalanx.domain.time import Instant
from phalanx.engine.endings import Endings
from phalanx.engine.events import Event, Submit, TimerFired
from phalanx.engine.queue import PendingQueue
from phalanx.engine.scheduling.context import PassView
from phalanx.engine.scheduling.elastic import Elastic
from phalanx.engine.scheduling.points import Points
from phalanx.engine.scheduling.preemption import Preemption
from phalanx.engine.timers import LimitTimer, PassTimer
from phalanx.sched.job import Job
from phalanx.sched.points import Clocked

__all__ = ["SinceLastPass"]


class SinceLastPass:
    """The engine's record of the inputs a pass depends on, between passes."""

    def __init__(
        self,
        points: Points,
        view: PassView,
        queue: PendingQueue,
        preemption: Preemption,
        endings: Endings,
        elastic: Elastic,
    ) -> None:
        """A plugin of ``points`` that is not ``Clocked`` turns this off (every pass looks
        at the whole queue), and so does placing pod by pod (held pods)."""
        plugins = points.plugins()
        clocked = [p for p in plugins if isinstance(p, Clocked)]
        whole = len(clocked) == len(plugins) and not points.pods
        self._clocked = tuple(clocked) if whole else None
        self._view = view
        self._queue = queue
        self._preemption = preemption
        self._endings = endings
        self._elastic = elastic
        self._fresh: list[Job] = []
        """Jobs queued since the last pass."""
        self._stable = False
        """The last pass took nothing, and nothing but submissions happened since."""
        self._inputs: tuple[int, int] = (-1, -1)
        """The occupancy's version and the queue's length after the last pass."""
        self._at: Instant = 0
        """The instant of the last pass."""
        self._relax_at: list[Instant] = []
        """When the leaf-switch limits of the jobs queued so far relax, sorted."""
        self.short = 0
        """Passes that ended behind the new jobs."""

    def note(self, event: Event, decided: bool) -> None:
        """After every event: anything but a submission, a pass or a limit timer that
        decided nothing (a stale one, or an early signal) may have changed an input."""
        if type(event) is Submit:
            return
        if isinstance(event, TimerFired):
            key = type(event.key)
            if key is PassTimer or (key is LimitTimer and not decided):
                return
        self._stable = False

    def queued(self, job: Job) -> None:
        """``job`` joined the queue (submitted, requeued, released, ...)."""
        self._fresh.append(job)
        relax = self._view.relaxes_at(job)
        if relax is not None:
            bisect.insort(self._relax_at, relax)

    def span(self) -> tuple[int, int] | None:
        """Before a pass: the positions in the queue of the first and the last job queued
        since the last pass, if the pass may end behind them; else None. Forgets them."""
        fresh, self._fresh = self._fresh, []
        if not self._stable or self._clocked is None or not fresh:
            return None
        queue = self._queue
        if self._inputs != (self._view.state.version, len(queue) - len(fresh)):
            return None  # something changed the inputs outside ``handle``
        if self._sign(self._at) != self._sign(self._view.now):
            return None
        first = last = -1
        for job in fresh:
            at = queue.position(job)
            if at < 0:
                return None  # left the queue again: not only an addition
            first = at if first < 0 else min(first, at)
            last = max(last, at)
        return first, last

    def ended(self, started: bool, short: bool) -> None:
        """After a pass (``started``: it started a job; ``short``: it ended behind the new
        jobs): whether it took anything, and the inputs it ran on if not."""
        self.short += short
        preemption = self._preemption
        self._stable = not (
            started
            or preemption.claims
            or preemption.nominations
            or self._endings.preempting
            or self._elastic.jobs
        )
        if self._stable and self._clocked is not None:
            self._inputs = (self._view.state.version, len(self._queue))
            self._at = self._view.now

    def _sign(self, at: Instant) -> Hashable:
        """The plugins' signatures as of ``at``, asked now: with the inputs unchanged
        since the last pass, what they would have said then (cheaper than asking after
        every pass, most of which are followed by a change)."""
        view = self._view
        assert self._clocked is not None
        now, view.now = view.now, at
        try:
            return (
                bisect.bisect_right(self._relax_at, at),
                tuple(plugin.clock_signature(view) for plugin in self._clocked),
            )
        finally:
            view.now = now
