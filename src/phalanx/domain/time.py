"""Time is data: instants and durations are integer milliseconds.

Nothing in the core reads a clock; every event carries its ``at``.
"""

from __future__ import annotations

import re

from phalanx.errors import SpecError

__all__ = [
    "DAY",
    "HOUR",
    "MINUTE",
    "SECOND",
    "Duration",
    "Instant",
    "format_duration",
    "parse_duration",
]

Instant = int
"""Milliseconds since an epoch chosen by the driver (trace start, or the Unix epoch live)."""
Duration = int
"""Milliseconds."""

SECOND: Duration = 1_000
MINUTE: Duration = 60 * SECOND
HOUR: Duration = 60 * MINUTE
DAY: Duration = 24 * HOUR

# Slurm's accepted time formats: "minutes", "minutes:seconds", "hours:minutes:seconds",
# "days-hours", "days-hours:minutes" and "days-hours:minutes:seconds".
_DAYS = re.compile(r"^(\d+)-(\d+)(?::(\d+))?(?::(\d+))?$")
_COLON = re.compile(r"^(\d+)(?::(\d+))?(?::(\d+))?$")


def parse_duration(text: str, *, field: str = "time") -> Duration | None:
    """Parse a Slurm time string. ``UNLIMITED``/``INFINITE`` give None (no limit)."""
    value = text.strip()
    if value.upper() in ("UNLIMITED", "INFINITE"):
        return None
    m = _DAYS.match(value)
    if m:
        days, hours = int(m.group(1)), int(m.group(2))
        minutes = int(m.group(3) or 0)
        seconds = int(m.group(4) or 0)
        return ((days * 24 + hours) * 60 + minutes) * MINUTE + seconds * SECOND
    m = _COLON.match(value)
    if m:
        parts = [int(p) for p in m.groups() if p is not None]
        if len(parts) == 1:
            return parts[0] * MINUTE
        if len(parts) == 2:
            return parts[0] * MINUTE + parts[1] * SECOND
        return parts[0] * HOUR + parts[1] * MINUTE + parts[2] * SECOND
    raise SpecError(f"invalid time specification {text!r}", field=field)


def format_duration(ms: Duration | None) -> str:
    """Format like Slurm: ``[D-]HH:MM:SS``, or ``UNLIMITED``."""
    if ms is None:
        return "UNLIMITED"
    total = ms // SECOND
    days, rest = divmod(total, 86_400)
    hours, rest = divmod(rest, 3_600)
    minutes, seconds = divmod(rest, 60)
    hms = f"{hours:02d}:{minutes:02d}:{seconds:02d}"
    return f"{days}-{hms}" if days else hms
