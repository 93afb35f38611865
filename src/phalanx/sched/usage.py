"""Decayed usage per account: the input of fair share, kept by the engine, read by plugins."""

from __future__ import annotations

from mypy_extensions import mypyc_attr

from phalanx.domain.cluster import Cluster
from phalanx.domain.fairshare import DEFAULT_HALF_LIFE, decay_multiplier
from phalanx.domain.time import Duration, Instant

__all__ = ["Usage"]


@mypyc_attr(allow_interpreted_subclasses=True)
class Usage:
    """GPU-milliseconds used per account (and its ancestors), halving every ``half_life``."""

    def __init__(self, cluster: Cluster, half_life: Duration = DEFAULT_HALF_LIFE) -> None:
        self.cluster = cluster
        self.half_life = half_life
        self.raw: dict[str, float] = {}
        self.updated: Instant = 0
        self._paths: dict[str, tuple[str, ...]] = {}

    _decays: dict[int, float] | None = None
    """``decay_multiplier`` by elapsed time, for ``_decays_for`` (a class default: usage
    pickled before it existed makes its own). A recalculation decays by the same period each
    time, and the function runs interpreted."""
    _decays_for: Duration = 0

    def _decay(self, elapsed: Duration) -> float:
        decays = self._decays
        if decays is None or self._decays_for != self.half_life or len(decays) > 64:
            decays = self._decays = {}
            self._decays_for = self.half_life
        k = decays.get(elapsed)
        if k is None:
            k = decays[elapsed] = decay_multiplier(elapsed, self.half_life)
        return k

    def path(self, account: str) -> tuple[str, ...]:
        p = self._paths.get(account)
        if p is None:
            p = self.cluster.account_path(account)
            self._paths[account] = p
        return p

    def advance(self, now: Instant, gpus_by_account: dict[str, float]) -> None:
        """Decay past usage to ``now`` and charge the running GPUs for the elapsed time."""
        elapsed = now - self.updated
        if elapsed <= 0:
            return
        k = self._decay(elapsed)
        raw = self.raw
        for name in raw:
            raw[name] *= k
        # Charge at the midpoint of the interval's decay, a fair approximation of the integral.
        charge_k = self._decay(elapsed // 2)
        for account, gpus in gpus_by_account.items():
            if gpus <= 0:
                continue
            amount = gpus * elapsed * charge_k
            for name in self.path(account):
                raw[name] = raw.get(name, 0.0) + amount
        self.updated = now

    def of(self, account: str) -> float:
        return self.raw.get(account, 0.0)
