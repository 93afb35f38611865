"""``sacct``: accounting of jobs, printed as Slurm 22.05 prints it.

Rows come from ``GET /v1/accounting`` (ended jobs) and ``GET /v1/jobs`` (pending and running
ones), one per job plus, for each job that started (not with ``-X``), a ``N.batch`` step row
and a row per step ``srun`` started in the allocation (``N.0``, ``N.1``, ...: the steps of
the job's last run, from its record once it ended, from ``GET /v1/steps`` while it runs).
A step row is named after the program it ran and shows its own nodes, CPUs, TRES, times,
state and exit code (the highest of its tasks). Steps of a run that ended are journaled with
its end, so they outlive a controller restart; those a job started before a restart while
it kept running are not known after it.
TotalCPU, UserCPU, SystemCPU and MaxRSS are what the agents measured when the tasks ended:
the batch row has the job's own tasks (MaxRSS: the largest of one task), the job row those
and its steps' together (MaxRSS empty, as Slurm leaves it); a run not measured shows
``00:00:00`` and no MaxRSS.
Without ``-j`` or ``-S``, only jobs active since midnight show; in such a window (``-S`` or
midnight) and without ``-s``, only jobs that became eligible, as Slurm: not one held, waiting
on a dependency or a begin time, an array's tasks held back by its limit, nor such a job
cancelled before it started. Without ``-a``, ``-u`` or ``-j``, only the caller's jobs (all
jobs for root). ``-l`` prints Slurm's long list of fields (``acctfields.LONG_FIELDS``).
Exit status: 0, or 1 for a bad option or field, or no controller. An unknown job prints the
header alone, rc 0, as Slurm does.
"""

from __future__ import annotations

import os
import sys
import time
from typing import Any

from phalanx.client.wirecall import (
    ApiError,
    ControllerUnreachable,
    QueryValue,
    WireCaller,
)
from phalanx.slurm.acctfields import FIELDS, LONG_FIELDS, VALUES, Row, cpu_time, rss
from phalanx.slurm.commandline import Usage, read_options
from phalanx.slurm.format import LONG_STATE, SHORT_STATE, fit, now_ms, sacct_cut

__all__ = ["DEFAULT_FIELDS", "FIELDS", "cpu_time", "main", "rss"]

Job = dict[str, Any]

DEFAULT_FIELDS = "JobID,JobName,Partition,Account,AllocCPUS,State,ExitCode"
BRIEF_FIELDS = "JobID,State,ExitCode"

_CANONICAL = {name.lower(): name for name in FIELDS}

# Pending for these, a job has not become eligible yet (Slurm: no EligibleTime).
NOT_ELIGIBLE = frozenset(
    {
        "BeginTime",
        "Dependency",
        "DependencyNeverSatisfied",
        "JobArrayTaskLimit",
        "JobHeldAdmin",
        "JobHeldUser",
    }
)

SHORT = "abDE:hj:lLM:nN:o:pPs:S:Tu:vVX"
LONG = [
    "allusers",
    "allocations",
    "brief",
    "delimiter=",
    "duplicates",
    "endtime=",
    "format=",
    "help",
    "jobs=",
    "long",
    "name=",
    "noconvert",
    "noheader",
    "parsable",
    "parsable2",
    "starttime=",
    "state=",
    "truncate",
    "units=",
    "usage",
    "user=",
    "verbose",
    "version",
]


class _Options:
    def __init__(self) -> None:
        self.fields = DEFAULT_FIELDS
        self.header = True
        self.delimiter: str | None = None
        self.trailing = False
        self.allocations = False
        self.all_users = False
        self.users: set[str] | None = None
        self.jobs: list[tuple[int, int | None]] | None = None
        self.names: set[str] | None = None
        self.states: set[str] | None = None
        self.since: int | None = None
        self.until: int | None = None
        self.units: str | None = None


def _split(value: str) -> list[str]:
    return [v.strip() for v in value.split(",") if v.strip()]


def _parse(argv: list[str], now: int) -> _Options:
    pairs, rest = read_options("sacct", argv, SHORT, LONG)
    if rest:
        raise Usage(f"sacct: error: Unknown arguments: {' '.join(rest)}")
    opts = _Options()
    formats: list[str] = []
    for key, value in pairs:
        if key in ("-o", "--format"):
            formats.append(value)
        elif key in ("-b", "--brief"):
            opts.fields = BRIEF_FIELDS
        elif key in ("-l", "--long"):
            opts.fields = LONG_FIELDS
        elif key in ("-n", "--noheader"):
            opts.header = False
        elif key in ("-P", "--parsable2"):
            opts.delimiter = opts.delimiter or "|"
        elif key in ("-p", "--parsable"):
            opts.delimiter = opts.delimiter or "|"
            opts.trailing = True
        elif key == "--delimiter":
            opts.delimiter = value
        elif key in ("-X", "--allocations"):
            opts.allocations = True
        elif key in ("-a", "--allusers"):
            opts.all_users = True
        elif key in ("-u", "--user"):
            opts.users = (opts.users or set()) | set(_split(value))
        elif key in ("-j", "--jobs"):
            opts.jobs = (opts.jobs or []) + _job_ids(value)
        elif key == "--name":
            opts.names = (opts.names or set()) | set(_split(value))
        elif key in ("-s", "--state"):
            opts.states = (opts.states or set()) | _states(value)
        elif key in ("-S", "--starttime"):
            opts.since = parse_time(value, now)
        elif key in ("-E", "--endtime"):
            opts.until = parse_time(value, now)
        elif key == "--units":
            unit = value.strip().upper()[:1]
            if unit not in ("K", "M", "G", "T"):
                raise Usage(f"sacct: error: Invalid --units specification: {value}")
            opts.units = unit
        elif key in ("--help", "--usage"):
            raise Usage("Usage: sacct [options]\n\tUse --help for help")
        elif key in ("-V", "--version"):
            raise Usage("slurm 22.05.8 (phalanx)")
        # Accepted and ignored: -D, -L, -M, -N, -T, -v, --noconvert.
    if formats:
        opts.fields = ",".join(formats)
    return opts


def _job_ids(value: str) -> list[tuple[int, int | None]]:
    out: list[tuple[int, int | None]] = []
    for item in _split(value):
        job = item.split(".", 1)[0]
        base, _, task = job.partition("_")
        if not base.isdigit() or (task and not task.isdigit()):
            raise Usage(f"sacct: error: Invalid job id: {item}")
        out.append((int(base), int(task) if task else None))
    return out


def _states(value: str) -> set[str]:
    out: set[str] = set()
    for item in _split(value):
        name = item.upper()
        if name in LONG_STATE:
            out.add(LONG_STATE[name])
        elif name in SHORT_STATE:
            out.add(name)
        else:
            raise Usage(f"sacct: error: Invalid state: {item}")
    return out


def parse_time(text: str, now: int) -> int:
    """``-S``/``-E``: ``2026-11-29[THH:MM[:SS]]``, ``HH:MM[:SS]`` (today), ``now[-N[unit]]``,
    ``today``/``midnight``, or digits (ms since the epoch). Milliseconds since the epoch."""
    value = text.strip()
    lower = value.lower()
    if value.isdigit() and len(value) > 8:
        return int(value)
    if lower in ("today", "midnight"):
        return _midnight(now)
    if lower.startswith("now"):
        rest = lower[3:]
        if not rest:
            return now
        sign = -1 if rest[0] == "-" else 1
        digits = rest[1:].rstrip("abcdefghijklmnopqrstuvwxyz")
        unit = rest[1 + len(digits) :]
        scale = {"": 1, "s": 1, "seconds": 1, "minutes": 60, "hours": 3600, "days": 86400}
        scale.update({"weeks": 7 * 86400, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400})
        scale.update({"minute": 60, "min": 60, "hour": 3600, "day": 86400, "week": 7 * 86400})
        if digits.isdigit() and rest[0] in "+-" and unit in scale:
            return now + sign * int(digits) * scale[unit] * 1000
    for pattern in ("%Y-%m-%dT%H:%M:%S", "%Y-%m-%dT%H:%M", "%Y-%m-%d"):
        try:
            return int(time.mktime(time.strptime(value, pattern)) * 1000)
        except ValueError:
            pass
    for pattern in ("%H:%M:%S", "%H:%M"):
        try:
            moment = time.strptime(value, pattern)
        except ValueError:
            continue
        return _midnight(now) + (moment.tm_hour * 3600 + moment.tm_min * 60 + moment.tm_sec) * 1000
    raise Usage(f"sacct: error: Invalid time specification: {text}")


def _midnight(now: int) -> int:
    day = time.localtime(now / 1000)
    return int(time.mktime((day.tm_year, day.tm_mon, day.tm_mday, 0, 0, 0, 0, 0, -1)) * 1000)


def _fields(text: str) -> list[tuple[str, int]]:
    """``JobID,state%20`` -> ``[("JobID", -12), ("State", 20)]``; unknown names raise."""
    out: list[tuple[str, int]] = []
    for item in _split(text):
        name, _, width = item.partition("%")
        canonical = _CANONICAL.get(name.lower())
        if canonical is None:
            raise Usage(f'sacct: error: Invalid field requested: "{name}"')
        default = FIELDS[canonical]
        if width.isdigit():
            size = int(width)
            out.append((canonical, -size if default < 0 else size))
        else:
            out.append((canonical, default))
    return out


# ------------------------------------------------------------------------------ data
def _fetch(opts: _Options, now: int) -> list[Job]:
    caller = WireCaller()
    users = _users(opts)
    query: dict[str, QueryValue] = {}
    if opts.jobs is not None:
        query["ids"] = ",".join(str(base) for base, _ in opts.jobs)
    if users is not None and len(users) == 1:
        query["user"] = next(iter(users))
    since = opts.since
    if since is None and opts.jobs is None:
        since = _midnight(now)
    ended = _get(caller, "/v1/accounting", dict(query, since=since, until=opts.until))
    active = _get(caller, "/v1/jobs", query)["jobs"]
    seen: dict[int, Job] = {int(j["job_id"]): j for j in active}
    for job in ended:
        seen.setdefault(int(job["job_id"]), job)
    out = []
    for job in seen.values():
        if users is not None and job["user"] not in users:
            continue
        if opts.jobs is not None and not _wanted(job, opts.jobs):
            continue
        if opts.names is not None and job["name"] not in opts.names:
            continue
        if opts.states is not None and job["state"] not in opts.states:
            continue
        if opts.until is not None and job["submit"] > opts.until:
            continue
        if since is not None and opts.states is None and not _eligible(job):
            continue
        out.append(job)
    out.sort(key=lambda j: int(j["job_id"]))
    if not opts.allocations:
        _running_steps(caller, out, opts.jobs is not None)
    return out


def _eligible(job: Job) -> bool:
    """Whether ``job`` has become eligible to run: in a time window (``-S``, or the default
    since midnight) and without ``-s``, Slurm lists only those (``time_eligible`` set). The
    record of an ended job keeps no eligible time: one that never started counts as never
    eligible (most often held or waiting on a dependency when it was cancelled)."""
    if job.get("start") is not None:
        return True
    return job["state"] == "PENDING" and job.get("reason") not in NOT_ELIGIBLE


def _running_steps(caller: WireCaller, jobs: list[Job], listed: bool) -> None:
    """The live steps of the running jobs among ``jobs``, as their ``steps`` (an ended
    job's record has its own). ``listed``: ask for these jobs only, not all running ones."""
    running = {int(j["job_id"]): j for j in jobs if j["state"] in ("RUNNING", "SUSPENDED")}
    if not running:
        return
    query: dict[str, QueryValue] = {"ids": ",".join(map(str, running))} if listed else {}
    for job in running.values():
        job["steps"] = []
    for step in _get(caller, "/v1/steps", query)["steps"]:
        owner = running.get(int(step["job_id"]))
        if owner is not None:
            owner["steps"].append(step)


def _get(caller: WireCaller, path: str, query: dict[str, QueryValue]) -> Any:
    answer = caller.call_ok("GET", path, query=query)
    return answer


def _users(opts: _Options) -> set[str] | None:
    if opts.users is not None:
        return opts.users
    if opts.all_users or opts.jobs is not None or os.getuid() == 0:
        return None
    import pwd

    try:
        return {pwd.getpwuid(os.getuid()).pw_name}
    except KeyError:
        return {str(os.getuid())}


def _wanted(job: Job, wanted: list[tuple[int, int | None]]) -> bool:
    for base, task in wanted:
        if task is None and base in (job["job_id"], job.get("array_job_id")):
            return True
        if (
            task is not None
            and job.get("array_job_id") == base
            and job.get("array_task_id") == task
        ):
            return True
    return False


def rows(jobs: list[Job], allocations: bool) -> list[Row]:
    """Each job, then its ``batch`` step and its ``srun`` steps when it started (not with
    ``allocations``). The pending tasks of an array are one row, ``9_[2-9]`` (``9_[2-9%2]``
    with a task limit)."""
    out: list[Row] = []
    pending: dict[int, list[Job]] = {}
    for job in jobs:
        base = job.get("array_job_id")
        if base is not None and job["state"] == "PENDING":
            if base not in pending:
                pending[base] = []
                out.append(dict(job, step=None, _array=pending[base]))
            pending[base].append(job)
            continue
        out.append(dict(job, step=None))
        if not allocations and job.get("start") is not None and job.get("nodelist"):
            out.append(dict(job, step="batch"))
            out.extend(_step_row(job, step) for step in job.get("steps") or ())
    return out


def _step_row(job: Job, step: dict[str, Any]) -> Row:
    """A ``StepInfo`` of ``job`` as a row: the job's fields, with the step's own where it
    has them."""
    return dict(
        job,
        step=str(step["step_id"]),
        name=step["name"],
        nodelist=step["nodelist"],
        nodes_requested=len(step["nodes"]),
        tasks=step["tasks"],
        cpus=step["cpus"],
        gpus=step["gpus"],
        mem_mb=step["mem_mb"],
        submit=step["start"],
        start=step["start"],
        end=step["end"],
        state=step["state"],
        exit_code=step["exit_code"],
        signal=step["signal"],
        usage=step.get("usage"),
        steps_usage=None,
    )


# ------------------------------------------------------------------------------ main
def render(opts: _Options, fields: list[tuple[str, int]], table: list[Row], now: int) -> str:
    lines: list[str] = []
    if opts.delimiter is not None:
        end = opts.delimiter if opts.trailing else ""
        if opts.header:
            lines.append(opts.delimiter.join(name for name, _ in fields) + end)
        for row in table:
            values = (VALUES[name](row, now, opts.units) for name, _ in fields)
            lines.append(opts.delimiter.join(values) + end)
    else:
        if opts.header:
            lines.append("".join(fit(n, abs(w), w > 0) + " " for n, w in fields))
            lines.append("".join("-" * abs(w) + " " for _, w in fields))
        for row in table:
            cells = (
                sacct_cut(VALUES[name](row, now, opts.units), abs(w), w > 0) + " "
                for name, w in fields
            )
            lines.append("".join(cells))
    return "".join(line + "\n" for line in lines)


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    now = now_ms()
    try:
        opts = _parse(args, now)
        fields = _fields(opts.fields)
    except Usage as exc:
        print(exc, file=sys.stderr)
        return exc.status
    try:
        jobs = _fetch(opts, now)
    except ControllerUnreachable as exc:
        print(f"sacct: error: Problem talking to the database: {exc}", file=sys.stderr)
        return 1
    except ApiError as exc:
        print(f"sacct: error: {exc}", file=sys.stderr)
        return 1
    sys.stdout.write(render(opts, fields, rows(jobs, opts.allocations), now))
    return 0


if __name__ == "__main__":
    sys.exit(main())
