"""The write-ahead journal: every input the engine handled, committed before its effects.

Phalanx journals inputs, not decisions: submissions, cancels, ended runs, failed launches,
node changes, each with the instant it was handled at. The engine is deterministic, so a
replay of the journal rebuilds exactly the state (and the decisions) the controller had;
timers need not be stored. A snapshot (``phalanx.live.snapshot``) is that state saved with
the journal position it reflects, so a restart replays only the inputs after it.

``StoreJournal`` is the interface the controller's store gives; it has two implementations,
``SqliteJournal`` here (the embedded default: one file in WAL mode, each ``write`` one
transaction, durable with ``synchronous=FULL`` before it returns) and
``phalanx.live.pgjournal.PostgresJournal`` (one PostgreSQL database).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator, Sequence
from typing import Protocol, runtime_checkable

from phalanx.engine import Event
from phalanx.live.codec import decode, encode
from phalanx.runtime.ports import Journal, JournalError, MemoryJournal

__all__ = [
    "Journal",
    "JournalError",
    "MemoryJournal",
    "SqliteJournal",
    "StoreJournal",
    "open_state_db",
]
"""``Journal`` (the port), ``JournalError`` and ``MemoryJournal`` (its in-memory twin) are
the driver's (``phalanx.runtime.ports``); they are named here too, beside the durable ones."""

READ_BATCH = 10_000
"""Rows fetched at a time on replay: memory stays flat however long the journal is."""


@runtime_checkable
class StoreJournal(Journal, Protocol):
    """A durable journal with positions and a snapshot slot.

    Positions are the sequence numbers the store gave the inputs: increasing in the order
    written (not necessarily without gaps); 0 is "before the first input"."""

    def read(self, after: int = 0) -> Iterator[Event]:
        """Every committed event written after position ``after``, in the order written."""

    def tail(self, after: int, limit: int = READ_BATCH) -> list[tuple[int, Event]]:
        """Up to ``limit`` committed inputs after position ``after``, each with its position,
        in the order written (a standby follows the journal with it)."""

    def position(self) -> int:
        """The position of the last committed input (0 if none)."""

    def count(self) -> int:
        """How many inputs are committed."""

    def save_snapshot(self, position: int, body: bytes) -> None:
        """Keep ``body``, the state after every input up to ``position``, in place of the
        previous snapshot, atomically; ``JournalError`` (the old one kept) if impossible."""

    def load_snapshot(self) -> tuple[int, bytes] | None:
        """The last snapshot saved and its position, or None."""

    def close(self) -> None:
        """Release the connection (idempotent)."""


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
        try:
            self._db.execute(
                "CREATE TABLE IF NOT EXISTS snapshots (id INTEGER PRIMARY KEY CHECK (id = 1),"
                " position INTEGER NOT NULL, body BLOB NOT NULL)"
            )
        except sqlite3.Error as exc:
            raise JournalError(f"cannot open the state database {path}: {exc}") from None

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

    def read(self, after: int = 0) -> Iterator[Event]:
        cursor = self._db.execute(
            "SELECT kind, body FROM inputs WHERE seq > ? ORDER BY seq", (after,)
        )
        while batch := cursor.fetchmany(READ_BATCH):
            for kind, body in batch:
                yield decode(kind, body)

    def tail(self, after: int, limit: int = READ_BATCH) -> list[tuple[int, Event]]:
        rows = self._db.execute(
            "SELECT seq, kind, body FROM inputs WHERE seq > ? ORDER BY seq LIMIT ?", (after, limit)
        ).fetchall()
        return [(int(seq), decode(kind, body)) for seq, kind, body in rows]

    def position(self) -> int:
        return int(self._db.execute("SELECT coalesce(max(seq), 0) FROM inputs").fetchone()[0])

    def count(self) -> int:
        return int(self._db.execute("SELECT count(*) FROM inputs").fetchone()[0])

    def save_snapshot(self, position: int, body: bytes) -> None:
        try:
            self._db.execute(
                "INSERT INTO snapshots (id, position, body) VALUES (1, ?, ?) ON CONFLICT(id)"
                " DO UPDATE SET position = excluded.position, body = excluded.body",
                (position, body),
            )
        except sqlite3.Error as exc:
            raise JournalError(f"cannot write the state database {self.path}: {exc}") from None

    def load_snapshot(self) -> tuple[int, bytes] | None:
        row = self._db.execute("SELECT position, body FROM snapshots WHERE id = 1").fetchone()
        return None if row is None else (int(row[0]), bytes(row[1]))

    def close(self) -> None:
        self._db.close()
