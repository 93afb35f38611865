"""Slurm hostlist expressions: ``gpu[001-003,007],cpu1`` <-> a list of host names.

Contracts (matching ``scontrol show hostnames`` / ``scontrol show hostlist``):

* ``expand`` keeps order and duplicates, as Slurm does. Inside brackets each item is a number or
  a ``lo-hi`` range; the zero padding of ``lo`` sets the width of every number in that range
  (``[08-10]`` -> ``08 09 10``; ``[8-10]`` -> ``8 9 10``). Several bracket groups in one name
  expand as a cartesian product, leftmost group slowest: ``r[1-2]n[1-2]`` -> ``r1n1 r1n2 r2n1
  r2n2``. Text after a group is a suffix: ``gpu[1-2]-ib`` -> ``gpu1-ib gpu2-ib``.
* ``compress`` is the exact inverse: ``expand(compress(names)) == names`` for every list of valid
  names. Like Slurm's ``hostlist_ranged_string`` without a sort, it brackets runs of consecutive
  names that share a prefix, and joins numbers into a range only where they follow each other.
  Pass ``sort=True`` to first put names in Slurm's order (prefix, then number) and drop repeats.

Malformed input raises ``phalanx.errors.ConfigError``; a caller that knows the file and field
re-raises with them. Pure functions, no I/O.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterable

from phalanx.errors import ConfigError

__all__ = ["MAX_HOSTS", "compress", "expand"]

MAX_HOSTS = 1_000_000
"""Most names one expression may expand to: a typo like ``[1-100000000]`` fails, not hangs."""

# Characters that carry meaning in an expression, so they may not appear in a single name.
_RESERVED = re.compile(r"[\[\],\s]")
_NUMBER = re.compile(r"\d+")
_TRAILING_NUMBER = re.compile(r"^(.*?)(\d+)$", re.DOTALL)


def _split_top_level(expr: str) -> list[str]:
    """Split on commas outside brackets; reject unbalanced and nested brackets."""
    items: list[str] = []
    depth = 0
    start = 0
    for i, ch in enumerate(expr):
        if ch == "[":
            if depth:
                raise ConfigError(f"nested '[' at position {i} in hostlist {expr!r}")
            depth = 1
        elif ch == "]":
            if not depth:
                raise ConfigError(f"unbalanced ']' at position {i} in hostlist {expr!r}")
            depth = 0
        elif ch == "," and not depth:
            items.append(expr[start:i])
            start = i + 1
    if depth:
        raise ConfigError(f"unbalanced '[' (no closing ']') in hostlist {expr!r}")
    items.append(expr[start:])
    return items


def _expand_range_list(body: str, expr: str) -> list[str]:
    """``001-003,007`` -> ``["001", "002", "003", "007"]``."""
    if not body.strip():
        raise ConfigError(f"empty brackets '[]' in hostlist {expr!r}")
    out: list[str] = []
    for part in body.split(","):
        part = part.strip()
        lo_text, dash, hi_text = part.partition("-")
        if not _NUMBER.fullmatch(lo_text) or (dash and not _NUMBER.fullmatch(hi_text)):
            raise ConfigError(
                f"invalid range {part!r} in hostlist {expr!r}: expected N or LO-HI with digits"
            )
        lo = int(lo_text)
        hi = int(hi_text) if dash else lo
        if hi < lo:
            raise ConfigError(f"reversed range {part!r} in hostlist {expr!r}: {hi} < {lo}")
        if hi - lo + 1 > MAX_HOSTS:
            raise ConfigError(f"range {part!r} in hostlist {expr!r} exceeds {MAX_HOSTS} hosts")
        width = len(lo_text)
        out.extend(f"{n:0{width}d}" for n in range(lo, hi + 1))
    return out


def _expand_item(item: str, expr: str) -> list[str]:
    """One top-level item: literal text and bracket groups, as a cartesian product."""
    pieces: list[list[str]] = []
    rest = item
    while "[" in rest:
        head, _, tail = rest.partition("[")
        body, _, rest = tail.partition("]")
        pieces.append([head])
        pieces.append(_expand_range_list(body, expr))
    pieces.append([rest])
    size = 1
    for choices in pieces:
        size *= len(choices)
    if size > MAX_HOSTS:
        raise ConfigError(f"hostlist {expr!r} expands to more than {MAX_HOSTS} hosts")
    return ["".join(combo) for combo in itertools.product(*pieces)]


def expand(expr: str) -> list[str]:
    """All host names of a hostlist expression, in order, duplicates kept.

    An empty (or all-blank) expression gives ``[]``. Whitespace around items is ignored; an
    empty item (``a,,b``), an empty or reversed range, non-digits in brackets, unbalanced or
    nested brackets, whitespace inside a name, or more than ``MAX_HOSTS`` names raise
    ``ConfigError``.
    """
    if not expr.strip():
        return []
    names: list[str] = []
    for raw in _split_top_level(expr):
        item = raw.strip()
        if not item:
            raise ConfigError(f"empty host name in hostlist {expr!r}")
        if re.search(r"\s", item):
            raise ConfigError(f"whitespace inside host name {item!r} in hostlist {expr!r}")
        names.extend(_expand_item(item, expr))
        if len(names) > MAX_HOSTS:
            raise ConfigError(f"hostlist {expr!r} expands to more than {MAX_HOSTS} hosts")
    return names


def _split_name(name: str) -> tuple[str, str | None]:
    """``gpu007`` -> ``("gpu", "007")``; a name without trailing digits -> ``(name, None)``.

    A name that is all digits is kept literal: ``[7]`` alone is not a name users write.
    """
    m = _TRAILING_NUMBER.match(name)
    if m is None or not m.group(1):
        return name, None
    return m.group(1), m.group(2)


def _fits(value: int, text: str, width: int) -> bool:
    """Whether ``value`` printed with ``width`` (the width of a range's low end) is ``text``."""
    return f"{value:0{width}d}" == text


def _sort_key(name: str) -> tuple[str, int, str]:
    prefix, digits = _split_name(name)
    return (prefix, -1 if digits is None else int(digits), name)


class _Run:
    """Consecutive numbers ``lo..hi`` printed with the width of ``lo_text``."""

    __slots__ = ("hi", "lo", "lo_text")

    def __init__(self, lo_text: str, value: int) -> None:
        self.lo_text = lo_text
        self.lo = value
        self.hi = value

    def text(self) -> str:
        if self.hi == self.lo:
            return self.lo_text
        return f"{self.lo_text}-{self.hi:0{len(self.lo_text)}d}"


def compress(names: Iterable[str], *, sort: bool = False) -> str:
    """The shortest Slurm hostlist of ``names`` that ``expand`` turns back into ``names``.

    ``gpu001,gpu002,gpu003,gpu007`` -> ``gpu[001-003,007]``. Order is kept: a run of names
    that share a prefix becomes one bracket group, and numbers join a range only where each is
    one more than the last and prints with the range's zero padding (``n9,n10`` -> ``n[9-10]``,
    ``n1,n01`` -> ``n[1,01]``). With ``sort=True`` names are first deduplicated and ordered by
    prefix, then number. An empty iterable gives ``""``. A name that is empty or contains
    ``[``, ``]``, ``,`` or whitespace raises ``ConfigError``.
    """
    items = list(names)
    for name in items:
        if not name or _RESERVED.search(name):
            raise ConfigError(f"invalid host name {name!r}: empty, or contains '[', ']', ','")
    if sort:
        items = sorted(set(items), key=_sort_key)

    # A group is a prefix and its runs; a name without a number is a group with no runs.
    groups: list[tuple[str, list[_Run]]] = []
    for name in items:
        prefix, digits = _split_name(name)
        if digits is None:
            groups.append((name, []))
            continue
        value = int(digits)
        if groups and groups[-1][0] == prefix and groups[-1][1]:
            runs = groups[-1][1]
            last = runs[-1]
            if value == last.hi + 1 and _fits(value, digits, len(last.lo_text)):
                last.hi = value
            else:
                runs.append(_Run(digits, value))
        else:
            groups.append((prefix, [_Run(digits, value)]))

    parts: list[str] = []
    for prefix, runs in groups:
        if not runs:
            parts.append(prefix)
        elif len(runs) == 1 and runs[0].hi == runs[0].lo:
            # A single number stays unbracketed, as Slurm prints it (gpu007, not gpu[007]).
            parts.append(prefix + runs[0].lo_text)
        else:
            parts.append(f"{prefix}[{','.join(run.text() for run in runs)}]")
    return ",".join(parts)
