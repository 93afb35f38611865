"""Trace readers: real cluster logs and generic files as ``TraceJob`` lists.

Every reader returns jobs in replay order (submit, then position in the file), submit times in
milliseconds with the first kept job at 0, and takes the same ``TraceOptions`` (``limit``,
``window``, ``load``, ``seed``; see ``options``). Where a trace has no time limits,
``estimates`` supplies them. ``read_trace`` picks the reader by name or from the file itself.
"""

from __future__ import annotations

import os
from collections.abc import Callable

from phalanx.errors import TraceError
from phalanx.sim.traces.estimates import estimate_limit, estimate_limits
from phalanx.sim.traces.generic import generic_format, read_generic
from phalanx.sim.traces.openb import openb_cluster, read_openb
from phalanx.sim.traces.options import NO_OPTIONS, TraceOptions
from phalanx.sim.traces.philly import read_philly
from phalanx.sim.traces.row import open_trace
from phalanx.sim.traces.swf import load_swf, read_swf
from phalanx.sim.workload import TraceJob

__all__ = [
    "FORMATS",
    "NO_OPTIONS",
    "TraceOptions",
    "estimate_limit",
    "estimate_limits",
    "guess_format",
    "load_swf",
    "openb_cluster",
    "read_generic",
    "read_openb",
    "read_philly",
    "read_swf",
    "read_trace",
]

FORMATS = ("philly", "openb", "swf", "csv", "jsonl")


_READERS: dict[str, Callable[[str, TraceOptions], list[TraceJob]]] = {
    "philly": read_philly,
    "openb": read_openb,
    "swf": read_swf,
}


def read_trace(
    path: str,
    fmt: str | None = None,
    options: TraceOptions = NO_OPTIONS,
) -> list[TraceJob]:
    """Read ``path`` as ``fmt`` (one of ``FORMATS``), or as ``guess_format`` says."""
    if not os.path.isfile(path):
        raise TraceError("no such trace file", source=path)
    fmt = guess_format(path) if fmt is None else fmt.lower()
    if fmt in ("csv", "jsonl"):
        return read_generic(path, options, fmt=fmt)
    reader = _READERS.get(fmt)
    if reader is not None:
        return reader(path, options)
    raise TraceError(
        f"unknown trace format {fmt!r}; valid formats: {', '.join(FORMATS)}",
        source=path,
        field="format",
    )


def guess_format(path: str) -> str:
    """The format of ``path``: from a CSV header (Philly, openb), else from the extension."""
    name = path.lower().removesuffix(".gz")
    if name.endswith(".swf"):
        return "swf"
    fmt = generic_format(path)
    if fmt == "csv":
        with open_trace(path) as handle:
            header = handle.readline().strip().replace(" ", "")
        if header.startswith("timestamp,duration,num_gpus"):
            return "philly"
        if header.startswith("name,cpu_milli"):
            return "openb"
    if fmt is None:
        raise TraceError(
            f"cannot tell the trace format; name one of: {', '.join(FORMATS)}",
            source=path,
            field="format",
        )
    return fmt
