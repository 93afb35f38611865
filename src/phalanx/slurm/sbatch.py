"""``sbatch``: submit a batch script, as Slurm 22.05 does, to a Phalanx controller.

The script comes from a file (the words after it are its arguments), from standard input, or
from ``--wrap``. Options are taken from ``#SBATCH`` lines, then ``SBATCH_*`` variables, then
the command line, each over the one before. The job runs in the submit directory (``-D``
overrides) with the caller's environment (``--export``).

Exit statuses, as Slurm: 0 submitted; 1 the controller refused the job, or the script could
not be read; 255 the command line could not be read.
"""

from __future__ import annotations

import os
import sys
import time
import uuid

from phalanx.client.wirecall import ControllerUnreachable, Json, WireCaller
from phalanx.slurm import UNREACHABLE
from phalanx.slurm.commandline import CommandLineError, Options, parse_args
from phalanx.slurm.jobtable import SBATCH
from phalanx.slurm.options import to_request
from phalanx.slurm.script import command_for, directive_args, require_shebang, wrap_script

# typing and collections.abc cost milliseconds at every start of a shim: annotations only.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence
    from typing import Any

__all__ = ["ENVIRONMENT_OPTIONS", "SLURM_VERSION", "failure_lines", "main"]

PROG = "sbatch"
SLURM_VERSION = "slurm 22.05.8"
"""What ``--version`` says: the Slurm release whose behaviour these commands reproduce."""
ENVIRONMENT_OPTIONS = {
    "SBATCH_ACCOUNT": "account",
    "SBATCH_ARRAY_INX": "array",
    "SBATCH_CONSTRAINT": "constraint",
    "SBATCH_EXCLUSIVE": "exclusive",
    "SBATCH_GPUS": "gpus",
    "SBATCH_GRES": "gres",
    "SBATCH_JOB_NAME": "job-name",
    "SBATCH_MEM_PER_NODE": "mem",
    "SBATCH_NO_REQUEUE": "no-requeue",
    "SBATCH_OPEN_MODE": "open-mode",
    "SBATCH_PARTITION": "partition",
    "SBATCH_QOS": "qos",
    "SBATCH_REQUEUE": "requeue",
    "SBATCH_SIGNAL": "signal",
    "SBATCH_TIMELIMIT": "time",
    "SBATCH_WCKEY": "wckey",
}
"""``SBATCH_*`` input variables -> the option each stands for."""
# A rejected field of the request -> Slurm's reason for refusing the submission.
_REASONS = {
    "partition": "Invalid partition name specified",
    "qos": "Invalid qos specification",
    "account": "Invalid account or account/partition combination specified",
    "resources": "Requested node configuration is not available",
    "nodes": "Node count specification invalid",
    "array": "Invalid job array specification",
    "dependency": "Job dependency problem",
    "time": "Requested time limit is invalid (missing or exceeds some limit)",
    "signal": "Invalid --signal specification",
    "begin": "Invalid time specified",
    "switches": "Invalid --switches specification",
    "constraint": "Invalid feature specification",
    "gpu_model": "Requested node configuration is not available",
    # Slurm's ESLURM_ACCOUNTING_POLICY (domain.associations.SUBMIT_REFUSED)
    "limits": "Job violates accounting/QOS policy (job submit limit, user's size and/or time "
    "limits)",
}
_FINAL = frozenset(
    {"COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "PREEMPTED", "NODE_FAIL", "OUT_OF_MEMORY"}
)


def main(argv: Sequence[str] | None = None, caller: WireCaller | None = None) -> int:
    """Run ``sbatch`` with ``argv`` (default: ``sys.argv[1:]``); return its exit status."""
    try:
        return _sbatch(list(sys.argv[1:] if argv is None else argv), caller)
    except CommandLineError as exc:
        for line in exc.lines:
            print(line, file=sys.stderr)
        return exc.status


def _sbatch(argv: list[str], caller: WireCaller | None) -> int:
    environ = os.environ
    line, rest = parse_args(argv, SBATCH)
    if "help" in line or "usage" in line:
        print(f"Usage: {PROG} [OPTIONS(0)...] [ : [OPTIONS(N)...]] script(0) [args(0)...]")
        return 0
    if "version" in line:
        print(SLURM_VERSION)
        return 0
    text, name, args = _script(line, rest)
    options = Options()
    for words in directive_args(text):
        parse_args(words, SBATCH, options)
    options.update(_from_environment(environ))
    options.update(line)
    request = to_request(options, SBATCH, environ, os.getcwd())
    for option, value in request.unsupported.items():
        if options.verbose:
            shown = f"--{option}={value}" if value else f"--{option}"
            note = SBATCH.options[option].note
            print(f"{PROG}: ignoring {shown}: {note}", file=sys.stderr)
    test_only = "test-only" in options
    # A test does not run the script: nothing is written to the spool for it.
    command = ["true"] if test_only else command_for(text, name, args, environ)[0]
    body = request.body
    body["command"] = command
    body["batch"] = True  # the script runs once and holds the allocation; srun steps in it
    if "name" not in body:
        body["name"] = "wrap" if "wrap" in line else os.path.basename(name)
    try:
        wire = caller or WireCaller()
        if test_only:
            return _test_only(wire, body)
        status, answer = wire.call("POST", "/v1/jobs", body=body, idempotency_key=uuid.uuid4().hex)
        if status != 201:
            for message in failure_lines(status, answer, body, wire):
                print(message, file=sys.stderr)
            return 1
    except ControllerUnreachable:
        print(f"{PROG}: error: Batch job submission failed: {UNREACHABLE}", file=sys.stderr)
        return 1
    job_id = int(answer["job_ids"][0][0])
    print(job_id if "parsable" in options else f"Submitted batch job {job_id}", flush=True)
    if "wait" in options:
        return _wait(wire, job_id)
    return 0


def _test_only(wire: WireCaller, body: dict[str, Any]) -> int:
    """``--test-only``: when and where the job would start; nothing is submitted."""
    status, answer = wire.call("POST", "/v1/jobs/test", body=body)
    if status != 200:
        for message in failure_lines(status, answer, body, wire):
            print(message, file=sys.stderr)
        return 1
    from phalanx.domain.hostlist import compress  # only here: its import is not free

    start = time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(answer["start"] / 1000))
    nodes = compress(answer["nodes"])
    print(
        f"{PROG}: Job {answer['job_id']} to start at {start} using {answer['cpus']} processors"
        f" on nodes {nodes} in partition {answer['partition']}",
        file=sys.stderr,
    )
    return 0


def _script(line: Options, rest: list[str]) -> tuple[str, str, list[str]]:
    """The script's text, its name (``$0``) and its arguments."""
    wrap = line.get("wrap")
    if wrap is not None:
        if rest:
            raise CommandLineError(
                [f"{PROG}: error: Script arguments not permitted with --wrap option"], 1
            )
        return wrap_script(wrap), PROG, []
    if rest:
        path = rest[0]
        try:
            with open(path, encoding="utf-8", errors="surrogateescape") as source:
                text = source.read()
        except OSError:
            raise CommandLineError([f"{PROG}: error: Unable to open file {path}"], 1) from None
        require_shebang(text, PROG)
        return text, path, rest[1:]
    text = sys.stdin.read()
    require_shebang(text, PROG)
    return text, PROG, []


def _from_environment(environ: Mapping[str, str]) -> Options:
    found = Options()
    for variable, option in ENVIRONMENT_OPTIONS.items():
        value = environ.get(variable)
        if value is not None:
            found.set(option, "" if option in ("exclusive", "requeue", "no-requeue") else value)
    return found


def failure_lines(
    status: int, answer: Json, body: Mapping[str, Any], wire: WireCaller
) -> list[str]:
    """What Slurm prints when the controller refuses a submission."""
    error = answer.get("error") if isinstance(answer, dict) else None
    field = answer.get("field") if isinstance(answer, dict) else None
    message = str(error) if error else f"HTTP {status}"
    lines = []
    if status == 422 and isinstance(field, str):
        key = field.split(".")[0]
        reason = _REASONS.get(key, message)
        if key == "partition":
            lines.append(f"{PROG}: error: invalid partition specified: {body.get('partition')}")
        if key == "resources":
            lines += _resource_lines(body, wire)
        if key == "limits":  # Slurm names the limit, then the policy it violates
            lines.append(f"{PROG}: error: {message.removeprefix(f'field {field!r}: ')}")
    elif status == 403:
        reason = "Access/permission denied"
    elif status == 507:
        reason = "Slurm temporarily unable to accept job, sleeping and retrying"
    else:
        reason = message
    return [*lines, f"{PROG}: error: Batch job submission failed: {reason}"]


def _resource_lines(body: Mapping[str, Any], wire: WireCaller) -> list[str]:
    """Slurm's first line for a request no node could hold: memory, then CPUs."""
    status, nodes = wire.call("GET", "/v1/nodes")
    if status != 200 or not isinstance(nodes, list) or not nodes:
        return []
    mem_text = str(body.get("mem") or "0M")
    mem = int(mem_text[:-1]) if mem_text[:-1].isdecimal() else 0
    if mem > max(int(n.get("memory_mb", 0)) for n in nodes):
        return [f"{PROG}: error: Memory specification can not be satisfied"]
    cpus = int(body.get("cpus_per_task", 1)) * int(body.get("ntasks_per_node", 1))
    if cpus > max(int(n.get("cpus", 0)) for n in nodes):
        return [f"{PROG}: error: CPU count per node can not be satisfied"]
    return []


def _wait(wire: WireCaller, job_id: int) -> int:
    """``--wait``: poll until the job ends; its exit code is sbatch's."""
    delay = 0.1
    while True:
        status, job = wire.call("GET", f"/v1/jobs/{job_id}")
        if status == 200 and job.get("state") in _FINAL:
            code = int(job.get("exit_code") or 0)
            if job.get("state") != "COMPLETED" and code == 0:
                code = 1
            return code
        if status == 404:
            return 0
        time.sleep(delay)
        delay = min(delay * 2, 2.0)
