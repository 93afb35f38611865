"""A standby's warm engine: the leader's state, kept up by reading its journal as it writes.

A standby controller restores the last snapshot, as a restarting one does, then reads the
inputs the leader commits after it (``StoreJournal.tail``) and hands them to its own engine,
with the fleet replaying (nothing is sent to agents). The engine is deterministic, so it goes
through the leader's states in the leader's order -- as long as it never handles an event
the leader had not handled when a later input came. The live driver stamps inputs so that
the journal's instants never decrease (``Driver(monotonic=True)``): every event before the
last input read is final, and the standby handles exactly those. Jobs are forgotten by an
input (``Forget``), so they go here when they went there.

``take_over`` is what a restart does after its replay: the rest of the journal, what fell
due since, then the fleet waits for the agents to say what still runs. It takes as long as
the journal written since the last ``follow`` -- a fraction of a second when following
every few hundred milliseconds.
"""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING

from phalanx.domain.state import JobState
from phalanx.domain.time import SECOND, Duration
from phalanx.live.journal import READ_BATCH, StoreJournal

if TYPE_CHECKING:
    from phalanx.live.controller import Controller

__all__ = ["ACCOUNT_AGAIN", "COMPACT_EVERY", "Follower"]

log = logging.getLogger("phalanx.controller")

COMPACT_EVERY = 5_000
"""Inputs followed between two compactions of the standby's queue (``Driver.compact``)."""
ACCOUNT_AGAIN: Duration = 60 * SECOND
"""At a takeover, the records of the jobs that ended this long before it are stored again."""


class Follower:
    """Keeps ``controller`` (not serving yet) at the leader's state."""

    def __init__(self, controller: Controller, journal: StoreJournal) -> None:
        self.controller = controller
        self.journal = journal
        self.position = 0
        """The journal position of the last input handed to the engine."""
        self.inputs = 0
        """Inputs read since the snapshot."""
        self._uncompacted = 0

    def start(self) -> int:
        """Restore the last snapshot and follow from there; return the inputs read."""
        ctl = self.controller
        ctl.fleet.replaying = True
        ctl.snapshots.restore()
        ctl.engine = ctl.loop.engine
        self.position = ctl.snapshots.position
        return self.follow()

    def follow(self) -> int:
        """Read what the leader committed since the last call; handle every event before
        the last instant read. Return the inputs read."""
        ctl = self.controller
        read = 0
        while batch := self.journal.tail(self.position, READ_BATCH):
            self.position = batch[-1][0]
            events = [event for _, event in batch]
            ctl.loop.replay(max(e.at for e in events) - 1, events)
            read += len(events)
        if read:
            ctl.book()
            self.inputs += read
            self._uncompacted += read
            if self._uncompacted >= COMPACT_EVERY:
                # As the leader does at each snapshot: timers of runs that are over go.
                ctl.loop.compact()
                self._uncompacted = 0
        return read

    def take_over(self) -> int:
        """Become the leader's successor: the rest of the journal, everything due by now,
        then the fleet waits for the agents (the runs the engine has running are theirs).
        Return the inputs read. Call it once this controller holds the lead."""
        ctl = self.controller
        t0 = time.perf_counter()
        read = self.follow()
        now = ctl.clock.now()
        try:
            ctl.loop.replay(now, [])
        finally:
            running = ctl.engine.jobs.values()
            ctl.fleet.finish_replay((j.id, j.run) for j in running if j.state is JobState.RUNNING)
        ctl.book()
        ctl.adopt(now)
        # The old leader stored each job's record as it ended; those of its last moments
        # may have died with it. (Any other is stored again before it is forgotten.)
        recent = ctl.loop.last_at - ACCOUNT_AGAIN
        ctl.snapshots.account(
            [j for j in ctl.engine.jobs.values() if j.state.is_final and (j.end or 0) >= recent]
        )
        ctl.recovered = self.inputs
        log.info(
            "took over at journal position %d in %.3f s (%d inputs read then, %d followed in"
            " all); %d jobs known",
            self.position,
            time.perf_counter() - t0,
            read,
            self.inputs,
            len(ctl.engine.jobs),
        )
        return read
