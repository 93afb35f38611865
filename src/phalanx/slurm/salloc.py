"""``salloc``: hold an allocation, as Slurm 22.05 does, and run a command in it.

The allocation is a batch job whose script only sleeps (it holds the nodes, GPUs and CPUs
asked for with sbatch's options); once it runs, the command (default: ``$SHELL``) runs here
with ``SLURM_JOB_ID``, ``SLURM_NODELIST``... set, so that ``srun`` in it starts steps over the
allocation. When the command ends the job is cancelled.

Exit status, as Slurm: the command's; 1 when the allocation could not be had; 255 when the
command line could not be read.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

from phalanx.client.wirecall import ControllerUnreachable, WireCaller
from phalanx.slurm import UNREACHABLE
from phalanx.slurm.commandline import CommandLineError, parse_args
from phalanx.slurm.jobtable import SALLOC
from phalanx.slurm.options import to_request

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Any

__all__ = ["HOLD", "main"]

PROG = "salloc"
HOLD = ["sleep", "2147483647"]
"""The allocation's batch script: it holds the allocation until cancelled."""
_ENDED = frozenset(
    {"COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "PREEMPTED", "NODE_FAIL", "OUT_OF_MEMORY"}
)


def main(argv: Sequence[str] | None = None, caller: WireCaller | None = None) -> int:
    """Run ``salloc`` with ``argv`` (default: ``sys.argv[1:]``); return its exit status."""
    try:
        return _salloc(list(sys.argv[1:] if argv is None else argv), caller)
    except CommandLineError as exc:
        for line in exc.lines:
            print(line, file=sys.stderr)
        return exc.status
    except ControllerUnreachable:
        print(f"{PROG}: error: Job submit/allocate failed: {UNREACHABLE}", file=sys.stderr)
        return 1


def _salloc(argv: list[str], caller: WireCaller | None) -> int:
    options, command = parse_args(argv, SALLOC)
    if "help" in options or "usage" in options:
        print(f"Usage: {PROG} [OPTIONS(0)...] [ : [OPTIONS(N)...]] [command(0) [args(0)...]]")
        return 0
    if "version" in options:
        print("slurm 22.05.8")
        return 0
    request = to_request(options, SALLOC, os.environ, os.getcwd())
    body = request.body
    body.update(command=HOLD, batch=True, output="/dev/null")
    body.setdefault("name", os.path.basename(command[0]) if command else "interactive")
    wire = caller or WireCaller()
    signal.signal(signal.SIGTERM, _interrupt)
    status, answer = wire.call("POST", "/v1/jobs", body=body)
    if status != 201:
        error = answer.get("error") if isinstance(answer, dict) else None
        print(f"{PROG}: error: Job submit/allocate failed: {error or status}", file=sys.stderr)
        return 1
    job_id = int(answer["job_ids"][0][0])
    print(f"{PROG}: Pending job allocation {job_id}", file=sys.stderr, flush=True)
    try:
        job = _wait_running(wire, job_id)
        if job is None:
            print(f"{PROG}: error: Job allocation {job_id} has been revoked.", file=sys.stderr)
            return 1
        print(f"{PROG}: Granted job allocation {job_id}", file=sys.stderr, flush=True)
        return _run(command, _environment(job, body, options.get("ntasks")))
    except KeyboardInterrupt:
        print(f"{PROG}: Job allocation {job_id} has been revoked.", file=sys.stderr)
        return 1
    finally:
        with _ignoring_interrupts():
            wire.call("DELETE", f"/v1/jobs/{job_id}")
            print(f"{PROG}: Relinquishing job allocation {job_id}", file=sys.stderr, flush=True)


def _wait_running(wire: WireCaller, job_id: int) -> dict[str, Any] | None:
    said = False
    delay = 0.05
    while True:
        status, job = wire.call("GET", f"/v1/jobs/{job_id}")
        state = job.get("state") if status == 200 and isinstance(job, dict) else None
        if state == "RUNNING":
            return dict(job)
        if status == 404 or state in _ENDED:
            return None
        if not said and delay >= 0.4:
            said = True
            print(f"{PROG}: job {job_id} queued and waiting for resources", file=sys.stderr)
        time.sleep(delay)
        delay = min(delay * 2, 1.0)


def _environment(job: dict[str, Any], body: dict[str, Any], ntasks: str | None) -> dict[str, str]:
    env = dict(os.environ)
    nodelist = str(job.get("nodelist", ""))
    count = str(job.get("nodes_requested") or len(nodelist.split(",")))
    job_id = str(job["job_id"])
    env.update(
        SLURM_JOB_ID=job_id,
        SLURM_JOBID=job_id,
        SLURM_JOB_NAME=str(job.get("name", "")),
        SLURM_JOB_NODELIST=nodelist,
        SLURM_NODELIST=nodelist,
        SLURM_NNODES=count,
        SLURM_JOB_NUM_NODES=count,
        SLURM_SUBMIT_DIR=os.getcwd(),
        SLURM_CPUS_PER_TASK=str(body.get("cpus_per_task", 1)),
        SLURM_TASKS_PER_NODE=str(body.get("ntasks_per_node", 1)),
    )
    if job.get("partition"):
        env["SLURM_JOB_PARTITION"] = str(job["partition"])
    if ntasks is not None:
        env["SLURM_NTASKS"] = env["SLURM_NPROCS"] = ntasks
    return env


def _run(command: list[str], env: dict[str, str]) -> int:
    argv = command or [os.environ.get("SHELL", "/bin/sh")]
    try:
        child = subprocess.Popen(argv, env=env)
    except OSError as exc:
        print(f"{PROG}: error: {argv[0]}: {exc.strerror}", file=sys.stderr)
        return 127 if isinstance(exc, FileNotFoundError) else 126
    while True:
        try:
            code = child.wait()
            break
        except KeyboardInterrupt:
            continue  # Ctrl-C reached the command too (same terminal); it decides
    return code if code >= 0 else 128 - code


def _interrupt(_number: int, _frame: object) -> None:
    raise KeyboardInterrupt


class _ignoring_interrupts:
    """Ctrl-C and SIGTERM wait while the allocation is given back."""

    def __enter__(self) -> None:
        self.saved = [signal.signal(s, signal.SIG_IGN) for s in (signal.SIGINT, signal.SIGTERM)]

    def __exit__(self, *exc: object) -> None:
        signal.signal(signal.SIGINT, self.saved[0])
        signal.signal(signal.SIGTERM, self.saved[1])
