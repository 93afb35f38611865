"""Slurm's text output, shared by ``squeue``, ``sacct`` and ``sinfo``.

Contracts, as Slurm 22.05 prints them (``/work/shared/slurm/reference``):

* ``fit(text, width, right)``: a ``%[.]Nx`` field. Width 0 prints the text as it is; otherwise
  the text is cut to ``width`` (``cut=False`` keeps it whole, as squeue does for node lists and
  times) and padded: on the left when ``right``, else on the right.
* ``parse_percent`` reads ``-o`` formats (``%.18i %-8j|``): literal text and ``Spec`` items.
  ``parse_long`` reads ``-O`` lists (``JobID:|,Name:30``): ``Field[:[.][size][suffix]]``,
  default size 20.
* Times: ``clock`` is squeue's ``M:SS``/``H:MM:SS``/``D-HH:MM:SS``; ``hms`` is sacct's
  ``HH:MM:SS``/``D-HH:MM:SS``; ``instant`` is local ``2026-11-29T19:40:00``.
* ``template(prefix, specs, whole)`` is ``render`` compiled for many lines:
  ``template(...) % tuple(values) == render(..., [str(v) for v in values], whole)``.
* ``memory`` prints megabytes as Slurm does: ``8000M``, ``64G`` (exact multiples only).

Imports only the standard library and ``phalanx.domain.hostlist``: the commands that use
this module are run thousands of times by tools and must start fast.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import dataclass

from phalanx.domain.hostlist import compress, expand

__all__ = [
    "LONG_STATE",
    "MAX_WIDTH",
    "MIN_JOB_AGE_MS",
    "SHORT_STATE",
    "Spec",
    "clock",
    "compress",
    "expand",
    "fit",
    "hms",
    "instant",
    "memory",
    "now_ms",
    "parse_long",
    "parse_percent",
    "ranges",
    "render",
    "sacct_cut",
    "template",
    "user_ids",
    "width",
]

MAX_WIDTH = 10_000
"""The widest field a format may ask for. Slurm prints any width with printf as it goes; these
commands build each line in memory, and ``squeue -o %999999999i`` over 200 jobs took 14 GB
(a width of 30 digits raised ``width too big``). A wider field is refused as a bad one."""

MIN_JOB_AGE_MS = 300_000
"""Slurm's MinJobAge: a finished job stays visible to ``squeue -t all`` this long."""

SHORT_STATE = {
    "PENDING": "PD",
    "RUNNING": "R",
    "SUSPENDED": "S",
    "COMPLETING": "CG",
    "COMPLETED": "CD",
    "CANCELLED": "CA",
    "FAILED": "F",
    "TIMEOUT": "TO",
    "PREEMPTED": "PR",
    "NODE_FAIL": "NF",
    "OUT_OF_MEMORY": "OOM",
    "REQUEUED": "RQ",
    "BOOT_FAIL": "BF",
    "DEADLINE": "DL",
}
"""Long job state -> the code ``squeue %t`` prints."""

LONG_STATE = {short: long for long, short in SHORT_STATE.items()}
"""Short code -> long state; ``-t``/``-s`` accept either."""


def user_ids(user: str) -> tuple[int, int, str] | None:
    """``user``'s uid, primary gid and that group's name (its number if it has none), or
    None for a user this host does not know."""
    import grp
    import pwd

    try:
        entry = pwd.getpwnam(user)
    except KeyError:
        return None
    try:
        group = grp.getgrgid(entry.pw_gid).gr_name
    except KeyError:
        group = str(entry.pw_gid)
    return entry.pw_uid, entry.pw_gid, group


def now_ms() -> int:
    return time.time_ns() // 1_000_000


def fit(text: str, width: int, right: bool, cut: bool = True) -> str:
    """``text`` in a field of ``width`` (0: as it is), as squeue's ``_print_str``."""
    if width <= 0:
        return text
    if cut and len(text) > width:
        text = text[:width]
    return text.rjust(width) if right else text.ljust(width)


def sacct_cut(text: str, width: int, right: bool) -> str:
    """A sacct column: too long a value ends in ``+`` (``CANCELLED+``)."""
    if width <= 0:
        return text
    if len(text) > width:
        text = text[: width - 1] + "+"
    return text.rjust(width) if right else text.ljust(width)


def clock(seconds: int) -> str:
    """squeue's elapsed and limit times: ``0:02``, ``2:00:00``, ``1-00:00:00``."""
    seconds = max(0, seconds)
    days, rest = divmod(seconds, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    if days:
        return f"{days}-{hours:02d}:{minutes:02d}:{secs:02d}"
    if hours:
        return f"{hours}:{minutes:02d}:{secs:02d}"
    return f"{minutes}:{secs:02d}"


def hms(seconds: int) -> str:
    """sacct's durations: ``00:00:29``, ``1-00:00:00``."""
    seconds = max(0, seconds)
    days, rest = divmod(seconds, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    text = f"{hours:02d}:{minutes:02d}:{secs:02d}"
    return f"{days}-{text}" if days else text


def instant(ms: int | None, missing: str = "N/A") -> str:
    """``2026-11-29T19:40:00`` in local time; ``missing`` for an unknown instant."""
    if ms is None:
        return missing
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(ms / 1000))


def memory(mb: int, units: str | None = None) -> str:
    """Megabytes as Slurm prints them: ``8000M``, ``64G``, ``2T``; ``units`` forces one."""
    if units is not None:
        scale = {"K": 1 / 1024, "M": 1, "G": 1024, "T": 1024**2}[units]
        value = mb / scale
        return f"{int(value)}{units}" if value == int(value) else f"{value:.2f}{units}"
    for suffix, scale in (("T", 1024**2), ("G", 1024)):
        if mb and mb % scale == 0:
            return f"{mb // scale}{suffix}"
    return f"{mb}M"


def ranges(values: Iterable[int]) -> str:
    """``0,2,3,4,7`` -> ``0,2-4,7``: array task ids as ``squeue`` collapses them."""
    out: list[str] = []
    run: list[int] = []
    for value in sorted(set(values)):
        if run and value == run[-1] + 1:
            run.append(value)
            continue
        if run:
            out.append(str(run[0]) if len(run) == 1 else f"{run[0]}-{run[-1]}")
        run = [value]
    if run:
        out.append(str(run[0]) if len(run) == 1 else f"{run[0]}-{run[-1]}")
    return ",".join(out)


def width(digits: str) -> int | None:
    """The field width ``digits`` asks for (empty: 0, as wide as the value), or None when it
    is not ASCII digits (``str.isdigit`` also takes ``²``, which ``int`` refuses) or is over
    ``MAX_WIDTH``."""
    if not digits:
        return 0
    if not (digits.isascii() and digits.isdigit()) or len(digits) > len(str(MAX_WIDTH)):
        return None
    size = int(digits)
    return size if size <= MAX_WIDTH else None


@dataclass(frozen=True, slots=True)
class Spec:
    """One field of an output format: ``key`` (a ``%`` letter or a ``-O`` name, as the
    command defines them), its width (0: as wide as the value), right-justified or not, and
    the text printed after it."""

    key: str
    width: int = 0
    right: bool = False
    suffix: str = ""


def parse_percent(text: str, keys: str) -> tuple[str, list[Spec], list[str]]:
    """An ``-o`` format: the text before the first field, the fields, and the field letters
    not in ``keys`` (Slurm names them in an error and skips them)."""
    prefix, _, rest = text.partition("%")
    if not _:
        return text, [], []
    specs: list[Spec] = []
    bad: list[str] = []
    for i, chunk in enumerate(rest.split("%")):
        if i and not chunk:
            # "%%" would be a literal percent: rare enough to print as Slurm does, nothing.
            continue
        pos = 0
        right = False
        if pos < len(chunk) and chunk[pos] == ".":
            right, pos = True, pos + 1
        elif pos < len(chunk) and chunk[pos] == "-":
            pos += 1
        start = pos
        while pos < len(chunk) and chunk[pos] in "0123456789":
            pos += 1
        size = width(chunk[start:pos])
        if pos >= len(chunk):
            continue
        key, suffix = chunk[pos], chunk[pos + 1 :]
        if key not in keys or size is None:
            bad.append(key if size is not None else f"%{chunk[: pos + 1]} (width over {MAX_WIDTH})")
            if specs:
                last = specs[-1]
                specs[-1] = Spec(last.key, last.width, last.right, last.suffix + suffix)
            else:
                prefix += suffix
            continue
        specs.append(Spec(key, size, right, suffix))
    return prefix, specs, bad


def parse_long(
    text: str, names: Iterable[str], default_width: int = 20
) -> tuple[list[Spec], list[str]]:
    """A ``-O`` list: the fields (``key`` is the canonical name from ``names``, matched without
    regard to case) and the names not known (Slurm names them in an error and skips them)."""
    canonical = {name.lower(): name for name in names}
    specs: list[Spec] = []
    bad: list[str] = []
    for item in text.split(","):
        if not item:
            continue
        name, colon, size = item.partition(":")
        key = canonical.get(name.strip().lower())
        if key is None:
            bad.append(name)
            continue
        if not colon:
            specs.append(Spec(key, default_width))
            continue
        right = size.startswith(".")
        size = size[1:] if right else size
        digits = len(size) - len(size.lstrip("0123456789"))
        wide = width(size[:digits])
        if wide is None:
            bad.append(f"{item} (width over {MAX_WIDTH})")
            continue
        specs.append(Spec(key, wide, right, size[digits:]))
    return specs, bad


def render(
    prefix: str, specs: list[Spec], values: list[str], whole: frozenset[str] = frozenset()
) -> str:
    """One line: each value fitted to its field; fields whose key is in ``whole`` (node
    lists, times) are padded but never shortened."""
    parts = [prefix]
    for spec, value in zip(specs, values, strict=True):
        parts.append(fit(value, spec.width, spec.right, spec.key not in whole))
        parts.append(spec.suffix)
    return "".join(parts)


def template(prefix: str, specs: list[Spec], whole: frozenset[str] = frozenset()) -> str:
    """``render`` as one ``%`` template, for listings of many lines: its i-th ``%s`` field is
    ``str()`` of the i-th value, cut (``.W``) and padded (``W``, ``-W``) in C as ``fit`` does.
    ``%`` formats several times faster than ``str.format``."""
    parts = [prefix.replace("%", "%%")]
    for spec in specs:
        if spec.width > 0:
            align = "" if spec.right else "-"
            cut = "" if spec.key in whole else f".{spec.width}"
            parts.append(f"%{align}{spec.width}{cut}s")
        else:
            parts.append("%s")
        parts.append(spec.suffix.replace("%", "%%"))
    return "".join(parts)
