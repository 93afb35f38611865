"""``scancel``: cancel jobs, as Slurm 22.05 does, on a Phalanx controller.

``scancel ID...`` (``ID``: a job, a whole array ``N``, an array task ``N_M`` or tasks
``N_[1-3,5]``), or every job matching filters: ``-u USER``, ``-t/--state``, ``-n/--name``,
``-p/--partition``, ``-A/--account``, ``-q/--qos``; with ids, the filters narrow them.
``-s/--signal SIG`` sends the signal instead: to the steps (``-b`` the batch shell, ``-f``
both), as Slurm does.

As Slurm: silent on success; a job that does not exist or has ended is not an error
(``-v`` says so); status 1 for an id that is not one, no job named, or a refusal.
"""

from __future__ import annotations

import sys

from phalanx.client.wirecall import ControllerUnreachable, WireCaller
from phalanx.slurm import UNREACHABLE
from phalanx.slurm.commandline import (
    CommandLineError,
    clusters_reached,
    node_list,
    parse_args,
    unreachable_clusters,
)
from phalanx.slurm.querytables import SCANCEL

# typing and collections.abc cost milliseconds at every start of a shim: annotations only.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Any

__all__ = ["MAX_ARRAY_SIZE", "main", "parse_job_ids", "parse_signal"]

PROG = "scancel"
MAX_ARRAY_SIZE = 1001
"""Slurm's default MaxArraySize, as ``phalanx.domain.request.MAX_ARRAY_TASKS`` (not imported:
this command must start fast): array task ids are below it."""
TABLE = SCANCEL
"""scancel's options (``phalanx.slurm.querytables``)."""
_STATES = {
    "PD": "PENDING",
    "R": "RUNNING",
    "S": "SUSPENDED",
    "CG": "COMPLETING",
    "PENDING": "PENDING",
    "RUNNING": "RUNNING",
    "SUSPENDED": "SUSPENDED",
}
JobId = tuple[int, int | None]
"""A job id, and an array task index when the id names one task (``N_M``)."""


def main(argv: Sequence[str] | None = None, caller: WireCaller | None = None) -> int:
    """Run ``scancel`` with ``argv`` (default: ``sys.argv[1:]``); return its exit status."""
    try:
        return _scancel(list(sys.argv[1:] if argv is None else argv), caller)
    except CommandLineError as exc:
        for line in exc.lines:
            print(line, file=sys.stderr)
        return exc.status
    except ControllerUnreachable:
        print(f"{PROG}: error: {UNREACHABLE}", file=sys.stderr)
        return 1


def _scancel(argv: list[str], caller: WireCaller | None) -> int:
    options, words = parse_args(argv, SCANCEL)
    if "help" in options or "usage" in options:
        print(f"Usage: {PROG} [OPTIONS] [job_id[_array_id][.step_id]]")
        return 0
    if "version" in options:
        print("slurm 22.05.8")
        return 0
    signal_text = options.get("signal")
    number = parse_signal(signal_text) if signal_text is not None else None
    # Whom a signal reaches, as Slurm: the steps; -b the batch shell; -f both.
    target = "all" if "full" in options else "batch" if "batch" in options else "steps"
    clusters = options.get("clusters")
    if clusters is not None and not clusters_reached(clusters):
        raise unreachable_clusters(PROG, clusters)
    ids = parse_job_ids(words)
    filters = {k: v for k, v in options.values.items() if k in _FILTERS}
    if "nodelist" in filters:
        node_list(PROG, "nodelist", filters["nodelist"])  # refused before any job is asked for
    if "me" in options and "user" not in filters:
        filters["user"] = _me()
    if not ids and not filters:
        raise CommandLineError([f"{PROG}: error: No job identification provided"], 1)
    wire = caller or WireCaller()
    verbose = options.verbose > 0
    if ids and not filters:
        return _cancel_ids(wire, ids, verbose, number, target)
    targets = _matching(wire, ids, filters)
    status = 0
    for job_id in targets:
        status = max(status, _cancel(wire, job_id, str(job_id), verbose, number, target))
    return status


def parse_signal(text: str) -> int:
    """``-s/--signal``: a number, or a name with or without ``SIG`` (``USR2``, ``SIGTERM``)."""
    import signal

    value = text.strip().upper()
    if value.isdecimal() and 0 < int(value) < 65:
        return int(value)
    name = value if value.startswith("SIG") else f"SIG{value}"
    try:
        return int(signal.Signals[name])
    except KeyError:
        raise CommandLineError([f"{PROG}: error: Invalid job signal: {text}"], 1) from None


_FILTERS = frozenset(
    {"account", "jobname", "nodelist", "partition", "qos", "reservation", "state", "user", "wckey"}
)


def _me() -> str:
    import os
    import pwd

    try:
        return pwd.getpwuid(os.getuid()).pw_name
    except KeyError:
        return str(os.getuid())


def parse_job_ids(words: Sequence[str]) -> list[JobId]:
    """``N``, ``N_M``, ``N_[a-b,c]`` and ``N.step`` (the step is dropped: Phalanx cancels
    whole jobs); ``CommandLineError`` for anything else, before anything is cancelled."""
    found: list[JobId] = []
    for word in words:
        for part in _split_outside_brackets(word):
            found += _one_id(part.strip(), word)
    return found


def _split_outside_brackets(word: str) -> list[str]:
    parts, start, depth = [], 0, 0
    for i, ch in enumerate(word):
        depth += (ch == "[") - (ch == "]")
        if ch == "," and depth == 0:
            parts.append(word[start:i])
            start = i + 1
    parts.append(word[start:])
    return parts


def _one_id(text: str, word: str) -> list[JobId]:
    bad = CommandLineError([f"{PROG}: error: Invalid job id {word}"], 1)
    job_text, _, step = text.partition(".")
    base, under, task = job_text.partition("_")
    if not base.isdecimal() or (step and not step.isdecimal() and step not in ("batch", "extern")):
        raise bad
    if not under:
        return [(int(base), None)]
    if task.isdecimal():
        return [(int(base), int(task))]
    if not (task.startswith("[") and task.endswith("]")):
        raise bad
    out: list[JobId] = []
    for piece in task[1:-1].split("%")[0].split(","):
        lo, dash, hi = piece.partition("-")
        if not lo.isdecimal() or (dash and not hi.isdecimal()):
            raise bad
        # Slurm reads the list into a bitmap of MaxArraySize bits: a task id past it is an
        # invalid id (1_[1-99999999999] made a list of 10^11 ids here, tens of GB).
        if int(hi if dash else lo) >= MAX_ARRAY_SIZE:
            raise bad
        out += [(int(base), i) for i in range(int(lo), int(hi if dash else lo) + 1)]
    return out


def _cancel_ids(
    wire: WireCaller,
    ids: list[JobId],
    verbose: bool,
    number: int | None = None,
    target: str = "steps",
) -> int:
    status = 0
    members: dict[int, dict[int, int]] = {}
    for base, task in ids:
        if task is None:
            status = max(status, _cancel(wire, base, str(base), verbose, number, target))
            continue
        if base not in members:
            members[base] = _array_tasks(wire, base)
        job_id = members[base].get(task)
        label = f"{base}_{task}"
        if job_id is None:
            _say_missing(label, verbose)
        else:
            status = max(status, _cancel(wire, job_id, label, verbose, number, target))
    return status


def _array_tasks(wire: WireCaller, array_id: int) -> dict[int, int]:
    """Array task index -> its job id, for the array whose job id is ``array_id``."""
    code, answer = wire.call("GET", "/v1/jobs", query={"ids": str(array_id), "all": True})
    if code != 200:
        return {}
    return {
        int(j["array_task_id"]): int(j["job_id"])
        for j in answer.get("jobs", [])
        if j.get("array_job_id") == array_id and j.get("array_task_id") is not None
    }


def _matching(wire: WireCaller, ids: list[JobId], filters: dict[str, str]) -> list[int]:
    query: dict[str, str | int | bool | None] = {
        "user": filters.get("user"),
        "partition": filters.get("partition"),
    }
    state = filters.get("state")
    if state is not None:
        query["state"] = ",".join(_STATES.get(s.upper(), s.upper()) for s in state.split(","))
    if ids:
        query["ids"] = ",".join(str(base) for base, _ in ids)
    code, answer = wire.call("GET", "/v1/jobs", query=query)
    if code != 200:
        return []
    wanted_tasks = {(b, t) for b, t in ids if t is not None}
    whole = {b for b, t in ids if t is None}
    out = []
    for job in answer.get("jobs", []):
        if not _passes(job, filters):
            continue
        if ids and not _named(job, whole, wanted_tasks):
            continue
        out.append(int(job["job_id"]))
    return out


def _passes(job: dict[str, Any], filters: dict[str, str]) -> bool:
    if "reservation" in filters or "wckey" in filters:
        return False  # Phalanx jobs have neither
    for option, key in (("jobname", "name"), ("account", "account"), ("qos", "qos")):
        wanted = filters.get(option)
        if wanted is not None and job.get(key) not in wanted.split(","):
            return False
    nodes = filters.get("nodelist")
    if nodes is not None:
        from phalanx.domain.hostlist import expand

        return bool(set(expand(nodes)).intersection(expand(job.get("nodelist") or "")))
    return True


def _named(job: dict[str, Any], whole: set[int], tasks: set[tuple[int, int]]) -> bool:
    if job["job_id"] in whole or job.get("array_job_id") in whole:
        return True
    return (job.get("array_job_id"), job.get("array_task_id")) in tasks


def _cancel(
    wire: WireCaller,
    job_id: int,
    label: str,
    verbose: bool,
    number: int | None = None,
    target: str = "steps",
) -> int:
    """Cancel the job, or send it signal ``number`` (its batch script and steps)."""
    if number is not None:
        if verbose:
            print(f"{PROG}: Signal {number} to job {label}", file=sys.stderr)
        code, answer = wire.call(
            "POST", f"/v1/jobs/{job_id}/signal", body={"signal": number, "target": target}
        )
    else:
        if verbose:
            print(f"{PROG}: Terminating job {label}", file=sys.stderr)
        code, answer = wire.call("DELETE", f"/v1/jobs/{job_id}")
    if code == 404:
        _say_missing(label, verbose, announced=True)
        return 0
    if code == 403:
        print(
            f"{PROG}: error: Kill job error on job id {label}: Access/permission denied",
            file=sys.stderr,
        )
        return 1
    if code != 200:
        error = answer.get("error") if isinstance(answer, dict) else answer
        print(f"{PROG}: error: Kill job error on job id {label}: {error}", file=sys.stderr)
        return 1
    if verbose and not answer.get("cancelled", answer.get("changed")):
        print(
            f"{PROG}: error: Kill job error on job id {label}: "
            "Job/step already completing or completed",
            file=sys.stderr,
        )
    return 0


def _say_missing(label: str, verbose: bool, *, announced: bool = False) -> None:
    if not verbose:
        return
    if not announced:
        print(f"{PROG}: Terminating job {label}", file=sys.stderr)
    print(
        f"{PROG}: error: Kill job error on job id {label}: Invalid job id specified",
        file=sys.stderr,
    )
