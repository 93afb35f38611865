"""The write-ahead journal: every input the engine handled, committed before its effects.

Phalanx journals inputs, not decisions: submissions, cancels, ended runs, failed launches,
node changes, each with the instant it was handled at. The engine is deterministic, so a
replay of the journal rebuilds exactly the state (and the decisions) the controller had;
timers need not be stored. ``SqliteJournal`` is the embedded default: one file in WAL mode,
each ``write`` one transaction, durable (``synchronous=FULL``) before it returns.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator, Sequence

from phalanx.engine import Event
from phalanx.live.codec import decode, encode
from phalanx.runtime.ports import Journal, JournalError, MemoryJournal

__all__ = ["Journal", "JournalError", "MemoryJournal", "SqliteJournal", "open_state_db"]
"""``Journal`` (the port), ``JournalError`` and ``MemoryJournal`` (its in-memory twin) are
the driver's (``phalanx.runtime.ports``); they are named here too, beside the durable one."""


def open_state_db(path: str, table: str) -> sqlite3.Connection:
    """The state database at ``path`` (WAL, autocommit) with ``table`` (its ``CREATE TABLE IF
    NOT EXISTS`` body) made; ``JournalError`` if it cannot be opened."""
    try:
        db = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        db.execute("PRAGMA journal_mode=WAL")
        # FULL: a commit survives a power cut, not only a crash of this process.
        db.execute("PRAGMA synchronous=FULL")
        db.execute(f"CREATE TABLE IF NOT EXISTS {table}")
    except sqlite3.Error as exc:
        raise JournalError(f"cannot open the state database {path}: {exc}") from None
    return db


class SqliteJournal:
    def __init__(self, path: str) -> None:
        self.path = path
        self._db = open_state_db(
            path,
            "inputs (seq INTEGER PRIMARY KEY AUTOINCREMENT,"
            " kind TEXT NOT NULL, body TEXT NOT NULL)",
        )

    @property
    def journal_mode(self) -> str:
        row = self._db.execute("PRAGMA journal_mode").fetchone()
        return str(row[0])

    def write(self, events: Sequence[Event]) -> None:
        rows = [encode(e) for e in events]
        try:
            self._db.execute("BEGIN IMMEDIATE")  # one transaction: all or nothing
            try:
                self._db.executemany("INSERT INTO inputs (kind, body) VALUES (?, ?)", rows)
                self._db.execute("COMMIT")
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
        except sqlite3.Error as exc:
            raise JournalError(f"cannot write the state database {self.path}: {exc}") from None

    def read(self) -> Iterator[Event]:
        cursor = self._db.execute("SELECT kind, body FROM inputs ORDER BY seq")
        while batch := cursor.fetchmany(10_000):
            for kind, body in batch:
                yield decode(kind, body)

    def count(self) -> int:
        return int(self._db.execute("SELECT count(*) FROM inputs").fetchone()[0])

    def close(self) -> None:
        self._db.close()
