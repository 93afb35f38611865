"""Fair-share maths: usage decay with a half-life and the classic factor."""

from __future__ import annotations

import math
from dataclasses import dataclass

from phalanx.domain.time import DAY, Duration

__all__ = ["DEFAULT_HALF_LIFE", "ShareRow", "classic_factor", "decay_multiplier"]

DEFAULT_HALF_LIFE: Duration = 7 * DAY


def decay_multiplier(elapsed: Duration, half_life: Duration) -> float:
    """What past usage is multiplied by after ``elapsed``: halves every ``half_life``."""
    if half_life <= 0:
        return 1.0
    return float(0.5 ** (elapsed / half_life))


def classic_factor(effective_usage: float, norm_shares: float) -> float:
    """Slurm's classic fair-share factor ``2^(-usage/shares)``, in [0, 1]."""
    if norm_shares <= 0:
        return 0.0
    return float(math.pow(2.0, -effective_usage / norm_shares))


@dataclass(frozen=True, slots=True)
class ShareRow:
    """One account of the fair-share tree as ``sshare`` shows it: its ``parent`` (None for
    ``root``), configured and normalised shares, decayed usage in GPU-seconds, usage as a
    fraction of the root's, and its fair-share factor in [0, 1]."""

    account: str
    parent: str | None
    raw_shares: int
    norm_shares: float
    raw_usage: float
    effective_usage: float
    fairshare: float
