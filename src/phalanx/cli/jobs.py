"""``phalanx jobs``: the queue, like ``squeue``.

Columns: JOBID (``123``, or ``123_4`` for task 4 of array job 123), PARTITION, NAME, USER,
STATE, TIME (elapsed: from start to the end, or to now while running), NODES, GPUS and
NODELIST(REASON): the nodes of a started job, ``(Reason)`` for a pending one. With
``--why``, a last column WHY: a pending job's reason in its plugin's terms (a ClusterQueue's
quota), where it has one; squeue's columns stay as they are.
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from typing import Any

from phalanx.cli.instant import now_ms
from phalanx.cli.remote import caller, exit_status, fail
from phalanx.cli.table import format_count, render_table
from phalanx.client.wirecall import ApiError, ControllerUnreachable, QueryValue
from phalanx.domain.time import format_duration

__all__ = ["HEADER", "add_arguments", "display_id", "elapsed", "row", "run", "why"]

HEADER = (
    "JOBID",
    "PARTITION",
    "NAME",
    "USER",
    "STATE",
    "TIME",
    "NODES",
    "GPUS",
    "NODELIST(REASON)",
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--all",
        "-a",
        action="store_true",
        dest="all_jobs",
        help="finished jobs too (default: pending and running ones)",
    )
    parser.add_argument("-u", "--user", metavar="USER", help="only USER's jobs")
    parser.add_argument("-p", "--partition", metavar="PART", help="only jobs in PART")
    parser.add_argument(
        "-t",
        "--states",
        metavar="STATES",
        help="only jobs in these states, comma separated (PENDING,RUNNING)",
    )
    parser.add_argument(
        "--why",
        action="store_true",
        help="a last column WHY: why each pending job waits, in quota terms where known",
    )


def run(args: argparse.Namespace) -> int:
    query: dict[str, QueryValue] = {
        "all": bool(args.all_jobs),
        "user": args.user,
        "partition": args.partition,
        "state": args.states.upper() if args.states else None,
    }
    try:
        answer = caller().call_ok("GET", "/v1/jobs", query=query)
    except (ApiError, ControllerUnreachable) as exc:
        return fail("jobs", str(exc), exit_status(exc))
    now = now_ms()
    if getattr(args, "why", False):
        rows = ([*row(job, now), why(job)] for job in answer["jobs"])
        print(render_table((*HEADER, "WHY"), rows))
    else:
        print(render_table(HEADER, (row(job, now) for job in answer["jobs"])))
    return 0


def why(job: Mapping[str, Any]) -> str:
    """A pending job's reason message (empty for others, or where the reason says all)."""
    return str(job.get("reason_message") or "") if job["state"] == "PENDING" else ""


def row(job: Mapping[str, Any], now: int) -> list[str]:
    """One job (a ``JobInfo`` as decoded JSON) as table cells, its elapsed time up to
    ``now``."""
    pending = job["state"] == "PENDING"
    # A requeued job keeps its first start; while it waits again, Slurm shows no time.
    start = None if pending else job.get("start")
    where = f"({job.get('reason') or 'None'})" if pending else str(job.get("nodelist") or "")
    return [
        display_id(job),
        str(job["partition"]),
        str(job["name"]),
        str(job["user"]),
        str(job["state"]),
        elapsed(start, job.get("end"), now),
        str(job["nodes_requested"]),
        format_count(job["gpus"]),
        where,
    ]


def display_id(job: Mapping[str, Any]) -> str:
    """``123_4`` for task 4 of array job 123, else the job id."""
    if job.get("array_job_id") is not None and job.get("array_task_id") is not None:
        return f"{job['array_job_id']}_{job['array_task_id']}"
    return str(job["job_id"])


def elapsed(start: int | None, end: int | None, now: int) -> str:
    """Slurm's elapsed time: none before the start, then up to the end or ``now``."""
    if start is None:
        return format_duration(0)
    return format_duration(max(0, (now if end is None else end) - start))
