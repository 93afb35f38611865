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
Filters on what a job has (``-A``, ``-r``, ``-q``, ``-N``, ``-C``, ``-g``, ``--name``,
``--reason``, ``-i``/``-I`` counts, ``-k``/``-K`` time limits) all apply; ``-M`` naming only
other clusters lists nothing (Slurm asks its database for their jobs), ``-M all`` is no filter.
Every option is in ``querytables.SACCT``.
Without a controller, the ended jobs' records are read from the state store itself
(``acctdb``: $PHALANX_DB or the state directory's database), as Slurm's sacct reads slurmdbd.
Exit status: 0, or 1 for a bad option or field, or neither a controller nor a store. An
unknown job prints the header alone, rc 0, as Slurm does.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable
from typing import Any

from phalanx.client.wirecall import (
    ApiError,
    ControllerUnreachable,
    QueryValue,
    WireCaller,
)
from phalanx.slurm import acctdb, jobids
from phalanx.slurm.acctfields import FIELDS, LONG_FIELDS, VALUES, Row, cpu_time, rss
from phalanx.slurm.commandline import (
    CommandLineError,
    Usage,
    clusters_reached,
    node_list,
    parse_args,
)
from phalanx.slurm.format import (
    LONG_STATE,
    MAX_WIDTH,
    SHORT_STATE,
    expand,
    fit,
    now_ms,
    sacct_cut,
    user_ids,
)
from phalanx.slurm.format import width as field_width
from phalanx.slurm.querytables import SACCT

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


class _Options:
    def __init__(self) -> None:
        self.fields = DEFAULT_FIELDS
        self.formats: list[str] = []
        self.header = True
        self.delimiter: str | None = None
        self.trailing = False
        self.allocations = False
        self.all_users = False
        self.users: set[str] | None = None
        self.jobs: list[jobids.JobId] | None = None
        self.states: set[str] | None = None
        self.since: int | None = None
        self.until: int | None = None
        self.units: str | None = None
        self.now = 0
        self.tests: list[Callable[[Job], bool]] = []
        """What a job must pass to be listed, besides users, ids, states and times."""
        self.elsewhere = False
        """``-M`` named only clusters other than this one: no job is theirs here."""


def _split(value: str) -> list[str]:
    return [v.strip() for v in value.split(",") if v.strip()]


def _within(field: str, value: str, cast: Callable[[str], int]) -> Callable[[Job], bool]:
    """``-i 2``, ``-i 2-4``, ``-k 10``...: the job's ``field`` between the bounds."""
    lo_text, _, hi_text = value.partition("-")
    try:
        lo = cast(lo_text)
        hi = cast(hi_text) if hi_text else None
    except ValueError:
        raise Usage(f"sacct: error: Invalid range: {value}") from None

    def test(job: Job) -> bool:
        have = int(job.get(field) or 0)
        return lo <= have and (hi is None or have <= hi)

    return test


def _minutes_ms(text: str) -> int:
    """A Slurm time limit (``30``, ``1:00:00``, ``2-12``) in milliseconds."""
    days, dash, rest = text.strip().rpartition("-") if "-" in text else ("", "", text.strip())
    parts = [int(p) for p in rest.split(":")]  # ValueError for anything else
    if dash:
        hours, minutes, seconds = (*parts, 0, 0)[:3]
    elif len(parts) == 3:
        hours, minutes, seconds = parts
    else:
        hours, minutes, seconds = 0, parts[0], (parts[1] if len(parts) > 1 else 0)
    total = ((int(days or 0) * 24 + hours) * 60 + minutes) * 60 + seconds
    return total * 1000


def _one_of(field: str, value: str) -> Callable[[Job], bool]:
    wanted = set(_split(value))
    return lambda job: str(job.get(field)) in wanted


def _on_nodes(value: str) -> Callable[[Job], bool]:
    wanted = set(node_list("sacct", "nodelist", value))
    return lambda job: bool(wanted.intersection(expand(job.get("nodelist") or "")))


def _in_groups(value: str) -> Callable[[Job], bool]:
    groups = set(_split(value))

    def test(job: Job) -> bool:
        ids = user_ids(str(job["user"]))
        return ids is not None and (ids[2] in groups or str(ids[1]) in groups)

    return test


def _with_features(value: str) -> Callable[[Job], bool]:
    wanted = set(_split(value))
    return lambda job: bool(wanted.intersection(job.get("features") or ()))


def _clusters(opts: _Options, value: str) -> None:
    opts.elsewhere = not clusters_reached(value)


def _units(opts: _Options, value: str) -> None:
    unit = value.strip().upper()[:1]
    if unit not in ("K", "M", "G", "T"):
        raise Usage(f"sacct: error: Invalid --units specification: {value}")
    opts.units = unit


def _parsable(opts: _Options, trailing: bool) -> None:
    opts.delimiter = opts.delimiter or "|"
    opts.trailing = trailing


def _help_fields(_: _Options, __: str) -> None:
    names = list(FIELDS)
    rows = [names[i : i + 4] for i in range(0, len(names), 4)]
    raise Usage("\n".join("".join(f"{n:<20}" for n in row).rstrip() for row in rows), 0)


def _usage(_: _Options, __: str) -> None:
    raise Usage("Usage: sacct [options]\n\tUse --help for help")


def _version(_: _Options, __: str) -> None:
    raise Usage("slurm 22.05.8 (phalanx)")


def _test(make: Callable[[str], Callable[[Job], bool]]) -> Callable[[_Options, str], None]:
    return lambda opts, value: opts.tests.append(make(value))


_HANDLERS: dict[str, Callable[[_Options, str], None]] = {
    "format": lambda o, v: o.formats.append(v),
    "brief": lambda o, _: setattr(o, "fields", BRIEF_FIELDS),
    "long": lambda o, _: setattr(o, "fields", LONG_FIELDS),
    "noheader": lambda o, _: setattr(o, "header", False),
    "parsable2": lambda o, _: _parsable(o, False),
    "parsable": lambda o, _: _parsable(o, True),
    "delimiter": lambda o, v: setattr(o, "delimiter", v),
    "allocations": lambda o, _: setattr(o, "allocations", True),
    "allusers": lambda o, _: setattr(o, "all_users", True),
    "uid": lambda o, v: setattr(o, "users", (o.users or set()) | set(_split(v))),
    "jobs": lambda o, v: setattr(o, "jobs", (o.jobs or []) + jobids.parse(v, "sacct")),
    "state": lambda o, v: setattr(o, "states", (o.states or set()) | _states(v)),
    "starttime": lambda o, v: setattr(o, "since", parse_time(v, o.now)),
    "endtime": lambda o, v: setattr(o, "until", parse_time(v, o.now)),
    "units": _units,
    "clusters": _clusters,
    "name": _test(lambda v: _one_of("name", v)),
    "accounts": _test(lambda v: _one_of("account", v)),
    "partition": _test(lambda v: _one_of("partition", v)),
    "qos": _test(lambda v: _one_of("qos", v)),
    "reason": _test(lambda v: _one_of("reason", v)),
    "nodelist": _test(_on_nodes),
    "gid": _test(_in_groups),
    "constraints": _test(_with_features),
    "nnodes": _test(lambda v: _within("nodes_requested", v, int)),
    "ncpus": _test(lambda v: _within("cpus", v, int)),
    "timelimit-min": _test(lambda v: _within("time_limit_ms", v, _minutes_ms)),
    "timelimit-max": _test(lambda v: _within("time_limit_ms", "0-" + v, _minutes_ms)),
    "wckeys": _test(lambda _: lambda job: False),
    "helpformat": _help_fields,
    "help": _usage,
    "usage": _usage,
    "version": _version,
}
"""What each implemented option of ``querytables.SACCT`` does to the options."""


def _parse(argv: list[str], now: int) -> _Options:
    found, rest = parse_args(argv, SACCT)
    if rest:
        raise Usage(f"sacct: error: Unknown arguments: {' '.join(rest)}")
    opts = _Options()
    opts.now = now
    for name, value in found.pairs:
        handler = _HANDLERS.get(name)
        if handler is not None:
            handler(opts, value)
    if opts.formats:
        opts.fields = ",".join(opts.formats)
    return opts


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
    if value.isdecimal() and len(value) > 8:
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
        if digits.isdecimal() and rest[0] in "+-" and unit in scale:
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
        # Slurm reads the width with atoi: text that is no ASCII number gives the default.
        if width.isascii() and width.isdecimal():
            size = field_width(width)
            if size is None:
                raise Usage(f'sacct: error: Invalid field width: "{item}" (at most {MAX_WIDTH})')
            out.append((canonical, -size if default < 0 else size))
        else:
            out.append((canonical, default))
    return out


# ------------------------------------------------------------------------------ data
def _fetch(opts: _Options, now: int) -> list[Job]:
    if opts.elsewhere:
        return []  # Slurm asks the database for those clusters' jobs: none are here
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
    offline = False
    try:
        ended = _get(caller, "/v1/accounting", dict(query, since=since, until=opts.until))
        active = _get(caller, "/v1/jobs", query)["jobs"]
    except ControllerUnreachable as exc:
        # As Slurm's sacct reads slurmdbd: the ended jobs' records in the state store.
        try:
            user = query.get("user")
            ended = acctdb.ended_jobs(
                acctdb.store_url(),
                user=str(user) if user is not None else None,
                since=since,
                until=opts.until,
            )
        except acctdb.StoreUnreadable as why:
            raise ControllerUnreachable(exc.where, f"{exc.reason}; {why}") from None
        active, offline = [], True
    seen: dict[int, Job] = {int(j["job_id"]): j for j in active}
    for job in ended:
        seen.setdefault(int(job["job_id"]), job)
    out = []
    for job in seen.values():
        if users is not None and job["user"] not in users:
            continue
        if opts.jobs is not None and not jobids.matches(job, opts.jobs):
            continue
        if not all(test(job) for test in opts.tests):
            continue
        if opts.states is not None and job["state"] not in opts.states:
            continue
        if opts.until is not None and job["submit"] > opts.until:
            continue
        if since is not None and opts.states is None and not _eligible(job):
            continue
        out.append(job)
    out.sort(key=lambda j: int(j["job_id"]))
    if not opts.allocations and not offline:
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
    """Whose jobs: ``-u``'s users, else everyone's with ``-a``, ``-j`` or as root, else the
    caller's."""
    if opts.users is not None:
        return opts.users
    if opts.all_users or opts.jobs is not None or os.getuid() == 0:
        return None
    import pwd

    try:
        return {pwd.getpwuid(os.getuid()).pw_name}
    except KeyError:
        return {str(os.getuid())}


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
    except CommandLineError as exc:
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
