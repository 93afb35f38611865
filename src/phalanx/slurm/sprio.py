"""``sprio``: the weighted factors of each pending job's priority, as Slurm 22.05 prints them.

Reads ``GET /v1/priority`` (pending jobs the scheduler ranks: not held, not waiting on a
dependency or a begin time). Phalanx's ``priority/multifactor`` factors map onto Slurm's
columns: ``age``, ``fairshare``, ``jobsize``, ``partition`` and ``qos`` onto AGE, FAIRSHARE,
JOBSIZE, PARTITION and QOS; Phalanx's own ``short`` factor (short time limits first) onto
SITE, Slurm's column for a site's own factor; NICE is the job's nice value; ASSOC is 0 and
TRES empty (no such factors). Values are the weighted factors, rounded as Slurm rounds them.
Exit status: 0, or 1 for a bad option or no controller.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

from phalanx.client.wirecall import ApiError, ControllerUnreachable, WireCaller
from phalanx.slurm import UNREACHABLE
from phalanx.slurm.commandline import (
    CommandLineError,
    Usage,
    clusters_reached,
    parse_args,
    unreachable_clusters,
)
from phalanx.slurm.format import Spec, parse_percent, render
from phalanx.slurm.querytables import SPRIO

__all__ = ["DEFAULT_FORMAT", "LONG_FORMAT", "main", "value"]

Row = dict[str, Any]

DEFAULT_FORMAT = "%.15i %9r %.10Y %.10S %.10A %.10F %.10J %.10P %.10Q"
LONG_FORMAT = "%.15i %9r %.8u %.10Y %.10S %.10A %.10B %.10F %.10J %.10P %.10Q %.11N %.20T"

HEADERS = {
    "A": "AGE",
    "B": "ASSOC",
    "c": "CLUSTER",
    "F": "FAIRSHARE",
    "i": "JOBID",
    "J": "JOBSIZE",
    "N": "NICE",
    "P": "PARTITION",
    "Q": "QOS",
    "r": "PARTITION",
    "S": "SITE",
    "T": "TRES",
    "u": "USER",
    "Y": "PRIORITY",
}
# Slurm column -> Phalanx factor (weighted).
FACTORS = {"A": "age", "F": "fairshare", "J": "jobsize", "P": "partition", "Q": "qos", "S": "short"}


class _Options:
    def __init__(self) -> None:
        self.header = True
        self.long = False
        self.format: str | None = None
        self.jobs: set[int] | None = None
        self.users: set[str] | None = None
        self.partitions: set[str] | None = None


def _jobs(opts: _Options, text: str) -> None:
    if not text:
        return  # a bare -j: every job, as without it
    opts.jobs = set()
    for item in text.split(","):
        if not item.strip().isdecimal():
            raise Usage(f"sprio: error: Invalid job id: {item}")
        opts.jobs.add(int(item))


def _clusters(_: _Options, text: str) -> None:
    if not clusters_reached(text):
        raise unreachable_clusters("sprio", text)


def _usage(_: _Options, __: str) -> None:
    raise Usage("Usage: sprio [-j jid[s]] [-u user_name[s]] [-o format] [-p partitions]")


def _version(_: _Options, __: str) -> None:
    raise Usage("slurm 22.05.8")


_HANDLERS: dict[str, Callable[[_Options, str], None]] = {
    "noheader": lambda o, _: setattr(o, "header", False),
    "long": lambda o, _: setattr(o, "long", True),
    "format": lambda o, v: setattr(o, "format", v),
    "jobs": _jobs,
    "user": lambda o, v: setattr(o, "users", {u for u in v.split(",") if u}),
    "partition": lambda o, v: setattr(o, "partitions", {p for p in v.split(",") if p}),
    "clusters": _clusters,
    "help": _usage,
    "usage": _usage,
    "version": _version,
}
"""What each implemented option of ``querytables.SPRIO`` does to the options."""


def _parse(argv: list[str]) -> _Options:
    found, rest = parse_args(argv, SPRIO)
    if rest and "jobs" in found:
        # -j takes its list only attached (-j5); as Slurm, a bare -j takes the first word.
        found.set("jobs", rest.pop(0))
    if rest:
        raise Usage(f"sprio: error: Unrecognized option: {rest[0]}")
    opts = _Options()
    for name, text in found.pairs:
        handler = _HANDLERS.get(name)
        if handler is not None:
            handler(opts, text)
    return opts


def value(key: str, row: Row) -> str:
    """The text of column ``key`` (a ``-o`` letter) for one ``/v1/priority`` row."""
    factors: dict[str, float] = row.get("factors") or {}
    if key == "i":
        return str(row["job_id"])
    if key == "r":
        return str(row["partition"])
    if key == "u":
        return str(row["user"])
    if key == "c":
        return "phalanx"
    if key == "Y":
        return str(round(float(row["priority"])))
    if key in FACTORS:
        return str(round(float(factors.get(FACTORS[key], 0.0))))
    if key == "B":
        return "0"
    if key == "N":
        return str(round(-float(factors.get("nice", 0.0))))
    if key == "T":
        return ""
    raise KeyError(key)


def _selected(rows: list[Row], opts: _Options) -> list[Row]:
    out = []
    for row in rows:
        if opts.jobs is not None and row["job_id"] not in opts.jobs:
            continue
        if opts.users is not None and row["user"] not in opts.users:
            continue
        if opts.partitions is not None and row["partition"] not in opts.partitions:
            continue
        out.append(row)
    return sorted(out, key=lambda r: (int(r["job_id"]), str(r["partition"])))


def _specs(opts: _Options) -> tuple[str, list[Spec]]:
    if opts.format is not None:
        text = opts.format
    elif opts.long:
        text = LONG_FORMAT
    else:
        text = DEFAULT_FORMAT
        if opts.users is not None:
            text = text.replace("%9r ", "%9r %.8u ")
    prefix, specs, bad = parse_percent(text, "".join(HEADERS))
    for key in bad:
        print(f"sprio: error: Invalid job format specification: {key}", file=sys.stderr)
    return prefix, specs


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    try:
        opts = _parse(args)
    except CommandLineError as exc:
        print(exc, file=sys.stderr)
        return exc.status
    try:
        answer = WireCaller().call_ok("GET", "/v1/priority")
    except ControllerUnreachable:
        print(f"sprio: error: {UNREACHABLE}", file=sys.stderr)
        return 1
    except ApiError as exc:
        print(f"sprio: error: {exc}", file=sys.stderr)
        return 1
    rows = _selected(list(answer), opts)
    if not rows and (opts.jobs is not None or opts.users is not None):
        print("Unable to find jobs matching user/id(s) specified")
        return 0
    prefix, specs = _specs(opts)
    lines = []
    if opts.header:
        lines.append(render(prefix, specs, [HEADERS[s.key] for s in specs]))
    lines.extend(render(prefix, specs, [value(s.key, r) for s in specs]) for r in rows)
    if lines:
        sys.stdout.write("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
