"""The accounting ``sacct`` reads from the state store itself when no controller answers
(Slurm's sacct reads slurmdbd, not slurmctld): the records the controller stored as jobs
ended (``phalanx.live.accounting``), in the same database as its journal.

The store is ``$PHALANX_DB`` (``sqlite:///PATH`` or ``postgresql://...``), else the state
directory's ``state.db`` ($PHALANX_STATE_DIR, else ~/.local/state/phalanx). Only ended jobs
are there: what was pending or running when the controller stopped is not.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

__all__ = ["StoreUnreadable", "ended_jobs", "store_url"]

_COLUMNS = "record"


class StoreUnreadable(Exception):
    """No accounting could be read from the store (missing, or not a Phalanx store)."""


def store_url() -> str:
    env = os.environ.get("PHALANX_DB")
    if env:
        return env
    state = os.environ.get("PHALANX_STATE_DIR")
    root = Path(state) if state else Path.home() / ".local" / "state" / "phalanx"
    return f"sqlite:///{root / 'state.db'}"


def ended_jobs(
    url: str, *, user: str | None, since: int | None, until: int | None
) -> list[dict[str, Any]]:
    """Records (as ``GET /v1/accounting`` gives them) of ``user``'s jobs (everyone's if None)
    that ended at or after ``since`` and were submitted at or before ``until``, by job id;
    ``StoreUnreadable`` saying why if there are none to read."""
    terms, args = [], []
    for test, value in (("user_name =", user), ("end_ms >=", since), ("submit_ms <=", until)):
        if value is not None:
            terms.append(test)
            args.append(value)
    scheme, _, rest = url.partition("://")
    if scheme == "sqlite":
        rows = _sqlite(rest[1:], terms, args)
    elif scheme in ("postgresql", "postgres"):
        rows = _postgresql(url, terms, args)
    else:
        raise StoreUnreadable(f"unsupported database URL {url!r}")
    return [json.loads(record) for record in rows]


def _where(terms: list[str], mark: str) -> str:
    return " WHERE " + " AND ".join(f"{t} {mark}" for t in terms) if terms else ""


def _sqlite(path: str, terms: list[str], args: list[Any]) -> list[str]:
    import sqlite3

    if not Path(path).exists():
        raise StoreUnreadable(f"no state database at {path}")
    try:
        # Read-only: sacct never creates or changes the controller's database.
        db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        try:
            sql = f"SELECT record FROM accounting{_where(terms, '?')} ORDER BY job_id"
            return [str(r[0]) for r in db.execute(sql, args).fetchall()]
        finally:
            db.close()
    except sqlite3.Error as exc:
        raise StoreUnreadable(f"cannot read {path}: {exc}") from None


def _postgresql(url: str, terms: list[str], args: list[Any]) -> list[str]:
    try:
        import psycopg
    except ImportError:
        raise StoreUnreadable("psycopg is not installed") from None
    try:
        with psycopg.connect(url, connect_timeout=5) as conn:
            sql = f"SELECT record FROM accounting{_where(terms, '%s')} ORDER BY job_id"
            return [str(r[0]) for r in conn.execute(sql, args).fetchall()]
    except psycopg.Error as exc:
        raise StoreUnreadable(f"cannot read the state database: {exc}") from None
