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

__all__ = [
    "Fence",
    "PostgresAccounting",
    "PostgresEpochs",
    "PostgresJournal",
    "connect",
    "safe_url",
]

_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS inputs (seq BIGSERIAL PRIMARY KEY,"
    " kind TEXT NOT NULL, body TEXT NOT NULL)",
    "CREATE TABLE IF NOT EXISTS snapshots (id INTEGER PRIMARY KEY CHECK (id = 1),"
    " position BIGINT NOT NULL, body BYTEA NOT NULL)",
    "CREATE TABLE IF NOT EXISTS agent_epochs (node TEXT PRIMARY KEY,"
    " epoch BIGINT NOT NULL, boot_id TEXT NOT NULL)",
    "CREATE TABLE IF NOT EXISTS leader (id INTEGER PRIMARY KEY CHECK (id = 1),"
    " epoch BIGINT NOT NULL, url TEXT NOT NULL)",
    "CREATE TABLE IF NOT EXISTS accounting (job_id BIGINT PRIMARY KEY, array_job_id BIGINT,"
    " array_task_id BIGINT, user_name TEXT NOT NULL, submit_ms BIGINT NOT NULL,"
    " end_ms BIGINT NOT NULL, record TEXT NOT NULL)",
)


_FAST_FAIL = {
    "keepalives": "1",
    "keepalives_idle": "2",
    "keepalives_interval": "1",
    "keepalives_count": "3",
    "tcp_user_timeout": "5000",
    "connect_timeout": "5",
}
"""libpq's TCP settings (unless the URL sets them): a call to a database that went away
fails within seconds instead of waiting for TCP's retransmissions (minutes), so a leader cut
off from its store stops acting while a standby takes over."""

_SERVER_KEEPALIVE = (
    "SET tcp_keepalives_idle = 2",
    "SET tcp_keepalives_interval = 1",
    "SET tcp_keepalives_count = 3",
)
"""The server's side of it, for the leader's lock session: a leader whose host vanished
loses the lock in seconds."""


def connect(url: str, *, fast_fail: bool = False) -> psycopg.Connection[Any]:
    """A connection (autocommit) to the database at ``url``, its tables made;
    ``JournalError`` naming the database (not its password) if that fails. ``fast_fail``:
    the server, too, drops the session soon after this side vanishes (the leader's lock)."""
    try:
        given = psycopg.conninfo.conninfo_to_dict(url)
        extra = {k: v for k, v in _FAST_FAIL.items() if k not in given}
        conn = psycopg.connect(psycopg.conninfo.make_conninfo(url, **extra), autocommit=True)
        if fast_fail:
            for statement in _SERVER_KEEPALIVE:
                conn.execute(statement)
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


class Fence:
    """The epoch a leader writes under (``phalanx.live.leadership``), shared by the parts of
    its store; 0: not fenced (no leadership yet, or a tool that only reads)."""

    def __init__(self) -> None:
        self.epoch = 0

    def check(self, cur: psycopg.Cursor[Any]) -> None:
        """In the caller's transaction: raise ``Deposed`` unless the ``leader`` row holds
        this epoch, and keep the row shared until the commit (the next leader's raise of
        the epoch waits for it)."""
        if not self.epoch:
            return
        row = cur.execute("SELECT epoch, url FROM leader WHERE id = 1 FOR SHARE").fetchone()
        if row is None or int(row[0]) != self.epoch:
            from phalanx.live.leadership import Deposed

            leader = None if row is None else str(row[1])
            raise Deposed(
                f"this controller was deposed: epoch {self.epoch} is superseded"
                + (f" by {row[0]} (the leader is at {leader})" if row is not None else ""),
                leader=leader,
            )


class PostgresJournal:
    def __init__(
        self, conn: psycopg.Connection[Any], name: str, fence: Fence | None = None
    ) -> None:
        """``conn`` from ``connect`` (shared with the epochs); ``name`` names the database
        in errors; ``fence``: every write checks it."""
        self._conn = conn
        self.name = name
        self.fence = fence if fence is not None else Fence()

    def write(self, events: Sequence[Event]) -> None:
        rows = [encode(e) for e in events]
        try:
            with self._conn.transaction(), self._conn.cursor() as cur:
                self.fence.check(cur)
                # COPY: one round trip for a whole batch; seq follows the rows' order.
                with cur.copy("COPY inputs (kind, body) FROM STDIN") as copy:
                    for row in rows:
                        copy.write_row(row)
        except psycopg.Error as exc:
            raise JournalError(f"cannot write the state database {self.name}: {exc}") from None

    def tail(self, after: int, limit: int = READ_BATCH) -> list[tuple[int, Event]]:
        rows = self._rows(
            "SELECT seq, kind, body FROM inputs WHERE seq > %s ORDER BY seq LIMIT %s",
            (after, limit),
        )
        return [(int(seq), decode(kind, body)) for seq, kind, body in rows]

    def _rows(self, sql: str, args: tuple[Any, ...] = ()) -> list[Any]:
        """A query's rows; ``JournalError`` if the database cannot answer."""
        try:
            return self._conn.execute(sql, args).fetchall()
        except psycopg.Error as exc:
            raise JournalError(f"cannot read the state database {self.name}: {exc}") from None

    def read(self, after: int = 0) -> Iterator[Event]:
        # Pages by key, not one cursor: no transaction stays open through a long replay.
        last = after
        while True:
            rows = self._rows(
                "SELECT seq, kind, body FROM inputs WHERE seq > %s ORDER BY seq LIMIT %s",
                (last, READ_BATCH),
            )
            for _, kind, body in rows:
                yield decode(kind, body)
            if len(rows) < READ_BATCH:
                return
            last = int(rows[-1][0])

    def position(self) -> int:
        return int(self._rows("SELECT coalesce(max(seq), 0) FROM inputs")[0][0])

    def count(self) -> int:
        return int(self._rows("SELECT count(*) FROM inputs")[0][0])

    def save_snapshot(self, position: int, body: bytes) -> None:
        try:
            with self._conn.transaction(), self._conn.cursor() as cur:
                self.fence.check(cur)
                # Never back: a deposed leader's late child must not undo a newer snapshot.
                cur.execute(
                    "INSERT INTO snapshots (id, position, body) VALUES (1, %s, %s)"
                    " ON CONFLICT (id) DO UPDATE SET position = excluded.position,"
                    " body = excluded.body WHERE snapshots.position <= excluded.position",
                    (position, body),
                )
        except psycopg.Error as exc:
            raise JournalError(f"cannot write the state database {self.name}: {exc}") from None

    def load_snapshot(self) -> tuple[int, bytes] | None:
        rows = self._rows("SELECT position, body FROM snapshots WHERE id = 1")
        return None if not rows else (int(rows[0][0]), bytes(rows[0][1]))

    def close(self) -> None:
        self._conn.close()


class PostgresEpochs:
    def __init__(
        self, conn: psycopg.Connection[Any], name: str, fence: Fence | None = None
    ) -> None:
        self._conn = conn
        self.name = name
        self.fence = fence if fence is not None else Fence()

    def load(self) -> dict[str, Holder]:
        try:
            rows = self._conn.execute("SELECT node, epoch, boot_id FROM agent_epochs").fetchall()
        except psycopg.Error as exc:
            raise JournalError(f"cannot read the state database {self.name}: {exc}") from None
        return {str(node): (int(epoch), str(boot)) for node, epoch, boot in rows}

    def save(self, node: str, epoch: int, boot_id: str) -> None:
        try:
            with self._conn.transaction(), self._conn.cursor() as cur:
                self.fence.check(cur)  # a deposed leader registers no agent
                cur.execute(
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
        try:
            rows = self._conn.execute(
                f"SELECT {COLUMNS} FROM accounting{sql} ORDER BY job_id", args
            ).fetchall()
        except psycopg.Error as exc:
            raise JournalError(f"cannot read the state database {self.name}: {exc}") from None
        return [AcctRow(*row) for row in rows]

    def close(self) -> None:
        self._conn.close()
