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
from typing import Any

from phalanx.client.wirecall import ApiError, ControllerUnreachable, WireCaller
from phalanx.slurm import UNREACHABLE
from phalanx.slurm.commandline import Usage, read_options
from phalanx.slurm.format import Spec, parse_percent, render

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

SHORT = "hj:lM:no:p:u:vVw"
LONG = [
    "help",
    "jobs=",
    "long",
    "noheader",
    "norm",
    "format=",
    "partition=",
    "user=",
    "usage",
    "verbose",
    "version",
    "weights",
]


class _Options:
    def __init__(self) -> None:
        self.header = True
        self.long = False
        self.format: str | None = None
        self.jobs: set[int] | None = None
        self.users: set[str] | None = None
        self.partitions: set[str] | None = None


def _parse(argv: list[str]) -> _Options:
    pairs, rest = read_options("sprio", argv, SHORT, LONG)
    if rest:
        raise Usage(f"sprio: error: Unrecognized option: {rest[0]}")
    opts = _Options()
    for key, val in pairs:
        if key in ("-h", "--noheader"):
            opts.header = False
        elif key in ("-l", "--long"):
            opts.long = True
        elif key in ("-o", "--format"):
            opts.format = val
        elif key in ("-j", "--jobs"):
            opts.jobs = set()
            for item in val.split(","):
                if not item.strip().isdigit():
                    raise Usage(f"sprio: error: Invalid job id: {item}")
                opts.jobs.add(int(item))
        elif key in ("-u", "--user"):
            opts.users = {u for u in val.split(",") if u}
        elif key in ("-p", "--partition"):
            opts.partitions = {p for p in val.split(",") if p}
        elif key in ("-n", "--norm", "-w", "--weights"):
            # Both need the configured weights, which the controller does not publish.
            raise Usage(f"sprio: error: {key} is not supported by Phalanx")
        elif key in ("--help", "--usage"):
            raise Usage("Usage: sprio [-j jid[s]] [-u user_name[s]] [-o format] [-p partitions]")
        elif key in ("-V", "--version"):
            raise Usage("slurm 22.05.8")
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
    except Usage as exc:
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
