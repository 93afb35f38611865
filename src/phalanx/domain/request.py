"""Slurm's option syntax for job requests: arrays, dependencies, signals, memory, node counts.

Pure parsers shared by the REST API and the Slurm-compatible commands; each raises
``SpecError`` naming the option it could not read.
"""

from __future__ import annotations

import math
import re

from phalanx.domain.jobspec import SIGNALS, ArraySpec, Dependency, DepKind
from phalanx.domain.time import SECOND, Duration
from phalanx.errors import SpecError

__all__ = [
    "MAX_ARRAY_TASKS",
    "parse_array",
    "parse_dependency",
    "parse_memory_mb",
    "parse_nodes",
    "parse_signal",
]

MAX_ARRAY_TASKS = 1001
"""Slurm's default MaxArraySize: task ids 0-1000."""

_RANGE = re.compile(r"^(\d+)(?:-(\d+)(?::(\d+))?)?$")


def parse_array(text: str) -> ArraySpec:
    """``0-15``, ``1,3,5-9``, ``0-99:3``, with an optional ``%N`` throttle."""
    body, _, throttle_text = text.strip().partition("%")
    throttle: int | None = None
    if throttle_text:
        if not throttle_text.isdecimal() or int(throttle_text) < 1:
            raise SpecError(f"invalid array throttle {throttle_text!r}", field="array")
        throttle = int(throttle_text)
    ids: set[int] = set()
    for part in body.split(","):
        m = _RANGE.match(part.strip())
        if m is None:
            raise SpecError(f"invalid array index specification {text!r}", field="array")
        lo = int(m.group(1))
        hi = int(m.group(2)) if m.group(2) is not None else lo
        step = int(m.group(3)) if m.group(3) is not None else 1
        if hi < lo or step < 1 or hi >= MAX_ARRAY_TASKS:
            raise SpecError(f"invalid array index specification {text!r}", field="array")
        ids.update(range(lo, hi + 1, step))
    return ArraySpec(tuple(sorted(ids)), throttle)


def parse_dependency(text: str) -> tuple[Dependency, ...]:
    """``afterok:12:13,afterany:14`` or ``singleton`` (``?``, "any of", is not supported)."""
    if "?" in text:
        raise SpecError("'?' (any-of) dependencies are not supported", field="dependency")
    deps = []
    for part in text.split(","):
        kind_text, *ids = part.strip().split(":")
        try:
            kind = DepKind(kind_text.lower())
        except ValueError:
            raise SpecError(f"unknown dependency type {kind_text!r}", field="dependency") from None
        if kind is DepKind.SINGLETON:
            if ids:
                raise SpecError("singleton takes no job ids", field="dependency")
            deps.append(Dependency(kind))
            continue
        try:
            job_ids = tuple(int(i.split("+")[0].split("_")[0]) for i in ids)
        except ValueError:
            raise SpecError(f"invalid job id in {part!r}", field="dependency") from None
        if not job_ids:
            raise SpecError(f"{kind_text} needs a job id", field="dependency")
        deps.append(Dependency(kind, job_ids))
    return tuple(deps)


def parse_signal(text: str) -> tuple[int, Duration]:
    """``[B:][R:]SIG[@seconds]`` -> (signal number, lead time); Slurm's default lead is 60 s."""
    body = text.strip()
    while len(body) > 2 and body[1] == ":" and body[0] in "BR":
        body = body[2:]
    sig_text, _, lead_text = body.partition("@")
    sig_name = sig_text.upper().removeprefix("SIG")
    if sig_name.isdecimal():
        number = int(sig_name)
        if not 0 < number < 65:
            raise SpecError(f"invalid signal {sig_text!r}", field="signal")
    elif sig_name in SIGNALS:
        number = SIGNALS[sig_name]
    else:
        raise SpecError(f"invalid signal {sig_text!r}", field="signal")
    lead = 60
    if lead_text:
        if not lead_text.isdecimal() or int(lead_text) > 65535:
            raise SpecError(f"invalid signal time {lead_text!r}", field="signal")
        lead = int(lead_text)
    return number, lead * SECOND


_MEM = re.compile(r"^(\d+(?:\.\d+)?)([KMGT]?)B?$", re.IGNORECASE)
_UNIT_MB = {"K": 1 / 1024, "M": 1, "": 1, "G": 1024, "T": 1024 * 1024}


def parse_memory_mb(text: str, *, field: str = "mem") -> int:
    """Slurm's memory sizes: a number of megabytes, or with a K, M, G or T suffix."""
    m = _MEM.match(text.strip())
    if m is None:
        raise SpecError(f"invalid memory specification {text!r}", field=field)
    # Rounded up, as Slurm does: "1K" asks for some memory, not none.
    return math.ceil(float(m.group(1)) * _UNIT_MB[m.group(2).upper()])


def parse_nodes(text: str) -> tuple[int, int]:
    """``N`` or ``min-max``."""
    lo_text, _, hi_text = text.strip().partition("-")
    try:
        lo = int(lo_text)
        hi = int(hi_text) if hi_text else lo
    except ValueError:
        raise SpecError(f"invalid node count {text!r}", field="nodes") from None
    if lo < 1 or hi < lo:
        raise SpecError(f"invalid node count {text!r}", field="nodes")
    return lo, hi
