"""``srun``: run parallel tasks, as Slurm 22.05 does, on a Phalanx controller.

Inside an allocation (``SLURM_JOB_ID`` set: a batch script, or a shell under ``salloc``),
``srun`` starts a job step over the allocation (``POST /v1/jobs/{id}/steps``) and waits for
it with the long poll. Outside one, it submits a job whose tasks run the command, and waits
for the job's end.

The tasks run on the nodes, not here; what they print reaches ``srun``'s own stdout and stderr
through files. Without ``-o``/``-e`` the step writes one file per task in a hidden directory
under the current directory, ``.phalanx-srun/<job>.<pid>.<n>/<task>.out`` (and ``.err``),
which ``srun`` follows every 50 ms, printing each complete line (``N: line`` with ``-l``;
partial lines too with ``-u``), and removes at the end. The directory must be visible to the
nodes, as the submit directory is on a Slurm cluster.

Standard input is not forwarded, with one exception: ``srun sh -s < script`` (or ``bash -s``)
with stdin not a terminal writes stdin to a file in that directory and runs ``sh FILE``.

Exit status, as Slurm: the highest exit code of the tasks; 128 + N when a task was killed by
signal N; 1 when the step or job could not start; 255 when the command line could not be read.
Ctrl-C or SIGTERM kills the step (``DELETE``) or cancels the job. SIGUSR1, SIGUSR2, SIGHUP
and SIGCONT are ignored: ``scancel --signal`` delivers them to the tasks through the
controller (Slurm's srun forwards them), and srun must not die of them.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import time

from phalanx.client.wirecall import ControllerUnreachable, WireCaller
from phalanx.slurm import UNREACHABLE
from phalanx.slurm.commandline import CommandLineError, Options, parse_args
from phalanx.slurm.jobtable import SRUN
from phalanx.slurm.options import to_request

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Any

__all__ = ["SRUN_OPTIONS", "main", "signal_name"]

PROG = "srun"
HIDDEN = ".phalanx-srun"
POLL_S = 0.05
SRUN_OPTIONS = SRUN
"""srun's options (``phalanx.slurm.jobtable``)."""
_ENDED = frozenset(
    {"COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "PREEMPTED", "NODE_FAIL", "OUT_OF_MEMORY"}
)
_FORWARDED = (signal.SIGUSR1, signal.SIGUSR2, signal.SIGHUP, signal.SIGCONT)
_SIGNAL_NAMES = {9: "Killed", 15: "Terminated", 6: "Aborted", 11: "Segmentation fault"}


def main(argv: Sequence[str] | None = None, caller: WireCaller | None = None) -> int:
    """Run ``srun`` with ``argv`` (default: ``sys.argv[1:]``); return its exit status."""
    try:
        return _srun(list(sys.argv[1:] if argv is None else argv), caller)
    except CommandLineError as exc:
        for line in exc.lines:
            print(line, file=sys.stderr)
        return exc.status
    except ControllerUnreachable:
        print(f"{PROG}: error: {UNREACHABLE}", file=sys.stderr)
        return 1


def signal_name(number: int) -> str:
    """What Slurm says of a task killed by signal ``number`` (``strsignal``)."""
    return _SIGNAL_NAMES.get(number) or f"Signal {number}"


def _srun(argv: list[str], caller: WireCaller | None) -> int:
    options, command = parse_args(argv, SRUN)
    if "help" in options or "usage" in options:
        print(f"Usage: {PROG} [OPTIONS(0)... [executable(0) [args(0)...]]]")
        return 0
    if "version" in options:
        print("slurm 22.05.8")
        return 0
    mpi = options.get("mpi")
    if mpi == "list":
        print("MPI plugin types are...\n\tnone")
        return 0
    if mpi is not None and mpi != "none":
        raise CommandLineError(
            [
                f"{PROG}: error: MPI type {mpi!r} is not supported here: the one type is none "
                "(tasks get SLURM_* variables, all OpenMPI's mpirun and torchrun need); "
                "--mpi=list shows it",
            ],
            1,
        )
    if not command:
        raise CommandLineError([f"{PROG}: fatal: No command given to execute."], 1)
    wire = caller or WireCaller()
    # --jobid names the allocation to run in, as SLURM_JOB_ID does (and over it).
    job = options.get("jobid") or os.environ.get("SLURM_JOB_ID")
    if job is not None and not job.isdecimal():
        raise CommandLineError([f"{PROG}: error: Invalid job id specified"], 1)
    with _Outputs(options, job or "new") as outputs:
        command = outputs.stdin_script(command)
        if job:
            return _step(wire, options, command, outputs, int(job))
        return _job(wire, options, command, outputs)


# ---------------------------------------------------------------------------- in an allocation
def _step(
    wire: WireCaller, options: Options, command: list[str], outputs: _Outputs, job_id: int
) -> int:
    body: dict[str, Any] = {
        "command": command,
        "environment": {**os.environ, "SLURM_JOB_ID": str(job_id), "SLURM_UMASK": _umask()},
        "workdir": os.getcwd(),
        **outputs.fields(),
    }
    for option, field in (("ntasks", "ntasks"), ("ntasks-per-node", "ntasks_per_node")):
        value = options.get(option)
        if value is not None:
            body[field] = _count(value, option)
    nodes = options.get("nodes")
    if nodes is not None:
        body["nodes"] = _count(nodes.partition("-")[0], "nodes")
    status, answer = wire.call("POST", f"/v1/jobs/{job_id}/steps", body=body)
    if status != 201:
        error = answer.get("error") if isinstance(answer, dict) else None
        reason = {
            409: "Job/step already completing or completed",
            403: "Access/permission denied",
            422: f"{error or 'Requested node configuration is not available'}",
        }.get(status, str(error or status))
        reason = f"Unable to create step for job {job_id}: {reason}"
        print(f"{PROG}: error: {reason}", file=sys.stderr)
        return 1
    step_id = int(answer["step_id"])
    if options.verbose:
        nodes_text = ",".join(answer.get("nodes", []))
        print(f"{PROG}: launching StepId={job_id}.{step_id} on {nodes_text}", file=sys.stderr)
    path = f"/v1/jobs/{job_id}/steps/{step_id}"
    final = _follow(outputs, lambda: _step_state(path), lambda: wire.call("DELETE", path))
    return _report(final, ",".join(final.get("nodes", [])))


def _step_state(path: str) -> dict[str, Any] | None:
    """The step's info once it has ended (one long poll), None while it runs."""
    _, info = WireCaller(timeout=40.0).call("GET", path, query={"wait": 20})
    if isinstance(info, dict) and info.get("state") not in ("RUNNING", "PENDING", None):
        return info
    return None


# ---------------------------------------------------------------------------- outside
def _job(wire: WireCaller, options: Options, command: list[str], outputs: _Outputs) -> int:
    request = to_request(options, SRUN, os.environ, os.getcwd())
    body = request.body
    body.update(command=command, **outputs.fields())
    body["environment"]["SLURM_UMASK"] = _umask()
    body.setdefault("name", os.path.basename(command[0]))
    status, answer = wire.call("POST", "/v1/jobs", body=body)
    if status != 201:
        error = answer.get("error") if isinstance(answer, dict) else None
        print(f"{PROG}: error: Unable to allocate resources: {error or status}", file=sys.stderr)
        return 1
    job_id = int(answer["job_ids"][0][0])
    said = [False]

    def state() -> dict[str, Any] | None:
        code, job = wire.call("GET", f"/v1/jobs/{job_id}")
        if code == 404:
            return {"state": "CANCELLED", "exit_code": 0, "signal": 9}
        if job.get("state") == "PENDING" and not said[0]:
            said[0] = True
            print(f"{PROG}: job {job_id} queued and waiting for resources", file=sys.stderr)
        if job.get("state") in _ENDED:
            return dict(job)
        time.sleep(0.2)
        return None

    final = _follow(outputs, state, lambda: wire.call("DELETE", f"/v1/jobs/{job_id}"))
    return _report(final, str(final.get("nodelist", "")))


# ---------------------------------------------------------------------------- waiting
def _follow(outputs: _Outputs, ended: Any, kill: Any) -> dict[str, Any]:
    """Print the tasks' output while ``ended()`` (which may block) says None; Ctrl-C or
    SIGTERM calls ``kill()`` once, then waits for the end as before."""
    import threading

    result: list[dict[str, Any]] = []
    failure: list[BaseException] = []

    def waiter() -> None:
        try:
            while not result:
                info = ended()
                if info is not None:
                    result.append(info)
        except BaseException as exc:  # handed to the main thread
            failure.append(exc)

    thread = threading.Thread(target=waiter, daemon=True)
    thread.start()
    killed: list[int] = []

    def on_signal(number: int, _frame: object) -> None:
        if not killed:
            killed.append(number)
            print(f"{PROG}: forcing job termination", file=sys.stderr)
            kill()

    previous = {s: signal.signal(s, on_signal) for s in (signal.SIGINT, signal.SIGTERM)}
    # scancel --signal reaches the tasks through the controller; srun (in the batch script's
    # process group, where it may be signalled too) must outlive it, as Slurm's forwards it.
    previous.update({s: signal.signal(s, signal.SIG_IGN) for s in _FORWARDED})
    try:
        while thread.is_alive():
            outputs.pump(final=False)
            thread.join(POLL_S)
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)
    if failure:
        raise failure[0]
    time.sleep(POLL_S)  # what the tasks wrote last, as the files may lag the state a little
    outputs.pump(final=True)
    return result[0]


def _report(final: dict[str, Any], nodes: str) -> int:
    code = int(final.get("exit_code") or 0)
    number = int(final.get("signal") or 0)
    state = final.get("state")
    if number:
        print(f"{PROG}: error: {nodes}: tasks: {signal_name(number)}", file=sys.stderr)
        return 128 + number
    if code:
        print(f"{PROG}: error: {nodes}: task: Exited with exit code {code}", file=sys.stderr)
        return code
    if state not in ("COMPLETED", None):
        reason = final.get("reason") or state
        print(f"{PROG}: error: {reason}", file=sys.stderr)
        return 1
    return 0


def _umask() -> str:
    """This process's umask as Slurm's srun passes it to the tasks (``SLURM_UMASK=0022``)."""
    mask = os.umask(0)
    os.umask(mask)
    return f"{mask:04o}"


def _count(text: str, option: str) -> int:
    if not text.strip().isdecimal() or int(text) < 1:
        raise CommandLineError([f'{PROG}: error: Invalid numeric value "{text}" for --{option}.'])
    return int(text)


# ---------------------------------------------------------------------------- output files
class _Outputs:
    """The tasks' output: the user's ``-o``/``-e`` patterns, or files that srun follows."""

    def __init__(self, options: Options, job: str) -> None:
        self.output = options.get("output")
        self.error = options.get("error")
        self.label = "label" in options
        self.unbuffered = "unbuffered" in options
        self.directory: str | None = None
        self.seen: dict[str, tuple[int, bytearray]] = {}
        if self.output is None:
            self.directory = _fresh_directory(os.path.join(os.getcwd(), HIDDEN), job)

    def __enter__(self) -> _Outputs:
        return self

    def __exit__(self, *exc: object) -> None:
        if self.directory is not None:
            import shutil

            shutil.rmtree(self.directory, ignore_errors=True)
            with contextlib.suppress(OSError):  # another srun's directory is still there
                os.rmdir(os.path.dirname(self.directory))

    def fields(self) -> dict[str, str]:
        """The step's or job's ``output`` and ``error``."""
        if self.directory is None:
            found = {"output": str(self.output)}
            if self.error is not None:
                found["error"] = self.error
            return found
        fields = {"output": os.path.join(self.directory, "%t.out")}
        fields["error"] = self.error or os.path.join(self.directory, "%t.err")
        return fields

    def stdin_script(self, command: list[str]) -> list[str]:
        """``sh -s`` fed by a file or pipe: run the script that stdin holds."""
        shells = ("sh", "bash", "/bin/sh", "/bin/bash", "/usr/bin/bash")
        if len(command) < 2 or command[0] not in shells or command[1] != "-s":
            return command
        if sys.stdin is None or sys.stdin.isatty():
            return command
        where = self.directory or _fresh_directory(os.path.join(os.getcwd(), HIDDEN), "stdin")
        if self.directory is None:
            self.directory = where
        path = os.path.join(where, "stdin.sh")
        with open(path, "wb") as script:
            script.write(sys.stdin.buffer.read())
        return [command[0], path, *command[2:]]

    def pump(self, *, final: bool) -> None:
        """Print what the task files gained since the last call: complete lines, or all of
        it with ``-u`` or at the end."""
        if self.directory is None or self.output is not None:
            return
        try:
            names = sorted(os.listdir(self.directory), key=_task_order)
        except OSError:
            return
        for name in names:
            stem, _, kind = name.partition(".")
            if kind not in ("out", "err") or not stem.isdecimal():
                continue
            self._read(name, int(stem), kind, final)

    def _read(self, name: str, task: int, kind: str, final: bool) -> None:
        offset, pending = self.seen.get(name, (0, bytearray()))
        try:
            with open(os.path.join(str(self.directory), name), "rb") as source:
                source.seek(offset)
                data = source.read()
        except OSError:
            return
        pending += data
        offset += len(data)
        cut = len(pending) if final or self.unbuffered else pending.rfind(b"\n") + 1
        ready, rest = bytes(pending[:cut]), bytearray(pending[cut:])
        self.seen[name] = (offset, rest)
        if not ready:
            return
        if self.label:
            lines = ready.splitlines(keepends=True)
            ready = b"".join(f"{task}: ".encode() + line for line in lines)
        stream = sys.stdout if kind == "out" else sys.stderr
        stream.flush()
        stream.buffer.write(ready)
        stream.buffer.flush()


def _task_order(name: str) -> tuple[int, str]:
    stem = name.partition(".")[0]
    return (int(stem) if stem.isdecimal() else -1, name)


def _fresh_directory(parent: str, job: str) -> str:
    """A directory of this srun alone (several may run at once in one job)."""
    for attempt in range(100):
        path = os.path.join(parent, f"{job}.{os.getpid()}.{attempt}")
        try:
            os.makedirs(parent, exist_ok=True)
            os.mkdir(path)
        except FileExistsError:
            continue
        except FileNotFoundError:
            continue  # another srun removed the empty parent meanwhile
        return path
    raise CommandLineError([f"{PROG}: error: cannot create a directory under {parent}"], 1)
