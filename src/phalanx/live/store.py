"""The controller's state store, chosen by URL (``phalanx.live.dburl``): the journal (with
its snapshot), the agent epochs and the accounting of forgotten jobs, in one database.
``sqlite:///PATH`` is the embedded default, a file in the state directory;
``postgresql://...`` a PostgreSQL database."""

from __future__ import annotations

from dataclasses import dataclass

from phalanx.live.accounting import AccountingTable, SqliteAccounting
from phalanx.live.dburl import check_url, sqlite_path, sqlite_url
from phalanx.live.epochs import EpochStore, SqliteEpochs
from phalanx.live.journal import SqliteJournal, StoreJournal

__all__ = ["Store", "open_journal", "open_store", "sqlite_url"]


@dataclass
class Store:
    url: str
    journal: StoreJournal
    epochs: EpochStore
    accounting: AccountingTable

    @property
    def backend(self) -> str:
        """``sqlite`` or ``postgresql``."""
        return "sqlite" if sqlite_path(self.url) is not None else "postgresql"

    def close(self) -> None:
        self.journal.close()
        for part in (self.epochs, self.accounting):
            close = getattr(part, "close", None)
            if close is not None:
                close()


def open_store(url: str) -> Store:
    """Open (creating its tables) the store at ``url``: ``InputError`` for a URL of another
    kind, ``JournalError`` if the database cannot be opened."""
    path = sqlite_path(check_url(url))
    if path is not None:
        return Store(url, SqliteJournal(path), SqliteEpochs(path), SqliteAccounting(path))
    # Imported here: psycopg is only loaded by controllers that use it.
    from phalanx.live.pgjournal import (
        PostgresAccounting,
        PostgresEpochs,
        PostgresJournal,
        connect,
        safe_url,
    )

    conn = connect(url)
    name = safe_url(url)
    return Store(
        url, PostgresJournal(conn, name), PostgresEpochs(conn, name), PostgresAccounting(conn, name)
    )


def open_journal(url: str) -> StoreJournal:
    """The journal alone of the store at ``url``, on a connection of its own (for a
    process that only saves snapshots)."""
    path = sqlite_path(check_url(url))
    if path is not None:
        return SqliteJournal(path)
    from phalanx.live.pgjournal import PostgresJournal, connect, safe_url

    return PostgresJournal(connect(url), safe_url(url))
