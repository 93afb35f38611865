"""Idempotency keys of submissions: a request retried with the same key (a client that did not
hear the answer, or followed a new leader after a failover) gets the job ids of the first,
and no second job. Part of the engine's state, so a replay or a standby rebuilds it from the
journal."""

from __future__ import annotations

from collections import OrderedDict

__all__ = ["KEYS_KEPT", "RequestIds"]

KEYS_KEPT = 100_000
"""The most recent keys remembered: retries come within seconds, not after 100,000 more
submissions."""


class RequestIds:
    """Key (scoped by its user) -> the job ids its submission got, the newest ``KEYS_KEPT``."""

    def __init__(self) -> None:
        self._ids: OrderedDict[str, list[int]] = OrderedDict()

    def remember(self, key: str, ids: list[int]) -> None:
        self._ids[key] = ids
        if len(self._ids) > KEYS_KEPT:
            self._ids.popitem(last=False)

    def get(self, key: str) -> list[int] | None:
        return self._ids.get(key)

    def __len__(self) -> int:
        return len(self._ids)
