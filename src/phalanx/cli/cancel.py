"""``phalanx cancel ID...``: cancel jobs, like ``scancel``; silent when all went well.

An array job's id cancels all its tasks. Every id is tried even when one fails, and the
status is 1 if any failed: a script cancelling a list wants the rest gone regardless.
"""

from __future__ import annotations

import argparse

from phalanx.cli.remote import EXIT_FAILURE, caller, exit_status, fail
from phalanx.client.wirecall import ApiError, ControllerUnreachable

__all__ = ["add_arguments", "run"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("job_ids", metavar="ID", type=int, nargs="+", help="jobs to cancel")


def run(args: argparse.Namespace) -> int:
    wire = caller()
    status = 0
    for job_id in args.job_ids:
        try:
            wire.call_ok("DELETE", f"/v1/jobs/{job_id}")
        except ControllerUnreachable as exc:
            # The next id would meet the same closed door.
            return fail("cancel", str(exc), exit_status(exc))
        except ApiError as exc:
            message = f"no job {job_id}" if exc.status == 404 else f"job {job_id}: {exc}"
            status = max(status, fail("cancel", message, EXIT_FAILURE))
    return status
