"""When the controllers behind the Kubernetes API (the workload runner) do their work: after
the API's requests, as kube-controller-manager's workqueues lag behind kube-apiserver.

In Kubernetes the API server answers a create once the object is stored; the Job
controller, another process, sees it through its informer and reconciles it off a
de-duplicating workqueue, later, and falls behind under a burst. Here both share one event
loop (and one core): a controller that ran as soon as each request wrote would make every
request of a burst wait for the reconciles, status writes and Events that the ones before
it set off.

``Pace.defer(fn)`` therefore runs ``fn`` once no request has arrived for ``QUIET_S`` (on an
idle cluster: at once, or ``QUIET_S`` after the request that caused it), and in any case
once the oldest deferred work has waited ``MOST_S``: a controller falls behind a burst by
at most about that much, then catches up at the requests' own priority (the loop's turns
alternate between its batches and the requests ready). Work deferred while deferred work
runs (a drain that leaves a batch for later, the writes of one) is as old as the work that
deferred it, so a controller that has caught up once does not wait again.

Sans clock of its own: the loop's (``loop.time``, ``call_at``)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

__all__ = ["MOST_S", "QUIET_S", "Pace"]

log = logging.getLogger("phalanx.kube")

QUIET_S = 0.002
"""How long after the last request a controller's work waits: long enough for a request's
own writes and the next request of a client that sends many; short enough that create ->
Running on an idle cluster pays it once, a few milliseconds."""
MOST_S = 1.0
"""How long deferred work may wait behind requests that keep coming: about the lag of
kube-controller-manager behind a burst of creations (its clients are limited to 20
requests a second by default; its queues fall further behind than this)."""


class Pace:
    """Defers controllers' work behind the API's requests (module docstring). ``request()``
    is called at each request's arrival; ``defer(fn)`` runs ``fn`` on the loop later."""

    def __init__(
        self,
        loop: asyncio.AbstractEventLoop,
        *,
        quiet_s: float = QUIET_S,
        most_s: float = MOST_S,
    ) -> None:
        self.loop = loop
        self.quiet_s = quiet_s
        self.most_s = most_s
        self.last_request = float("-inf")
        self._waiting: list[Callable[[], None]] = []
        self._since = 0.0
        """When the oldest work waiting was deferred."""
        self._armed: asyncio.Handle | None = None
        self._running = False
        self.requests = 0
        self.runs = 0

    def request(self) -> None:
        """A request arrived: deferred work waits ``quiet_s`` more (up to ``most_s``)."""
        self.last_request = self.loop.time()
        self.requests += 1

    def defer(self, fn: Callable[[], None]) -> None:
        """Run ``fn`` on the loop once the requests leave room (module docstring)."""
        if not self._waiting and not self._running:
            self._since = self.loop.time()
        self._waiting.append(fn)
        if self._armed is None and not self._running:
            self._arm()

    def _arm(self) -> None:
        due = min(self.last_request + self.quiet_s, self._since + self.most_s)
        if due <= self.loop.time():
            self._armed = self.loop.call_soon(self._run)
        else:
            self._armed = self.loop.call_at(due, self._run)

    def _run(self) -> None:
        self._armed = None
        now = self.loop.time()
        if now < self.last_request + self.quiet_s and now < self._since + self.most_s:
            self._arm()  # a request came meanwhile: wait again, within the bound
            return
        waiting, self._waiting = self._waiting, []
        self._running = True
        self.runs += 1
        try:
            for fn in waiting:
                try:
                    fn()
                except Exception:  # as the loop's own handler would: logged, the rest run
                    log.exception("deferred work %r", fn)
        finally:
            self._running = False
            if self._waiting:  # deferred by the work just run: as old as it (docstring)
                self._arm()
