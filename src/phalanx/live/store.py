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
from phalanx.live.leadership import Leadership, SoleLeader

TYPE_CHECKING = False
if TYPE_CHECKING:
    from phalanx.live.pgjournal import Fence

__all__ = ["Store", "open_journal", "open_store", "sqlite_url"]


@dataclass
class Store:
    url: str
    journal: StoreJournal
    epochs: EpochStore
    accounting: AccountingTable
    fence: Fence | None = None
    """PostgreSQL's: the epoch every write of this store checks (``Leadership``)."""

    @property
    def backend(self) -> str:
        """``sqlite`` or ``postgresql``."""
        return "sqlite" if sqlite_path(self.url) is not None else "postgresql"

    def leadership(self, advertise: str) -> Leadership:
        """Who leads this store: on SQLite this controller alone; on PostgreSQL whoever
        holds the lock (``phalanx.live.leadership``). ``advertise``: this controller's URL."""
        if self.fence is None:
            return SoleLeader(advertise)
        from phalanx.live.leadership import PostgresLeadership

        return PostgresLeadership(self.url, advertise)

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
        Fence,
        PostgresAccounting,
        PostgresEpochs,
        PostgresJournal,
        connect,
        safe_url,
    )

    conn = connect(url)
    name = safe_url(url)
    fence = Fence()
    return Store(
        url,
        PostgresJournal(conn, name, fence),
        PostgresEpochs(conn, name, fence),
        PostgresAccounting(conn, name),
        fence,
    )


def open_journal(url: str, epoch: int = 0) -> StoreJournal:
    """The journal alone of the store at ``url``, on a connection of its own (for a
    process that only saves snapshots), its writes fenced by ``epoch`` (0: not)."""
    path = sqlite_path(check_url(url))
    if path is not None:
        return SqliteJournal(path)
    from phalanx.live.pgjournal import Fence, PostgresJournal, connect, safe_url

    fence = Fence()
    fence.epoch = epoch
    return PostgresJournal(connect(url), safe_url(url), fence)
