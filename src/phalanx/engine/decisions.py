"""The decision log: every decision the engine took, in order, as plain tuples.

The same trace and seed give the same log, in simulation and live with a fake clock; tests
compare logs. Entries are ``(at, kind, job_id, detail)``.
"""

from __future__ import annotations

from phalanx.domain.time import Instant

__all__ = ["Decision", "DecisionLog"]

Decision = tuple[Instant, str, int, tuple[object, ...]]


class DecisionLog:
    __slots__ = ("entries",)

    def __init__(self) -> None:
        self.entries: list[Decision] = []

    def add(self, at: Instant, kind: str, job_id: int, *detail: object) -> None:
        self.entries.append((at, kind, job_id, detail))

    def __len__(self) -> int:
        return len(self.entries)

    def since(self, index: int) -> list[Decision]:
        return self.entries[index:]
