"""Where the Kubernetes objects live between restarts: the port the object store writes
through (``ObjectTable``) and its in-memory twin. The controller's database tables
(SQLite, PostgreSQL) implement it in ``phalanx.live.kubeobjects``."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, Protocol

__all__ = ["MemoryObjects", "ObjectTable", "Write"]

Write = tuple[str, str, str, int, dict[str, Any] | bytes | None]
"""(resource "group/plural", namespace, name, rv, body or None for a removal). A body may
be its JSON already (UTF-8), made for an answer (``ObjectStore.take_pending``)."""


class ObjectTable(Protocol):
    def load(self) -> tuple[int, list[dict[str, Any]]]:
        """The last resourceVersion handed out and every object kept."""

    def commit(self, rv: int, writes: Sequence[Write]) -> None:
        """Apply ``writes`` and record ``rv`` as the counter, atomically and durably;
        ``JournalError`` (nothing changed) if impossible."""

    def close(self) -> None: ...


class MemoryObjects:
    """Keeps nothing across processes: the store of tests and of ``--db`` less tools."""

    def __init__(self) -> None:
        self.rv = 0
        self.rows: dict[tuple[str, str, str], dict[str, Any]] = {}

    def load(self) -> tuple[int, list[dict[str, Any]]]:
        return self.rv, list(self.rows.values())

    def commit(self, rv: int, writes: Sequence[Write]) -> None:
        self.rv = rv
        for resource, ns, name, _, body in writes:
            if body is None:
                self.rows.pop((resource, ns, name), None)
            elif isinstance(body, bytes):
                self.rows[(resource, ns, name)] = json.loads(body)
            else:
                self.rows[(resource, ns, name)] = body  # the store never mutates it

    def close(self) -> None:
        pass
