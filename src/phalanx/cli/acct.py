"""``phalanx acct``: finished jobs from the controller's accounting, like ``sacct``.

Columns: JOBID, NAME, USER, ACCOUNT, PARTITION, STATE, EXITCODE (``code:signal``), START,
END, ELAPSED, NODELIST.
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from typing import Any

from phalanx.cli.instant import format_instant, now_ms, parse_instant
from phalanx.cli.jobs import display_id, elapsed
from phalanx.cli.remote import EXIT_USAGE, caller, exit_status, fail
from phalanx.cli.table import render_table
from phalanx.client.wirecall import ApiError, ControllerUnreachable, QueryValue
from phalanx.errors import InputError

__all__ = ["HEADER", "add_arguments", "row", "run"]

HEADER = (
    "JOBID",
    "NAME",
    "USER",
    "ACCOUNT",
    "PARTITION",
    "STATE",
    "EXITCODE",
    "START",
    "END",
    "ELAPSED",
    "NODELIST",
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("-u", "--user", metavar="USER", help="only USER's jobs")
    parser.add_argument(
        "-j", "--jobs", metavar="IDS", type=_ids, help="only these jobs, comma separated"
    )
    parser.add_argument(
        "--since",
        "-S",
        metavar="TIME",
        help="jobs that ended at or after TIME: ISO 8601 local time or ms",
    )
    parser.add_argument(
        "--until",
        "-E",
        metavar="TIME",
        help="jobs that ended before TIME: ISO 8601 local time or ms",
    )


def run(args: argparse.Namespace) -> int:
    try:
        query: dict[str, QueryValue] = {
            "user": args.user,
            "ids": args.jobs,
            "since": None if args.since is None else parse_instant(args.since, field="since"),
            "until": None if args.until is None else parse_instant(args.until, field="until"),
        }
    except InputError as exc:
        return fail("acct", str(exc), EXIT_USAGE)
    try:
        answer = caller().call_ok("GET", "/v1/accounting", query=query)
    except (ApiError, ControllerUnreachable) as exc:
        return fail("acct", str(exc), exit_status(exc))
    now = now_ms()
    print(render_table(HEADER, (row(record, now) for record in answer)))
    return 0


def row(record: Mapping[str, Any], now: int) -> list[str]:
    """One ``AcctRecord`` (decoded JSON) as table cells."""
    return [
        display_id(record),
        str(record["name"]),
        str(record["user"]),
        str(record["account"]),
        str(record["partition"]),
        str(record["state"]),
        f"{record['exit_code']}:{record['signal']}",
        format_instant(record.get("start")),
        format_instant(record.get("end")),
        elapsed(record.get("start"), record.get("end"), now),
        str(record.get("nodelist") or "None"),
    ]


def _ids(text: str) -> str:
    """``1,2,3`` checked here, so a typo is a usage error rather than the controller's 422."""
    parts = [p.strip() for p in text.split(",") if p.strip()]
    if not parts or not all(p.isdecimal() for p in parts):
        raise argparse.ArgumentTypeError(f"{text!r} is not a list of job ids such as 12,13")
    return ",".join(parts)
