"""``phalanx submit [options] -- CMD ARGS...``: submit one job, like ``sbatch --wrap``
without a shell, and print its id (an array job: its first task's id).

The caller's whole environment goes with the job (Slurm's ``--export=ALL``), and the job
runs in the current directory unless ``-D`` says otherwise.
"""

from __future__ import annotations

import argparse
import os
import re
from typing import Any

from phalanx.cli.instant import parse_instant
from phalanx.cli.remote import EXIT_FAILURE, EXIT_USAGE, caller, fail
from phalanx.client.wirecall import ApiError, ControllerUnreachable
from phalanx.errors import InputError

__all__ = ["add_arguments", "request", "run"]

# Options whose value goes to the JobRequest field of the same ``dest`` unchanged.
_PASSED = (
    "nodes",
    "ntasks_per_node",
    "gpus_per_task",
    "gpu_model",
    "cpus_per_task",
    "mem",
    "partition",
    "account",
    "qos",
    "time",
    "name",
    "output",
    "error",
    "array",
    "dependency",
    "signal",
    "comment",
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    shape = parser.add_argument_group("shape")
    shape.add_argument("-N", "--nodes", metavar="N[-M]", help="nodes (default 1)")
    shape.add_argument(
        "-n", "--ntasks-per-node", metavar="T", type=int, help="tasks per node (default 1)"
    )
    shape.add_argument("--gpus-per-task", metavar="G", type=int, help="GPUs per task (default 0)")
    shape.add_argument("--gpu-model", metavar="MODEL", help="only GPUs of this model")
    shape.add_argument(
        "-c", "--cpus-per-task", metavar="C", type=int, help="CPUs per task (default 1)"
    )
    shape.add_argument("--mem", metavar="SIZE", help="memory per node: 4G, 500M")
    shape.add_argument("--exclusive", action="store_true", help="whole nodes only")
    shape.add_argument(
        "-C",
        "--constraint",
        metavar="FEATURES",
        action="append",
        help="node features, all required: a&b or a,b; repeatable",
    )

    where = parser.add_argument_group("queue")
    where.add_argument("-p", "--partition", metavar="PART")
    where.add_argument("-A", "--account", metavar="ACCOUNT")
    where.add_argument("-q", "--qos", metavar="QOS")
    where.add_argument("-t", "--time", metavar="TIME", help="time limit: 30, 1:00:00, 2-12")
    where.add_argument("--array", metavar="SPEC", help="array tasks: 0-15%%4, 1,3,5")
    where.add_argument("-d", "--dependency", metavar="DEPS", help="afterok:12,afterany:13")
    where.add_argument(
        "--begin",
        metavar="TIME",
        help="start no earlier: ms since the epoch or ISO 8601 local time",
    )
    where.add_argument("-H", "--hold", action="store_true", help="hold until released")
    where.add_argument(
        "--no-requeue",
        action="store_false",
        dest="requeue",
        help="do not requeue after a node failure",
    )
    where.add_argument(
        "--signal", metavar="[B:]SIG[@SECS]", help="signal SECS before the time limit"
    )

    run_as = parser.add_argument_group("run")
    run_as.add_argument("-J", "--job-name", metavar="NAME", dest="name")
    run_as.add_argument("-o", "--output", metavar="PATTERN", help="stdout file (%%j: job id)")
    run_as.add_argument("-e", "--error", metavar="PATTERN", help="stderr file (default: stdout)")
    run_as.add_argument("-D", "--chdir", metavar="DIR", help="working directory (default: cwd)")
    run_as.add_argument("--comment", metavar="TEXT")
    parser.add_argument(
        "command",
        nargs=argparse.REMAINDER,
        metavar="-- CMD ARGS...",
        help="the command every task runs (no shell)",
    )


def run(args: argparse.Namespace) -> int:
    command = list(args.command)
    if command and command[0] == "--":
        command = command[1:]
    if not command:
        return fail(
            "submit", "no command: give it after --, as in: phalanx submit -- hostname", EXIT_USAGE
        )
    try:
        body = request(args, command)
    except InputError as exc:
        return fail("submit", str(exc), EXIT_USAGE)
    try:
        answer = caller().call_ok("POST", "/v1/jobs", body=body)
    except ControllerUnreachable as exc:
        return fail("submit", str(exc), EXIT_FAILURE)
    except ApiError as exc:
        # Anything the controller refused in a submission is the submitter's to fix.
        return fail("submit", str(exc), EXIT_USAGE if exc.status < 500 else EXIT_FAILURE)
    print(answer["job_ids"][0][0])
    return 0


def request(args: argparse.Namespace, command: list[str]) -> dict[str, Any]:
    """The ``JobRequest`` (as JSON) the options ask for; options not given are left to the
    controller's defaults, and the values are checked there, against the one wire schema."""
    body: dict[str, Any] = {
        "command": command,
        "workdir": os.path.abspath(args.chdir) if args.chdir else os.getcwd(),
        "environment": dict(os.environ),
    }
    for field in _PASSED:
        value = getattr(args, field)
        if value is not None:
            body[field] = value
    if args.constraint:
        body["constraint"] = [
            f.strip() for text in args.constraint for f in re.split(r"[&,]", text) if f.strip()
        ]
    if args.begin is not None:
        body["begin"] = parse_instant(args.begin, field="begin")
    if args.hold:
        body["hold"] = True
    if args.exclusive:
        body["exclusive"] = True
    if not args.requeue:
        body["requeue"] = False
    return body
