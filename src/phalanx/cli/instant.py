"""Instants as a user reads and writes them: local ISO 8601 time, as Slurm prints it.

On the wire an instant is milliseconds since the Unix epoch.
"""

from __future__ import annotations

import time
from datetime import datetime

from phalanx.errors import InputError

__all__ = ["UNKNOWN", "format_instant", "now_ms", "parse_instant"]

UNKNOWN = "Unknown"
"""What Slurm prints for an instant that has not come (or is not known)."""


def now_ms() -> int:
    return time.time_ns() // 1_000_000


def format_instant(ms: int | None) -> str:
    """``2026-11-29T19:40:00`` in local time, or ``Unknown``."""
    if ms is None:
        return UNKNOWN
    return datetime.fromtimestamp(ms / 1000).strftime("%Y-%m-%dT%H:%M:%S")


def parse_instant(text: str, *, field: str) -> int:
    """Milliseconds since the epoch, from digits (already ms) or ISO 8601 (local time unless
    it names a zone)."""
    value = text.strip()
    if value.isdecimal():
        return int(value)
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        raise InputError(
            f"{text!r} is neither ms since the epoch nor an ISO 8601 time", field=field
        ) from None
    # A naive datetime's timestamp() takes it as local time, as Slurm reads --begin.
    return round(moment.timestamp() * 1000)
