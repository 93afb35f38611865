"""The state store on PostgreSQL (psycopg 3): the journal, its snapshot and agent epochs.

The same contracts as the SQLite store (``phalanx.live.journal``, ``phalanx.live.epochs``),
in one database that other controllers (a standby taking over) can reach. Every write is
one transaction, committed before it returns; PostgreSQL's ``synchronous_commit`` (on by
default) makes a commit durable. Any database error becomes ``JournalError``: nothing of
the failed call was written.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import psycopg

from phalanx.engine import Event
from phalanx.live.accounting import COLUMNS, AcctRow, where
from phalanx.live.codec import decode, encode
from phalanx.live.epochs import Holder
from phalanx.live.journal import READ_BATCH, JournalError

__all__ = ["PostgresAccounting", "PostgresEpochs", "PostgresJournal", "connect", "safe_url"]

_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS inputs (seq BIGSERIAL PRIMARY KEY,"
    " kind TEXT NOT NULL, body TEXT NOT NULL)",
    "CREATE TABLE IF NOT EXISTS snapshots (id INTEGER PRIMARY KEY CHECK (id = 1),"
    " position BIGINT NOT NULL, body BYTEA NOT NULL)",
    "CREATE TABLE IF NOT EXISTS agent_epochs (node TEXT PRIMARY KEY,"
    " epoch BIGINT NOT NULL, boot_id TEXT NOT NULL)",
    "CREATE TABLE IF NOT EXISTS accounting (job_id BIGINT PRIMARY KEY, array_job_id BIGINT,"
    " array_task_id BIGINT, user_name TEXT NOT NULL, submit_ms BIGINT NOT NULL,"
    " end_ms BIGINT NOT NULL, record TEXT NOT NULL)",
)


def connect(url: str) -> psycopg.Connection[Any]:
    """A connection (autocommit) to the database at ``url``, its tables made;
    ``JournalError`` naming the database (not its password) if that fails."""
    try:
        conn = psycopg.connect(url, autocommit=True)
        with conn.transaction():
            # One schema change at a time: two controllers starting together would
            # otherwise race on CREATE TABLE IF NOT EXISTS.
            conn.execute("SELECT pg_advisory_xact_lock(7166)")
            for statement in _SCHEMA:
                conn.execute(statement)
    except psycopg.Error as exc:
        raise JournalError(f"cannot open the state database {safe_url(url)}: {exc}") from None
    return conn


def safe_url(url: str) -> str:
    """``url`` without its password."""
    try:
        info = psycopg.conninfo.conninfo_to_dict(url)
    except psycopg.Error:
        return "(unparsable postgresql URL)"
    host = info.get("host", "")
    return f"postgresql://{info.get('user', '')}@{host}/{info.get('dbname', '')}"


class PostgresJournal:
    def __init__(self, conn: psycopg.Connection[Any], name: str) -> None:
        """``conn`` from ``connect`` (shared with the epochs); ``name`` names the database
        in errors."""
        self._conn = conn
        self.name = name

    def write(self, events: Sequence[Event]) -> None:
        rows = [encode(e) for e in events]
        try:
            # COPY: one round trip for a whole batch; seq follows the rows' order.
            with (
                self._conn.transaction(),
                self._conn.cursor() as cur,
                cur.copy("COPY inputs (kind, body) FROM STDIN") as copy,
            ):
                for row in rows:
                    copy.write_row(row)
        except psycopg.Error as exc:
            raise JournalError(f"cannot write the state database {self.name}: {exc}") from None

    def read(self, after: int = 0) -> Iterator[Event]:
        # Pages by key, not one cursor: no transaction stays open through a long replay.
        last = after
        while True:
            rows = self._conn.execute(
                "SELECT seq, kind, body FROM inputs WHERE seq > %s ORDER BY seq LIMIT %s",
                (last, READ_BATCH),
            ).fetchall()
            for _, kind, body in rows:
                yield decode(kind, body)
            if len(rows) < READ_BATCH:
                return
            last = int(rows[-1][0])

    def position(self) -> int:
        row = self._conn.execute("SELECT coalesce(max(seq), 0) FROM inputs").fetchone()
        return int(row[0]) if row is not None else 0

    def count(self) -> int:
        row = self._conn.execute("SELECT count(*) FROM inputs").fetchone()
        return int(row[0]) if row is not None else 0

    def save_snapshot(self, position: int, body: bytes) -> None:
        try:
            self._conn.execute(
                "INSERT INTO snapshots (id, position, body) VALUES (1, %s, %s) ON CONFLICT (id)"
                " DO UPDATE SET position = excluded.position, body = excluded.body",
                (position, body),
            )
        except psycopg.Error as exc:
            raise JournalError(f"cannot write the state database {self.name}: {exc}") from None

    def load_snapshot(self) -> tuple[int, bytes] | None:
        row = self._conn.execute("SELECT position, body FROM snapshots WHERE id = 1").fetchone()
        return None if row is None else (int(row[0]), bytes(row[1]))

    def close(self) -> None:
        self._conn.close()


class PostgresEpochs:
    def __init__(self, conn: psycopg.Connection[Any], name: str) -> None:
        self._conn = conn
        self.name = name

    def load(self) -> dict[str, Holder]:
        rows = self._conn.execute("SELECT node, epoch, boot_id FROM agent_epochs").fetchall()
        return {str(node): (int(epoch), str(boot)) for node, epoch, boot in rows}

    def save(self, node: str, epoch: int, boot_id: str) -> None:
        try:
            self._conn.execute(
                "INSERT INTO agent_epochs (node, epoch, boot_id) VALUES (%s, %s, %s)"
                " ON CONFLICT (node) DO UPDATE SET epoch = excluded.epoch,"
                " boot_id = excluded.boot_id",
                (node, epoch, boot_id),
            )
        except psycopg.Error as exc:
            raise JournalError(f"cannot write the state database {self.name}: {exc}") from None

    def close(self) -> None:
        self._conn.close()


class PostgresAccounting:
    def __init__(self, conn: psycopg.Connection[Any], name: str) -> None:
        self._conn = conn
        self.name = name

    def archive(self, rows: Sequence[AcctRow]) -> None:
        values = [
            (r.job_id, r.array_job_id, r.array_task_id, r.user, r.submit, r.end, r.record)
            for r in rows
        ]
        try:
            with self._conn.transaction(), self._conn.cursor() as cur:
                cur.executemany(
                    f"INSERT INTO accounting ({COLUMNS}) VALUES (%s, %s, %s, %s, %s, %s, %s)"
                    " ON CONFLICT (job_id) DO UPDATE SET record = excluded.record,"
                    " end_ms = excluded.end_ms",
                    values,
                )
        except psycopg.Error as exc:
            raise JournalError(f"cannot write the state database {self.name}: {exc}") from None

    def query(
        self, *, user: str | None = None, since: int | None = None, until: int | None = None
    ) -> list[AcctRow]:
        sql, args = where(user, since, until, "%s")
        rows = self._conn.execute(
            f"SELECT {COLUMNS} FROM accounting{sql} ORDER BY job_id", args
        ).fetchall()
        return [AcctRow(*row) for row in rows]

    def close(self) -> None:
        self._conn.close()
