"""Accounting: the records of jobs the controller no longer keeps in memory, in the state
store beside the journal (what ``sacct`` reads of them; Slurm keeps them in slurmdbd).

A record is the job's accounting row as the API serves it (JSON), stored once, when the
controller forgets the job (``phalanx.live.snapshot.MIN_JOB_AGE`` after it ended). Rows are
keyed by job id: storing a record again replaces it (a retried archive is harmless).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Protocol

from phalanx.live.journal import JournalError, open_state_db

__all__ = ["AccountingTable", "AcctRow", "MemoryAccounting", "SqliteAccounting", "matches"]


@dataclass(frozen=True)
class AcctRow:
    job_id: int
    array_job_id: int | None
    array_task_id: int | None
    user: str
    submit: int
    end: int
    record: str
    """The API's accounting row, as JSON."""


class AccountingTable(Protocol):
    def archive(self, rows: Sequence[AcctRow]) -> None:
        """Store ``rows`` durably, all or none; ``JournalError`` (none stored) if that is
        impossible."""

    def query(
        self, *, user: str | None = None, since: int | None = None, until: int | None = None
    ) -> list[AcctRow]:
        """Rows of ``user``'s jobs (everyone's if None) that ended at or after ``since`` and
        were submitted at or before ``until``, by job id."""


def matches(row: AcctRow, ids: Iterable[int | tuple[int, int]]) -> bool:
    """Whether ``row`` is one of ``ids``: a job id, an array's id (all its tasks), or
    (array id, task id)."""
    for wanted in ids:
        if isinstance(wanted, tuple):
            if (row.array_job_id, row.array_task_id) == wanted:
                return True
        elif wanted in (row.job_id, row.array_job_id):
            return True
    return False


_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1


def records(
    table: AccountingTable,
    *,
    user: str | None = None,
    since: int | None = None,
    until: int | None = None,
    ids: Iterable[int | tuple[int, int]] | None = None,
) -> list[str]:
    """The records (JSON) ``table.query`` gives, of ``ids`` only if given. ``since`` and
    ``until`` may be any integers (the API passes on what a client sends)."""
    # Both stores keep instants as 64-bit integers and refuse a bound past that range (an
    # OverflowError, a 500 that the API fuzz test found with since=2**63): such a bound
    # keeps every row or none, and is decided here.
    if (since is not None and since > _INT64_MAX) or (until is not None and until < _INT64_MIN):
        return []
    since = None if since is not None and since < _INT64_MIN else since
    until = None if until is not None and until > _INT64_MAX else until
    rows = table.query(user=user, since=since, until=until)
    if ids is not None:
        wanted = list(ids)
        rows = [r for r in rows if matches(r, wanted)]
    return [r.record for r in rows]


class ArchivedJobs:
    """What a controller answers from its accounting table: the records of jobs it no
    longer holds in memory."""

    accounting: AccountingTable

    def archived(
        self,
        *,
        user: str | None = None,
        since: int | None = None,
        until: int | None = None,
        ids: Iterable[int | tuple[int, int]] | None = None,
    ) -> list[str]:
        """Accounting records (JSON) of ended jobs, as ``finished`` filters jobs."""
        return records(self.accounting, user=user, since=since, until=until, ids=ids)


def _keep(row: AcctRow, user: str | None, since: int | None, until: int | None) -> bool:
    return (
        (user is None or row.user == user)
        and (since is None or row.end >= since)
        and (until is None or row.submit <= until)
    )


class MemoryAccounting:
    """The in-memory twin."""

    def __init__(self) -> None:
        self.rows: dict[int, AcctRow] = {}

    def archive(self, rows: Sequence[AcctRow]) -> None:
        self.rows.update((r.job_id, r) for r in rows)

    def query(
        self, *, user: str | None = None, since: int | None = None, until: int | None = None
    ) -> list[AcctRow]:
        return [r for _, r in sorted(self.rows.items()) if _keep(r, user, since, until)]


TABLE = (
    "accounting (job_id INTEGER PRIMARY KEY, array_job_id INTEGER, array_task_id INTEGER,"
    " user_name TEXT NOT NULL, submit_ms INTEGER NOT NULL, end_ms INTEGER NOT NULL,"
    " record TEXT NOT NULL)"
)
COLUMNS = "job_id, array_job_id, array_task_id, user_name, submit_ms, end_ms, record"


class SqliteAccounting:
    def __init__(self, path: str) -> None:
        self.path = path
        self._db = open_state_db(path, TABLE)

    def archive(self, rows: Sequence[AcctRow]) -> None:
        values = [
            (r.job_id, r.array_job_id, r.array_task_id, r.user, r.submit, r.end, r.record)
            for r in rows
        ]
        try:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                self._db.executemany(
                    f"INSERT OR REPLACE INTO accounting ({COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?)",
                    values,
                )
                self._db.execute("COMMIT")
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
        except sqlite3.Error as exc:
            raise JournalError(f"cannot write the state database {self.path}: {exc}") from None

    def query(
        self, *, user: str | None = None, since: int | None = None, until: int | None = None
    ) -> list[AcctRow]:
        sql, args = where(user, since, until, "?")
        cursor = self._db.execute(f"SELECT {COLUMNS} FROM accounting{sql} ORDER BY job_id", args)
        return [AcctRow(*row) for row in cursor.fetchall()]

    def close(self) -> None:
        self._db.close()


def where(
    user: str | None, since: int | None, until: int | None, mark: str
) -> tuple[str, list[object]]:
    """The WHERE clause of a query (``mark``: the driver's placeholder) and its values."""
    terms: list[str] = []
    args: list[object] = []
    for test, value in (("user_name =", user), ("end_ms >=", since), ("submit_ms <=", until)):
        if value is not None:
            terms.append(f"{test} {mark}")
            args.append(value)
    return (" WHERE " + " AND ".join(terms) if terms else ""), args
