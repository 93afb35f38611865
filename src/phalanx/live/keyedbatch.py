"""Requests that each carry their own idempotency key, submitted in one journal write
(``Controller.submit_each``): which of them are new, and the ids each one answers."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from phalanx.domain.jobspec import JobSpec

__all__ = ["KeyedBatch"]


class KeyedBatch:
    """``requests``: (spec, key) pairs, "" for no key. A key is scoped by its spec's user,
    as ``Controller.submit([spec], key)`` scopes it; ``known(scoped)`` gives the ids a key
    got before (None: new). ``fresh`` and ``keys`` are what to submit, in order: each new
    request once (a key given twice is submitted once, and both answer its ids)."""

    def __init__(
        self,
        requests: Sequence[tuple[JobSpec, str]],
        known: Callable[[str], list[int] | None],
    ) -> None:
        self.fresh: list[JobSpec] = []
        self.keys: list[str] = []
        self._answers: list[tuple[int, list[int] | None]] = []
        """Per request: its index in ``fresh``, or -1 and the ids its key got before."""
        first: dict[str, int] = {}
        for spec, key in requests:
            scoped = f"{spec.user}/{key}/0" if key else ""
            before = known(scoped) if scoped else None
            if before is not None:
                self._answers.append((-1, before))
            elif scoped in first:
                self._answers.append((first[scoped], None))
            else:
                if scoped:
                    first[scoped] = len(self.fresh)
                self._answers.append((len(self.fresh), None))
                self.fresh.append(spec)
                self.keys.append(scoped)

    def answers(self, made: Sequence[list[int]]) -> list[list[int]]:
        """Each request's ids, given the ids ``fresh`` got (``made``, in order)."""
        return [list(made[i]) if ids is None else ids for i, ids in self._answers]
