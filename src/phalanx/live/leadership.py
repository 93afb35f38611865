"""Who leads: one controller per state store acts, the others stand by.

On SQLite (one file on one host) the only controller leads (``SoleLeader``). On PostgreSQL
(``PostgresLeadership``) any number of controllers share the store; the one holding a
session-level advisory lock leads -- PostgreSQL's own mutual exclusion, no consensus of our
own. Kill the leader (kill -9, a crash, a cut link) and its session ends, the lock with it,
and a standby's next try takes it.

A lock alone does not stop a leader that has not noticed it lost its session from writing.
So taking the lead also raises the epoch in the ``leader`` row, and every journal write of
the leader checks, in its own transaction, that the row still holds its epoch (a shared row
lock: the new leader's raise waits for a write in flight, and no write of the old leader
commits after it). A deposed leader's writes fail with ``Deposed``; it steps down.

The leader's URL is in the same row: a standby answers every call with 503 and it, and the
clients and agents given several controllers go there.
"""

from __future__ import annotations

import logging
from typing import Any, Protocol

from phalanx.errors import NotLeader
from phalanx.live.journal import JournalError

__all__ = [
    "LEADER_LOCK",
    "Deposed",
    "Leadership",
    "PostgresLeadership",
    "SoleLeader",
]

log = logging.getLogger("phalanx.controller")

LEADER_LOCK = 7167
"""The advisory lock key the leader holds (7166 serialises schema changes)."""


class Deposed(JournalError, NotLeader):
    """This controller's epoch was superseded: another controller leads. Nothing of the
    failed call was written."""


class Leadership(Protocol):
    epoch: int
    """The epoch this controller leads under (0 until it leads)."""

    def try_lead(self) -> bool:
        """Take the lead if no one holds it; True if this controller leads now."""

    def still_leads(self) -> bool:
        """Whether this controller still leads (False also when the store cannot tell:
        a leader that cannot reach its database must not act)."""

    def leader(self) -> str | None:
        """The leader's URL, as it advertised it, where known."""

    def close(self) -> None: ...


class SoleLeader:
    """The embedded store's: one controller, always the leader."""

    def __init__(self, url: str = "") -> None:
        self.epoch = 1
        self.url = url

    def try_lead(self) -> bool:
        return True

    def still_leads(self) -> bool:
        return True

    def leader(self) -> str | None:
        return self.url or None

    def close(self) -> None:
        pass


class PostgresLeadership:
    def __init__(self, url: str, advertise: str) -> None:
        """``advertise``: this controller's URL, as clients and agents reach it."""
        from phalanx.live.pgjournal import connect, safe_url

        self.advertise = advertise
        self.epoch = 0
        self.name = safe_url(url)
        # A connection of its own: the lock lives and dies with this session.
        self._conn: Any = connect(url, fast_fail=True)

    def try_lead(self) -> bool:
        if self.epoch:
            return self.still_leads()
        import psycopg

        try:
            row = self._conn.execute("SELECT pg_try_advisory_lock(%s)", (LEADER_LOCK,)).fetchone()
            if row is None or not row[0]:
                return False
            with self._conn.transaction():
                # Waits for a write of the old leader in flight (it holds the row shared).
                found = self._conn.execute(
                    "INSERT INTO leader (id, epoch, url) VALUES (1, 1, %s) ON CONFLICT (id)"
                    " DO UPDATE SET epoch = leader.epoch + 1, url = excluded.url"
                    " RETURNING epoch",
                    (self.advertise,),
                ).fetchone()
        except psycopg.Error as exc:
            raise JournalError(f"cannot take the lead in {self.name}: {exc}") from None
        self.epoch = int(found[0])
        log.info("leading the store %s under epoch %d", self.name, self.epoch)
        return True

    def still_leads(self) -> bool:
        import psycopg

        if not self.epoch:
            return False
        try:
            row = self._conn.execute("SELECT epoch FROM leader WHERE id = 1").fetchone()
        except psycopg.Error as exc:
            log.error("cannot reach the store %s to check the lead: %s", self.name, exc)
            return False
        return row is not None and int(row[0]) == self.epoch

    def leader(self) -> str | None:
        import psycopg

        try:
            row = self._conn.execute("SELECT url FROM leader WHERE id = 1").fetchone()
        except psycopg.Error:
            return None
        return None if row is None else str(row[0])

    def close(self) -> None:
        self._conn.close()
