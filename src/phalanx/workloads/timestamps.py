"""Kubernetes timestamps (RFC 3339, whole seconds, UTC: ``2026-12-01T18:28:24Z``) to and from
the integer milliseconds the core keeps time in, without a clock or ``datetime`` (this layer
is sans-IO): Howard Hinnant's days-from-civil algorithms."""

from __future__ import annotations

import functools
import re

from phalanx.domain.time import Instant

__all__ = ["parse_time", "rfc3339"]

_DAY_MS = 86_400_000
_RFC3339 = re.compile(r"^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(?:\.\d+)?Z$")


def rfc3339(at: Instant) -> str:
    """``at`` (ms since the Unix epoch) as Kubernetes writes a ``metav1.Time``."""
    return _rfc3339_second(at // 1000)


# Memos of pure functions: a reconcile writes and reads the same few stamps (now, a Job's
# start) again and again, and each costs more than the rest of a status condition.
@functools.lru_cache(maxsize=1024)
def _rfc3339_second(second: int) -> str:
    days, ms = divmod(second * 1000, _DAY_MS)
    year, month, day = _civil(days)
    seconds = ms // 1000
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{year:04d}-{month:02d}-{day:02d}T{hours:02d}:{minutes:02d}:{secs:02d}Z"


def parse_time(text: object) -> Instant | None:
    """A ``metav1.Time`` back as ms; None for anything else (absent or malformed)."""
    if not isinstance(text, str):
        return None
    return _parse_text(text)


@functools.lru_cache(maxsize=1024)
def _parse_text(text: str) -> Instant | None:
    m = _RFC3339.match(text)
    if m is None:
        return None
    year, month, day, hours, minutes, secs = (int(g) for g in m.groups())
    return _days(year, month, day) * _DAY_MS + ((hours * 60 + minutes) * 60 + secs) * 1000


def _civil(days: int) -> tuple[int, int, int]:
    z = days + 719_468
    era = z // 146_097
    doe = z - era * 146_097
    yoe = (doe - doe // 1460 + doe // 36_524 - doe // 146_096) // 365
    doy = doe - (365 * yoe + yoe // 4 - yoe // 100)
    mp = (5 * doy + 2) // 153
    day = doy - (153 * mp + 2) // 5 + 1
    month = mp + 3 if mp < 10 else mp - 9
    return yoe + era * 400 + (month <= 2), month, day


def _days(year: int, month: int, day: int) -> int:
    year -= month <= 2
    era = year // 400
    yoe = year - era * 400
    doy = (153 * (month + (-3 if month > 2 else 9)) + 2) // 5 + day - 1
    doe = yoe * 365 + yoe // 4 - yoe // 100 + doy
    return era * 146_097 + doe - 719_468
