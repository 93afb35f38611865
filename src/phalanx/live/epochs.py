"""Agent epochs: which incarnation of each node's agent holds the node, durably.

An epoch is handed out at most once per node, ever: the store keeps the last one given and
the boot id it was given to, and a restarted controller reads them back before it answers
any agent (architecture rule 6: a stale epoch is refused). ``SqliteEpochs`` keeps them in
the state database beside the journal, committed (``synchronous=FULL``) before the
registration that bumped the epoch is answered.
"""

from __future__ import annotations

import sqlite3
from typing import Protocol

from phalanx.live.journal import JournalError, open_state_db

__all__ = ["EpochStore", "MemoryEpochs", "SqliteEpochs"]

Holder = tuple[int, str]
"""(epoch, boot id) of the incarnation that holds a node."""


class EpochStore(Protocol):
    def load(self) -> dict[str, Holder]:
        """Every node's last epoch and the boot id it went to."""

    def save(self, node: str, epoch: int, boot_id: str) -> None:
        """Record ``node``'s new holder durably; raise ``JournalError`` (nothing changed) if
        that is impossible."""


class MemoryEpochs:
    def __init__(self) -> None:
        self.holders: dict[str, Holder] = {}
        self.fail = False
        """Tests set this to act out a full disk."""

    def load(self) -> dict[str, Holder]:
        return dict(self.holders)

    def save(self, node: str, epoch: int, boot_id: str) -> None:
        if self.fail:
            raise JournalError("the state database is full")
        self.holders[node] = (epoch, boot_id)


class SqliteEpochs:
    def __init__(self, path: str) -> None:
        self.path = path
        self._db = open_state_db(
            path,
            "agent_epochs (node TEXT PRIMARY KEY, epoch INTEGER NOT NULL, boot_id TEXT NOT NULL)",
        )

    def load(self) -> dict[str, Holder]:
        rows = self._db.execute("SELECT node, epoch, boot_id FROM agent_epochs").fetchall()
        return {str(node): (int(epoch), str(boot)) for node, epoch, boot in rows}

    def save(self, node: str, epoch: int, boot_id: str) -> None:
        try:
            self._db.execute(
                "INSERT INTO agent_epochs (node, epoch, boot_id) VALUES (?, ?, ?)"
                " ON CONFLICT(node) DO UPDATE SET epoch = excluded.epoch,"
                " boot_id = excluded.boot_id",
                (node, epoch, boot_id),
            )
        except sqlite3.Error as exc:
            raise JournalError(f"cannot write the state database {self.path}: {exc}") from None

    def close(self) -> None:
        self._db.close()
