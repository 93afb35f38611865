"""Reader of the Standard Workload Format (SWF) of the Parallel Workloads Archive.

One job per line, 18 whitespace-separated fields, ``-1`` for unknown; lines starting with ``;``
are header comments. Fields: 1 job number, 2 submit time (s), 3 wait time, 4 run time, 5
allocated processors, 6 average CPU time, 7 used memory, 8 requested processors, 9 requested
time, 10 requested memory, 11 status, 12 user id, 13 group id, 14 executable, 15 queue, 16
partition, 17 preceding job, 18 think time.

Mapping onto GPU jobs:

- GPUs: requested processors (field 8), else allocated processors (field 5); gang by
  ``gang.gang_shape`` (8-GPU nodes). One CPU per GPU, memory 0, as for Philly.
- runtime: field 4; a run time of 0 becomes 1 s.
- time limit: the requested time (field 9) when given, kept as the user asked even where the job
  ran longer (the simulator then ends it at its limit, as the real scheduler could have);
  else ``estimates.estimate_limit``, indexed by the job's position among kept lines.
- account and user: ``u<user id>`` (field 12), ``unknown`` when -1.
- Jobs with an unknown run time (< 0) or no processors are skipped; ``load_swf`` counts them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import NamedTuple

from phalanx.domain.jobspec import JobSpec
from phalanx.domain.time import SECOND, Duration, Instant
from phalanx.errors import TraceError
from phalanx.sim.traces.estimates import estimate_limit
from phalanx.sim.traces.gang import gang_shape
from phalanx.sim.traces.options import NO_OPTIONS, TraceOptions, select
from phalanx.sim.traces.row import MAX_SECONDS, seconds_to_ms, text_lines
from phalanx.sim.workload import TraceJob

__all__ = ["FIELDS", "SwfLoad", "load_swf", "read_swf"]

FIELDS = (
    "job_number", "submit_time", "wait_time", "run_time", "allocated_processors",
    "average_cpu_time", "used_memory", "requested_processors", "requested_time",
    "requested_memory", "status", "user_id", "group_id", "executable", "queue", "partition",
    "preceding_job", "think_time",
)  # fmt: skip
"""The 18 SWF fields in order; error messages name fields by these names."""


@dataclass(frozen=True, slots=True)
class SwfLoad:
    jobs: list[TraceJob]
    skipped: int
    """Lines skipped for an unknown run time or no processors."""


class _Line(NamedTuple):
    number: int
    submit: Instant
    runtime: Duration
    gpus: int
    requested: Duration | None
    user: str
    line: int


def read_swf(
    path: str,
    options: TraceOptions = NO_OPTIONS,
) -> list[TraceJob]:
    """Jobs of an SWF file, options applied as ``options.select`` describes."""
    return load_swf(path, options).jobs


def load_swf(
    path: str,
    options: TraceOptions = NO_OPTIONS,
) -> SwfLoad:
    """``read_swf`` that also says how many lines were skipped."""
    options.check(path)
    seed = options.seed
    lines: list[_Line] = []
    skipped = 0
    for number, text in text_lines(path):
        if text.startswith(";"):
            continue
        parsed = _parse(text, path, number)
        if parsed is None:
            skipped += 1
        else:
            lines.append(parsed)
    kept = select([line.submit for line in lines], options)
    return SwfLoad([_job(lines[index], index, at, seed) for index, at in kept], skipped)


def _parse(text: str, path: str, line: int) -> _Line | None:
    cells = text.split()
    if len(cells) < len(FIELDS):
        raise TraceError(
            f"expected {len(FIELDS)} fields, found {len(cells)}",
            source=path,
            line=line,
            field=FIELDS[len(cells)],
        )
    values: list[float] = []
    for name, cell in zip(FIELDS, cells, strict=False):
        try:
            value = float(cell)
        except ValueError:
            value = math.nan
        if not math.isfinite(value):
            raise TraceError(f"not a number: {cell!r}", source=path, line=line, field=name)
        if abs(value) > MAX_SECONDS:  # times and counts alike: none is meant to be this big
            raise TraceError(f"beyond 10^12: {cell}", source=path, line=line, field=name)
        values.append(value)
    if values[1] < 0:
        raise TraceError(
            f"submit time cannot be negative: {cells[1]}",
            source=path,
            line=line,
            field="submit_time",
        )
    gpus = values[7] if values[7] > 0 else values[4]
    if values[3] < 0 or gpus <= 0:
        return None
    if not gpus.is_integer():
        raise TraceError(
            f"not a whole number: {gpus:g}",
            source=path,
            line=line,
            field="requested_processors" if values[7] > 0 else "allocated_processors",
        )
    user = int(values[11])
    return _Line(
        number=int(values[0]),
        submit=seconds_to_ms(values[1]),
        runtime=max(seconds_to_ms(values[3]), SECOND),
        gpus=int(gpus),
        requested=seconds_to_ms(values[8]) if values[8] > 0 else None,
        user=f"u{user}" if user >= 0 else "unknown",
        line=line,
    )


def _job(row: _Line, index: int, submit: Instant, seed: int) -> TraceJob:
    nodes, per_node = gang_shape(row.gpus)
    name = f"swf-{row.number}"
    limit = row.requested if row.requested else estimate_limit(row.runtime, seed, index)
    spec = JobSpec(
        name=name,
        user=row.user,
        account=row.user,
        nodes_min=nodes,
        nodes_max=nodes,
        gpus_per_task=per_node,
        cpus_per_task=max(1, per_node),
        time_limit=limit,
    )
    return TraceJob(submit=submit, spec=spec, runtime=row.runtime, trace_id=name, line=row.line)
