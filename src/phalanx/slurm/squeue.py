"""``squeue``: the queue, printed as Slurm 22.05 prints it.

Reads ``GET /v1/jobs/table``: only the fields that the format, selection and sort read, as
rows, which keeps a listing of 10,000 jobs cheap to answer and decode. Jobs that ended show
only when asked for by state (``-t all``, ``-t CD``) and only for ``MIN_JOB_AGE_MS`` after
they end, as Slurm forgets them. Pending tasks of an array collapse into one ``123_[5-9%2]``
line unless ``-r``. ``--json``/``--yaml`` print the jobs it would list as Slurm's openapi
v0.0.38 ``jobs`` document (``phalanx.slurm.openapi``), by job id. ``-S`` re-sorts by ``-o``
letters; ``-w`` keeps jobs on those nodes; ``-i N`` lists again every N seconds; ``-L`` and
``-R`` match nothing (no licenses, no reservations). Every option is in
``querytables.SQUEUE``. Exit status: 0, or 1 for bad options, an unknown single ``-j`` id, an
unreachable ``-M`` cluster, or no controller.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable
from typing import Any

from phalanx.client.wirecall import ApiError, ControllerUnreachable, QueryValue, WireCaller
from phalanx.slurm import jobids
from phalanx.slurm.commandline import (
    CommandLineError,
    Usage,
    clusters_reached,
    node_list,
    parse_args,
    unreachable_clusters,
)
from phalanx.slurm.format import (
    LONG_STATE,
    MIN_JOB_AGE_MS,
    SHORT_STATE,
    Spec,
    expand,
    now_ms,
    parse_long,
    parse_percent,
    ranges,
    render,
    template,
)
from phalanx.slurm.querytables import SQUEUE
from phalanx.slurm.squeuefields import (
    FINAL,
    HEADERS,
    LONG_FIELDS,
    UNLIMITED_MS,
    cells,
    planned,
    value,
)

__all__ = [
    "DEFAULT_FORMAT",
    "FINAL",
    "HEADERS",
    "LONG_FIELDS",
    "UNLIMITED_MS",
    "cells",
    "main",
    "value",
]

Job = dict[str, Any]

DEFAULT_FORMAT = "%.18i %.9P %.8j %.8u %.2t %.10M %.6D %R"
LONG_FORMAT = "%.18i %.9P %.8j %.8u %.8T %.10M %.9l %.6D %R"
START_FORMAT = "%.18i %.9P %.8j %.8u %.2t %.19S %.6D %20Y %R"
# Node lists and times are printed whole even when wider than their field, as Slurm does.
WHOLE = frozenset("NRLlMY")
ACTIVE = frozenset({"PENDING", "RUNNING", "SUSPENDED", "COMPLETING", "REQUEUED"})
# Slurm's job_states order, by which "-t" sorts (pending first).
STATE_ORDER = {
    name: i
    for i, name in enumerate(
        (
            "PENDING",
            "RUNNING",
            "SUSPENDED",
            "COMPLETED",
            "CANCELLED",
            "FAILED",
            "TIMEOUT",
            "NODE_FAIL",
            "PREEMPTED",
            "BOOT_FAIL",
            "DEADLINE",
            "OUT_OF_MEMORY",
        )
    )
}


class _Options:
    def __init__(self) -> None:
        self.header = True
        self.array = False
        self.long = False
        self.start = False
        self.format: str | None = None
        self.long_format: str | None = None
        self.states: set[str] | None = None
        self.users: set[str] | None = None
        self.partitions: set[str] | None = None
        self.accounts: set[str] | None = None
        self.qos: set[str] | None = None
        self.names: set[str] | None = None
        self.nodes: set[str] | None = None
        self.jobs: list[jobids.JobId] | None = None
        self.sort: list[tuple[str, bool]] = []
        """``-S``: (``-o`` letter, descending), the first key first."""
        self.iterate: float | None = None
        self.nothing = False
        """A filter nothing on Phalanx passes (``-L``, ``-R``): no job is listed."""
        self.document: str | None = None  # "json" or "yaml"


def _split(value: str) -> set[str]:
    return {v for v in value.split(",") if v}


def _sort(value: str) -> list[tuple[str, bool]]:
    keys = []
    for item in (i.strip() for i in value.split(",")):
        descending = item.startswith("-")
        letter = item.lstrip("+-")
        if len(letter) != 1 or letter not in HEADERS:
            raise Usage(f"squeue: error: Invalid sort specification: {item}")
        keys.append((letter, descending))
    return keys


def _iterate(opts: _Options, value: str) -> None:
    try:
        seconds = float(value)
    except ValueError:
        seconds = 0.0
    if seconds <= 0:
        raise Usage(f"squeue: error: Error: --iterate={value} must be positive")
    opts.iterate = seconds


def _clusters(_: _Options, value: str) -> None:
    if not clusters_reached(value):
        raise unreachable_clusters("squeue", value)


def _jobs(opts: _Options, value: str) -> None:
    if value:  # a bare -j lists every job, as without it
        opts.jobs = jobids.parse(value, "squeue")


def _help(_: _Options, __: str) -> None:
    raise Usage(_HELP)


def _version(_: _Options, __: str) -> None:
    raise Usage("slurm 22.05.8 (phalanx)")


_HANDLERS: dict[str, Callable[[_Options, str], None]] = {
    "noheader": lambda o, _: setattr(o, "header", False),
    "array": lambda o, _: setattr(o, "array", True),
    "long": lambda o, _: setattr(o, "long", True),
    "start": lambda o, _: setattr(o, "start", True),
    "format": lambda o, v: setattr(o, "format", v),
    "Format": lambda o, v: setattr(o, "long_format", v),
    "states": lambda o, v: setattr(o, "states", _states(v)),
    "user": lambda o, v: setattr(o, "users", _split(v)),
    "me": lambda o, _: setattr(o, "users", {_me()}),
    "partitions": lambda o, v: setattr(o, "partitions", _split(v)),
    "accounts": lambda o, v: setattr(o, "accounts", _split(v)),
    "qos": lambda o, v: setattr(o, "qos", _split(v)),
    "name": lambda o, v: setattr(o, "names", _split(v)),
    "nodelist": lambda o, v: setattr(o, "nodes", set(node_list("squeue", "nodelist", v))),
    "licenses": lambda o, _: setattr(o, "nothing", True),
    "reservation": lambda o, _: setattr(o, "nothing", True),
    "jobs": _jobs,
    "sort": lambda o, v: setattr(o, "sort", _sort(v)),
    "iterate": _iterate,
    "clusters": _clusters,
    "json": lambda o, _: setattr(o, "document", "json"),
    "yaml": lambda o, _: setattr(o, "document", "yaml"),
    "help": _help,
    "usage": _help,
    "version": _version,
}
"""What each implemented option of ``querytables.SQUEUE`` does to the options."""


def _parse(argv: list[str]) -> _Options:
    found, rest = parse_args(argv, SQUEUE)
    if rest and "jobs" in found:
        # -j takes its list only attached (-j5); as Slurm, a bare -j takes the first word.
        found.set("jobs", rest.pop(0))
    if rest:
        raise Usage(f"squeue: error: Unrecognized option: {rest[0]}")
    opts = _Options()
    for name, text in found.pairs:
        handler = _HANDLERS.get(name)
        if handler is not None:
            handler(opts, text)
    return opts


_HELP = (
    "Usage: squeue [-A account] [--clusters names] [-i seconds] [--job jobid]\n"
    "              [-n name] [-o format] [--only-job-state] [-p partitions]\n"
    "              [--qos qos] [--reservation reservation] [--sort fields] [--start]\n"
    "              [--step step_id] [-t states] [-u user_name] [--usage]\n"
    "              [-L licenses] [-w nodes] [--federation] [--local] [--sibling]\n"
    "              [-ahjlrsv]"
)


def _me() -> str:
    import pwd

    try:
        return pwd.getpwuid(os.getuid()).pw_name
    except KeyError:
        return str(os.getuid())


def _states(value: str) -> set[str]:
    out: set[str] = set()
    for item in _split(value):
        name = item.upper()
        if name == "ALL":
            out |= FINAL | ACTIVE
        elif name in LONG_STATE:
            out.add(LONG_STATE[name])
        elif name in SHORT_STATE:
            out.add(name)
        else:
            raise Usage(f"squeue: error: Invalid job state specified: {item}")
    return out


# ------------------------------------------------------------------------------ selection
_ALWAYS = (
    "array_job_id",
    "array_task_id",
    "array_throttle",
    "end",
    "job_id",
    "name",
    "partition",
    "priority",
    "reason",
    "state",
)
"""The fields selection, array collapse and the sort read."""

_NEEDS: dict[str, tuple[str, ...]] = {
    "a": ("account",),
    "u": ("user",),
    "q": ("qos",),
    "M": ("start",),
    "l": ("time_limit_ms",),
    "L": ("time_limit_ms", "start"),
    "D": ("nodelist", "nodes_requested"),
    "C": ("cpus",),
    "c": ("cpus", "nodelist", "nodes_requested"),
    "m": ("mem_mb",),
    "b": ("gpus_per_task", "ntasks_per_node", "gpu_model"),
    "R": ("nodelist", "signal"),
    "r": ("signal",),
    "N": ("nodelist",),
    "S": ("expected_start", "begin", "start"),
    "V": ("submit",),
    "e": ("start", "time_limit_ms"),
    "Z": ("workdir",),
    "o": ("command",),
    "k": ("comment",),
}
"""``-o`` letter -> the fields its value reads besides ``_ALWAYS``."""


def wire_fields(opts: _Options, specs: list[Spec]) -> list[str]:
    """The ``JobInfo`` fields squeue reads to print ``specs`` with ``opts``: only these
    travel (``GET /v1/jobs/table``), which makes a long listing several times cheaper."""
    out = set(_ALWAYS)
    for key in [spec.key for spec in specs] + [key for key, _ in opts.sort]:
        out.update(_NEEDS.get(key, ()))
    if opts.document is not None:
        from phalanx.slurm.openapi import FIELDS

        out.update(FIELDS)
    for wanted, field in (
        (opts.start, "expected_start"),
        (opts.start, "begin"),
        (opts.users is not None, "user"),
        (opts.accounts is not None, "account"),
        (opts.qos is not None, "qos"),
        (opts.nodes is not None, "nodelist"),
    ):
        if wanted:
            out.add(field)
    return sorted(out)


def _fetch(opts: _Options, fields: list[str]) -> list[Job]:
    query: dict[str, QueryValue] = {"fields": ",".join(fields)}
    states = opts.states
    if opts.jobs is not None:
        query["ids"] = ",".join(str(base) for base, _ in opts.jobs)
        query["all"] = True
    elif states is not None:
        query["state"] = ",".join(sorted(states))
    if opts.users is not None and len(opts.users) == 1:
        query["user"] = next(iter(opts.users))
    if opts.partitions is not None and len(opts.partitions) == 1:
        query["partition"] = next(iter(opts.partitions))
    status, answer = WireCaller().call("GET", "/v1/jobs/table", query=query)
    if status != 200:
        raise _api_error(status, answer)
    return records(answer)


def records(table: Any) -> list[Job]:
    """A decoded ``JobTable`` as one record per job."""
    names = table["fields"]
    return [dict(zip(names, row)) for row in table["rows"]]  # noqa: B905  (strict: 2x slower)


def _api_error(status: int, answer: Any) -> ApiError:
    from phalanx.client.wirecall import api_error

    return api_error(status, answer)


def _recent(job: Job, now: int) -> bool:
    """Still known to Slurm: not ended, or ended within MinJobAge."""
    if job["state"] not in FINAL:
        return True
    end = job.get("end")
    return end is not None and now - end <= MIN_JOB_AGE_MS


def select(jobs: list[Job], opts: _Options, now: int) -> list[Job]:
    """The jobs squeue shows, before arrays collapse."""
    states = opts.states if opts.states is not None else ACTIVE
    if opts.start:
        states = {"PENDING"}
    out = [
        job
        for job in jobs
        if job["state"] in states and (job["state"] not in FINAL or _recent(job, now))
    ]
    if opts.nothing:
        return []
    if opts.jobs is not None:
        wanted = opts.jobs
        out = [job for job in out if jobids.matches(job, wanted)]
    nodes = opts.nodes
    if nodes is not None:
        out = [j for j in out if nodes.intersection(expand(j.get("nodelist") or ""))]
    for field, allowed in (
        ("user", opts.users),
        ("partition", opts.partitions),
        ("account", opts.accounts),
        ("qos", opts.qos),
        ("name", opts.names),
    ):
        if allowed is not None:
            out = [job for job in out if job[field] in allowed]
    return out


def collapse(jobs: list[Job]) -> list[Job]:
    """Pending tasks of one array (same name and partition) become one record whose
    ``array_task_str`` is ``2-9`` (``2-9%2`` with a task limit)."""
    groups: dict[tuple[int, str, str], list[Job]] = {}
    out: list[Job] = []
    for job in jobs:
        base = job.get("array_job_id")
        if base is None or job["state"] != "PENDING":
            out.append(job)
            continue
        key = (base, job["name"], job["partition"])
        if key not in groups:
            groups[key] = []
            out.append(job)  # placeholder: replaced below by the group's record
        groups[key].append(job)
    merged: dict[int, Job] = {}
    for (base, _, _), members in groups.items():
        first = members[0]
        if len(members) == 1:
            merged[id(first)] = first
            continue
        tasks = ranges(int(m["array_task_id"]) for m in members)
        limit = first.get("array_throttle")
        if limit:
            tasks += f"%{limit}"
        reasons: list[str] = []
        for m in members:
            if m["reason"] not in reasons:
                reasons.append(m["reason"])
        merged[id(first)] = dict(
            first,
            job_id=base,
            array_task_str=tasks,
            reason=",".join(reasons),
            priority=max(m["priority"] for m in members),
        )
    return [merged.get(id(job), job) for job in out]


def order(jobs: list[Job], start: bool) -> list[Job]:
    """Slurm's default sort ``P,t,-p``: partition, state, priority down. Ties: running jobs
    by id up, pending ones by id down (array tasks by task id up), as the reference prints
    them; ``--start`` sorts by
    expected start, unknown last."""
    if start:
        return sorted(
            jobs,
            key=lambda j: (
                planned(j) is None,
                planned(j) or 0,
                j.get("array_job_id") or j["job_id"],
            ),
        )

    def key(job: Job) -> tuple[str, int, float, int, int]:
        state = job["state"]
        pending = state == "PENDING"
        task = job.get("array_task_id")
        if task is None:
            base, last = int(job.get("array_job_id") or job["job_id"]), 0
        elif job.get("array_task_str") is not None:  # a collapsed array
            base, last = int(job.get("array_job_id") or job["job_id"]), -1
        elif pending:
            base, last = int(job.get("array_job_id") or job["job_id"]), int(task)
        else:
            base, last = int(job["job_id"]), 0
        return (
            job["partition"],
            STATE_ORDER.get(state, 99),
            -float(job["priority"]),
            -base if pending else base,
            last,
        )

    return sorted(jobs, key=key)


def resort(jobs: list[Job], keys: list[tuple[str, bool]], now: int) -> list[Job]:
    """``-S``: by each key's value (numbers as numbers), the first key first; ties keep the
    default order."""
    values = cells(now)

    def by(letter: str) -> Callable[[Job], tuple[int, float, str]]:
        def key(job: Job) -> tuple[int, float, str]:
            value = values[letter](job)
            if isinstance(value, int | float):
                return (0, float(value), "")
            text = str(value)
            return (0, float(text), "") if text.isdecimal() else (1, 0.0, text)

        return key

    out = list(jobs)
    for letter, descending in reversed(keys):
        out.sort(key=by(letter), reverse=descending)
    return out


# ------------------------------------------------------------------------------ main
def _specs(opts: _Options, err: list[str]) -> tuple[str, list[Spec]]:
    if opts.long_format is not None or (opts.format is None and os.environ.get("SQUEUE_FORMAT2")):
        text = opts.long_format or os.environ.get("SQUEUE_FORMAT2", "")
        fields, bad = parse_long(text, LONG_FIELDS)
        err.extend(f"squeue: error: Invalid job format specification: {b}" for b in bad)
        return "", [Spec(LONG_FIELDS[s.key], s.width, s.right, s.suffix) for s in fields]
    if opts.format is not None:
        text = opts.format
    elif opts.start:
        text = START_FORMAT
    elif opts.long:
        text = LONG_FORMAT
    else:
        text = os.environ.get("SQUEUE_FORMAT") or DEFAULT_FORMAT
    prefix, specs, bad = parse_percent(text, "".join(HEADERS))
    err.extend(f"squeue: error: Invalid job format specification: {b}" for b in bad)
    return prefix, specs


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    try:
        opts = _parse(args)
    except CommandLineError as exc:
        print(exc, file=sys.stderr)
        return exc.status
    if opts.iterate is None:
        return _once(opts)
    # -i: the listing again every N seconds, each under the time, until interrupted.
    try:
        while True:
            print(time.strftime("%a %b %d %H:%M:%S %Y"), flush=True)
            _once(opts)
            sys.stdout.flush()
            time.sleep(opts.iterate)
    except KeyboardInterrupt:
        return 0


def _once(opts: _Options) -> int:
    errors: list[str] = []
    prefix, specs = _specs(opts, errors)
    for line in errors:
        print(line, file=sys.stderr)
    try:
        jobs = _fetch(opts, wire_fields(opts, specs))
        if opts.document is not None:
            return _document(jobs, opts)
    except ControllerUnreachable as exc:
        print(f"slurm_load_jobs error: Unable to contact slurm controller ({exc})", file=sys.stderr)
        return 1
    except ApiError as exc:
        print(f"slurm_load_jobs error: {exc}", file=sys.stderr)
        return 1
    now = now_ms()
    if not _known(jobs, opts, now):
        return 1
    lines: list[str] = []
    if opts.long and opts.iterate is None:
        lines.append(time.strftime("%a %b %d %H:%M:%S %Y"))
    if opts.header:
        lines.append(render(prefix, specs, [HEADERS[s.key] for s in specs]))
    lines += listing(jobs, opts, prefix, specs, now)
    if lines:
        sys.stdout.write("\n".join(lines) + "\n")
    return 0


def _known(jobs: list[Job], opts: _Options, now: int) -> bool:
    """False (and Slurm's message) when the one job asked for with ``-j`` is not known."""
    wanted = opts.jobs
    if wanted is None or len(wanted) != 1:
        return True
    if any(jobids.matches(j, wanted) and _recent(j, now) for j in jobs):
        return True
    print("slurm_load_jobs error: Invalid job id specified", file=sys.stderr)
    return False


def _document(jobs: list[Job], opts: _Options) -> int:
    """``--json``/``--yaml``: the jobs squeue would list (a pending array as one record),
    by job id, as the openapi v0.0.38 document."""
    from phalanx.slurm import openapi

    now = now_ms()
    if not _known(jobs, opts, now):
        return 1
    shown = collapse(select(jobs, opts, now))
    shown.sort(key=lambda j: int(j["job_id"]))  # a collapsed array's is the array's id
    status, nodes = WireCaller().call("GET", "/v1/nodes")
    if status != 200:
        raise _api_error(status, nodes)
    doc = openapi.document(shown, {n["name"]: n for n in nodes}, now)
    sys.stdout.write(openapi.to_json(doc) if opts.document == "json" else openapi.to_yaml(doc))
    return 0


def listing(jobs: list[Job], opts: _Options, prefix: str, specs: list[Spec], now: int) -> list[str]:
    """The lines that show ``jobs`` (records as fetched), without the header."""
    shown = select(jobs, opts, now)
    if not opts.array:
        shown = collapse(shown)
    shown = order(shown, opts.start)
    if opts.sort:
        shown = resort(shown, opts.sort, now)
    # Column by column, then line by line: every loop over the jobs runs in C.
    fill = template(prefix, specs, WHOLE).__mod__
    values = cells(now)
    columns = [map(values[s.key], shown) for s in specs]
    if not columns:
        return [fill(())] * len(shown)
    return list(map(fill, zip(*columns, strict=True)))


if __name__ == "__main__":
    sys.exit(main())
