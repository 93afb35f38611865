"""Idempotency keys of submissions: a request retried with the same key (a client that did not
hear the answer, or followed a new leader after a failover) gets the job ids of the first,
and no second job. Part of the engine's state, so a replay or a standby rebuilds it from the
journal, and a snapshot holds it: pickled as columns (one string, two arrays), since
``sbatch`` sends a key with every job and 100,000 entries one by one took half a second to
load."""

from __future__ import annotations

from collections import deque

import numpy as np
import numpy.typing as npt

__all__ = ["KEYS_KEPT", "RequestIds"]

KEYS_KEPT = 100_000
"""The most recent keys remembered: retries come within seconds, not after 100,000 more
submissions."""

_SEP = "\0"
"""Between the keys of the pickled state (no HTTP header holds it)."""

_State = tuple[str | list[str], npt.NDArray[np.int64], npt.NDArray[np.int64]]


class RequestIds:
    """Key (scoped by its user) -> the job ids its submission got, the newest ``KEYS_KEPT``."""

    def __init__(self) -> None:
        self._ids: dict[str, tuple[int, int]] = {}
        """Key -> (first id, count): a submission's ids follow one another."""
        self._order: deque[str] = deque()
        """The keys, oldest first (a dict's own order is slow to pop from the front)."""

    def remember(self, key: str, first: int, count: int) -> None:
        """``key`` got the ids ``first``, ..., ``first + count - 1``."""
        if key not in self._ids:
            self._order.append(key)
        self._ids[key] = (first, count)
        if len(self._order) > KEYS_KEPT:
            del self._ids[self._order.popleft()]

    def get(self, key: str) -> list[int] | None:
        found = self._ids.get(key)
        return None if found is None else list(range(found[0], found[0] + found[1]))

    def __len__(self) -> int:
        return len(self._ids)

    def __getstate__(self) -> _State:
        keys = list(self._order)
        ids = self._ids
        firsts = np.fromiter((ids[k][0] for k in keys), np.int64, len(keys))
        counts = np.fromiter((ids[k][1] for k in keys), np.int64, len(keys))
        joined = _SEP.join(keys)
        # One string loads in a few ms; a list of them, one object at a time.
        packed = joined if joined.count(_SEP) == max(len(keys) - 1, 0) else keys
        return packed, firsts, counts

    def __setstate__(self, state: _State) -> None:
        packed, firsts, counts = state
        keys = packed if isinstance(packed, list) else packed.split(_SEP) if len(firsts) else []
        self._order = deque(keys)
        self._ids = dict(zip(keys, zip(firsts.tolist(), counts.tolist(), strict=True), strict=True))
