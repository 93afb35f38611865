"""Durable state: every change the engine persists, committed before its launch (write-ahead).

A one-method seam (``append``) with an in-memory twin for tests. ``SqliteStore`` is the
embedded default: one file, WAL journal, each append its own committed transaction.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Protocol

__all__ = ["MemoryStore", "Record", "SqliteStore", "Store"]


@dataclass(frozen=True, slots=True)
class Record:
    """One persisted change: ``what`` happened to ``job_id`` at ``at`` (ms), with details."""

    at: int
    job_id: int
    what: str
    data: dict[str, object]


class Store(Protocol):
    def append(self, record: Record) -> None:
        """Make ``record`` durable before returning (the caller acts on it next)."""

    def records(self) -> Iterator[Record]:
        """Every record, in the order appended."""


class MemoryStore:
    def __init__(self) -> None:
        self._records: list[Record] = []

    def append(self, record: Record) -> None:
        self._records.append(record)

    def records(self) -> Iterator[Record]:
        return iter(list(self._records))


class SqliteStore:
    """Records in one SQLite file in WAL mode (readers never block the writer)."""

    def __init__(self, path: str) -> None:
        self._db = sqlite3.connect(path, isolation_level=None)
        self._db.execute("PRAGMA journal_mode=WAL")
        # FULL: a commit survives a power cut, not only a crash of this process.
        self._db.execute("PRAGMA synchronous=FULL")
        self._db.execute(
            "CREATE TABLE IF NOT EXISTS changes ("
            " seq INTEGER PRIMARY KEY AUTOINCREMENT,"
            " at INTEGER NOT NULL, job_id INTEGER NOT NULL,"
            " what TEXT NOT NULL, data TEXT NOT NULL)"
        )

    @property
    def journal_mode(self) -> str:
        row = self._db.execute("PRAGMA journal_mode").fetchone()
        return str(row[0])

    def append(self, record: Record) -> None:
        with self._db:  # one transaction, committed on exit
            self._db.execute(
                "INSERT INTO changes (at, job_id, what, data) VALUES (?, ?, ?, ?)",
                (record.at, record.job_id, record.what, json.dumps(record.data, sort_keys=True)),
            )

    def records(self) -> Iterator[Record]:
        rows = self._db.execute("SELECT at, job_id, what, data FROM changes ORDER BY seq")
        for at, job_id, what, data in rows.fetchall():
            yield Record(int(at), int(job_id), str(what), json.loads(data))

    def close(self) -> None:
        self._db.close()
