"""The Kubernetes objects' tables in the controller's database: ``kube_objects(resource,
namespace, name, rv, body)`` beside the journal, and the global resourceVersion counter in
``kube_meta``; each commit of the object store (``phalanx.kube.store``) is one transaction.
Implements ``phalanx.kube.persist.ObjectTable``."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from typing import Any

from phalanx.live.journal import JournalError, open_state_db

__all__ = ["PostgresObjects", "SqliteObjects", "open_objects"]

Write = tuple[str, str, str, int, dict[str, Any] | bytes | None]
"""(resource "group/plural", namespace, name, rv, body (or its JSON) or None for a
removal): ``phalanx.kube.persist.Write``."""


def _text(body: dict[str, Any] | bytes) -> str:
    """A row's body: the object's JSON (made already for an answer, or now)."""
    if isinstance(body, bytes):
        return body.decode()
    return json.dumps(body, separators=(",", ":"))


_TABLE = (
    "kube_objects (resource TEXT NOT NULL, namespace TEXT NOT NULL, name TEXT NOT NULL,"
    " rv INTEGER NOT NULL, body TEXT NOT NULL, PRIMARY KEY (resource, namespace, name))"
)
_META = "CREATE TABLE IF NOT EXISTS kube_meta (k TEXT PRIMARY KEY, v INTEGER NOT NULL)"


class SqliteObjects:
    def __init__(self, path: str) -> None:
        self.path = path
        self._db = open_state_db(path, _TABLE)
        try:
            # FULL (open_state_db's): each commit is fsynced, since the API acknowledges a
            # write only once it is committed. The API server commits many requests' writes
            # in one transaction (phalanx.kube.groupcommit), so they share the fsync.
            self._db.execute(_META)
        except sqlite3.Error as exc:
            raise JournalError(f"cannot open the state database {path}: {exc}") from None

    def load(self) -> tuple[int, list[dict[str, Any]]]:
        row = self._db.execute("SELECT v FROM kube_meta WHERE k = 'rv'").fetchone()
        bodies = self._db.execute("SELECT body FROM kube_objects ORDER BY rv").fetchall()
        return (int(row[0]) if row else 0), [json.loads(b) for (b,) in bodies]

    def commit(self, rv: int, writes: Sequence[Write]) -> None:
        db = self._db
        try:
            db.execute("BEGIN")
            for resource, ns, name, wrv, body in writes:
                if body is None:
                    db.execute(
                        "DELETE FROM kube_objects WHERE resource = ? AND namespace = ?"
                        " AND name = ?",
                        (resource, ns, name),
                    )
                else:
                    db.execute(
                        "INSERT OR REPLACE INTO kube_objects VALUES (?, ?, ?, ?, ?)",
                        (resource, ns, name, wrv, _text(body)),
                    )
            db.execute("INSERT OR REPLACE INTO kube_meta VALUES ('rv', ?)", (rv,))
            db.execute("COMMIT")
        except sqlite3.Error as exc:
            if db.in_transaction:
                db.execute("ROLLBACK")
            raise JournalError(f"cannot write the state database {self.path}: {exc}") from None

    def close(self) -> None:
        self._db.close()


class PostgresObjects:
    """The same tables on PostgreSQL (the controller's ``--db postgresql://...``)."""

    def __init__(self, url: str) -> None:
        from phalanx.live.pgjournal import connect, safe_url

        self.name = safe_url(url)
        self._conn = connect(url)
        try:
            self._conn.execute(f"CREATE TABLE IF NOT EXISTS {_TABLE.replace('INTEGER', 'BIGINT')}")
            self._conn.execute(_META.replace("INTEGER", "BIGINT"))
        except Exception as exc:
            raise JournalError(f"cannot open the state database {self.name}: {exc}") from None

    def load(self) -> tuple[int, list[dict[str, Any]]]:
        row = self._conn.execute("SELECT v FROM kube_meta WHERE k = 'rv'").fetchone()
        bodies = self._conn.execute("SELECT body FROM kube_objects ORDER BY rv").fetchall()
        return (int(row[0]) if row else 0), [json.loads(b) for (b,) in bodies]

    def commit(self, rv: int, writes: Sequence[Write]) -> None:
        try:
            with self._conn.transaction():
                for resource, ns, name, wrv, body in writes:
                    if body is None:
                        self._conn.execute(
                            "DELETE FROM kube_objects WHERE resource = %s AND namespace = %s"
                            " AND name = %s",
                            (resource, ns, name),
                        )
                    else:
                        self._conn.execute(
                            "INSERT INTO kube_objects VALUES (%s, %s, %s, %s, %s)"
                            " ON CONFLICT (resource, namespace, name) DO UPDATE"
                            " SET rv = excluded.rv, body = excluded.body",
                            (resource, ns, name, wrv, _text(body)),
                        )
                self._conn.execute(
                    "INSERT INTO kube_meta VALUES ('rv', %s)"
                    " ON CONFLICT (k) DO UPDATE SET v = excluded.v",
                    (rv,),
                )
        except Exception as exc:
            raise JournalError(f"cannot write the state database {self.name}: {exc}") from None

    def close(self) -> None:
        self._conn.close()


def open_objects(url: str) -> SqliteObjects | PostgresObjects:
    """The object tables of the state store at ``url``."""
    from phalanx.live.dburl import check_url, sqlite_path

    path = sqlite_path(check_url(url))
    if path is not None:
        return SqliteObjects(path)
    return PostgresObjects(url)
