"""``phalanx job ID``: everything about one job as ``Key=Value`` pairs, like
``scontrol show job``.

StartTime is the expected start while the job is pending (``Unknown`` when the scheduler
has none); ExitCode is ``code:signal``.
"""

from __future__ import annotations

import argparse
import shlex
from collections.abc import Mapping
from typing import Any

from phalanx.cli.instant import format_instant
from phalanx.cli.remote import EXIT_FAILURE, caller, exit_status, fail
from phalanx.cli.table import format_count
from phalanx.client.wirecall import ApiError, ControllerUnreachable
from phalanx.domain.time import format_duration

__all__ = ["add_arguments", "describe", "run"]

_NULL = "(null)"
"""What scontrol prints for an empty value."""
_INDENT = "   "


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("job_id", metavar="ID", type=int, help="the job's id")


def run(args: argparse.Namespace) -> int:
    try:
        answer = caller().call_ok("GET", f"/v1/jobs/{args.job_id}")
    except ApiError as exc:
        if exc.status == 404:
            return fail("job", f"no job {args.job_id}", EXIT_FAILURE)
        return fail("job", str(exc), exit_status(exc))
    except ControllerUnreachable as exc:
        return fail("job", str(exc), exit_status(exc))
    print(describe(answer))
    return 0


def describe(job: Mapping[str, Any]) -> str:
    """A ``JobInfo`` (decoded JSON) as scontrol's lines: related pairs share a line."""
    pending = job["state"] == "PENDING"
    start = job.get("expected_start") if pending else job.get("start")
    identity = [("JobId", job["job_id"]), ("JobName", job["name"])]
    if job.get("array_job_id") is not None:
        identity += [("ArrayJobId", job["array_job_id"]), ("ArrayTaskId", job.get("array_task_id"))]
    lines = [
        identity,
        [("UserId", job["user"]), ("Account", job["account"])],
        [("Partition", job["partition"]), ("QOS", job["qos"])],
        [
            ("JobState", job["state"]),
            ("Reason", job["reason"] or "None"),
            ("Priority", format_count(job["priority"])),
        ],
        [
            ("SubmitTime", format_instant(job["submit"])),
            ("StartTime", format_instant(start)),
            ("EndTime", format_instant(job.get("end"))),
        ],
        [("TimeLimit", format_duration(job["time_limit_ms"]))],
        [
            ("NumNodes", job["nodes_requested"]),
            ("NumTasks", job["tasks"]),
            ("NumCPUs", job["cpus"]),
            ("Gpus", format_count(job["gpus"])),
        ],
        [("NodeList", job.get("nodelist"))],
        [
            ("ExitCode", f"{job.get('exit_code', 0)}:{job.get('signal', 0)}"),
            ("Restarts", job.get("restarts", 0)),
        ],
        [("Command", shlex.join(job.get("command") or []))],
        [("WorkDir", job.get("workdir"))],
    ]
    if job.get("comment"):
        lines.append([("Comment", job["comment"])])
    return "\n".join(
        ("" if i == 0 else _INDENT) + " ".join(f"{key}={_text(value)}" for key, value in pairs)
        for i, pairs in enumerate(lines)
    )


def _text(value: object) -> str:
    if value is None or value == "":
        return _NULL
    return str(value)
