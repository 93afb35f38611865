"""A controller's role over its life: leader, or standby until it takes over, and a deposed
leader stepping down.

- Leader from the start: recover (snapshot and journal tail), open the door, run the loop.
- Standby (another controller holds the store's lead, ``phalanx.live.leadership``): a warm
  engine follows the journal (``phalanx.live.standby``) every ``FOLLOW_S``; the door answers
  503 with the leader's URL. When the lead is free (the leader died, or lost its database),
  take it, finish the journal, open the door: agents re-register, clients retry here.
- Leading, check every ``CHECK_S`` that the store still has this controller's epoch. If not
  (another took over), or if the store cannot say (a leader cut off from its database must
  not go on commanding agents), close the door and stop; the process then starts again as
  a standby (``step_down``). Journal writes are fenced by the epoch too: nothing a deposed
  leader does after the takeover is committed.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import sys
import threading
import time
from collections.abc import Callable
from typing import Protocol

from phalanx.api.gate import Gate
from phalanx.errors import StateStoreError
from phalanx.live.controller import Controller
from phalanx.live.leadership import Leadership
from phalanx.live.standby import Follower
from phalanx.live.store import Store

__all__ = ["CHECK_S", "FOLLOW_S", "Roles"]

log = logging.getLogger("phalanx.controller")

FOLLOW_S = 0.2
"""How often a standby reads the journal and tries for the lead."""
CHECK_S = 0.25
"""How often the leader checks that it still leads."""
LEASE_S = 1.0
"""How long a confirmation of the lead lasts: a leader whose last check that succeeded
began longer ago than this answers nothing and commands no agent (it may have been
deposed without knowing); a successor waits this long after raising the epoch before it
serves, so that the two never act at once, even when the old one lives on cut off from the
database but not from its agents."""
LOST_STORE_S = 5.0
"""A standby that cannot read its store this long starts again (and waits for it)."""


class _LostStore(Exception):
    """A standby's database sessions are gone."""


class _Exits(Protocol):
    should_exit: bool


class Roles:
    def __init__(
        self,
        controller: Controller,
        store: Store,
        leadership: Leadership,
        gate: Gate,
        server: _Exits,
    ) -> None:
        self.controller = controller
        self.store = store
        self.leadership = leadership
        self.gate = gate
        self.server = server
        self.leading = False
        self.start_again = False
        """Set when this process must start again (deposed, or its store lost)."""
        self._loop_task: asyncio.Task[None] | None = None
        self._stopping = threading.Event()

    async def run(self) -> None:
        try:
            await self._run()
        except _LostStore:
            self.start_again = True
            self.gate.close("standby")
            self.server.should_exit = True

    async def _run(self) -> None:
        if self._try_lead():
            started = time.monotonic()
            replayed = self.controller.recover()
            if self.leadership.epoch > 1:  # a leader before this one may live on, cut off
                await asyncio.sleep(max(0.0, started + LEASE_S - time.monotonic()))
            log.info(
                "leading: recovered %d journaled inputs from the %s store; %d jobs known",
                replayed,
                self.store.backend,
                len(self.controller.engine.jobs),
            )
        else:
            await self._stand_by()
        self.leading = True
        self._confirmed(time.monotonic())
        self.gate.lead()
        self._loop_task = asyncio.create_task(self.controller.run())
        # The checks run in a thread of their own: a request that holds the event loop for
        # a while (a batch of thousands of jobs) must not let the lease lapse meanwhile.
        deposed = asyncio.Event()
        loop = asyncio.get_running_loop()
        watch = threading.Thread(
            target=self._watch, args=(lambda: loop.call_soon_threadsafe(deposed.set),),
            name="lead-check", daemon=True,
        )  # fmt: skip
        watch.start()
        try:
            await deposed.wait()
        finally:
            self._stopping.set()
        self.start_again = True
        self.leading = False
        self.gate.close()
        log.error(
            "deposed: the store no longer holds epoch %d for this controller (leader: %s);"
            " stepping down",
            self.leadership.epoch,
            self.leadership.leader(),
        )
        self.controller.stop()
        self.server.should_exit = True

    async def _stand_by(self) -> None:
        follower = Follower(self.controller, self.store.journal)
        self.gate.role = "standby"
        read = follower.start()
        self.gate.leader = self.leadership.leader()
        log.info(
            "standing by: %d journaled inputs followed; the leader is at %s",
            read,
            self.gate.leader,
        )
        failing_since: float | None = None
        while True:
            await asyncio.sleep(FOLLOW_S)
            try:
                follower.follow()
            except StateStoreError as exc:
                # Its database sessions are gone: start afresh (waiting for the database)
                # rather than follow from a connection that will not come back.
                now = time.monotonic()
                failing_since = failing_since or now
                log.warning("cannot follow the journal: %s", exc)
                if now - failing_since > LOST_STORE_S:
                    raise _LostStore() from None
                continue
            failing_since = None
            if self._try_lead():
                took = time.monotonic()
                follower.take_over()
                # The deposed leader, alive or not, acts no more once its lease is out.
                await asyncio.sleep(max(0.0, took + LEASE_S - time.monotonic()))
                return
            self.gate.leader = self.leadership.leader()

    def _watch(self, on_deposed: Callable[[], None]) -> None:
        """Check the lead every ``CHECK_S`` until it is lost (then ``on_deposed``) or the
        role ends. The lock's connection is this thread's alone from here on."""
        while not self._stopping.wait(CHECK_S):
            began = time.monotonic()
            if not self.leadership.still_leads():
                on_deposed()
                return
            self._confirmed(began)

    def _confirmed(self, began: float) -> None:
        """The lead was confirmed by a check that began at ``began``."""
        if self.store.fence is not None:  # the embedded store has one controller: no lease
            self.gate.lease_until = began + LEASE_S
            self.controller.agents.may_act = self.gate.open

    def _try_lead(self) -> bool:
        try:
            if not self.leadership.try_lead():
                return False
        except StateStoreError as exc:
            log.warning("cannot try for the lead: %s", exc)
            return False
        if self.store.fence is not None:
            self.store.fence.epoch = self.leadership.epoch
        return True

    async def stop(self, task: asyncio.Task[None]) -> None:
        """End the role (the controller was told to stop): wait for its loop."""
        self._stopping.set()
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        if self._loop_task is not None:
            self.controller.stop()
            await self._loop_task

    def step_down(self) -> None:
        """Start this process again, as it was started: it comes back as a standby (once
        its database answers again, if it was lost)."""
        log.info("restarting as a standby")
        sys.stdout.flush()
        sys.stderr.flush()
        os.execv(sys.executable, [sys.executable, *sys.orig_argv[1:]])
