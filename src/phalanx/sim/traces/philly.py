"""Reader of the Microsoft Philly job table (``shared/traces/philly/philly.csv``).

Columns ``timestamp,duration,num_gpus,gpu_time,cluster``; rows are not sorted by time.

- account and user: the ``cluster`` column (the virtual cluster, i.e. the team); Philly has no
  user column, so each team is one user.
- runtime: ``duration`` seconds; a duration of 0 becomes 1 s so every job occupies its GPUs.
- gang: ``gang.gang_shape`` on ``num_gpus`` (8-GPU nodes, one task per node).
- CPUs: one per GPU (at least one), memory 0: small enough never to bind on an 8-GPU node with
  64 CPUs, because the trace says nothing about them and GPUs must be the contended resource.
- checkpoint interval: Philly has no checkpoint column; every job is modelled as checkpointing
  every 30 minutes (``CHECKPOINT_INTERVAL``), the same for every policy.
- time limit: ``estimates.estimate_limit`` (Philly has no limits), indexed by data row.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import NamedTuple

from phalanx.domain.jobspec import JobSpec
from phalanx.domain.time import MINUTE, SECOND, Duration, Instant
from phalanx.sim.traces.estimates import estimate_limit
from phalanx.sim.traces.gang import gang_shape
from phalanx.sim.traces.options import NO_OPTIONS, TraceOptions, select
from phalanx.sim.traces.row import MAX_COUNT, Cells, csv_rows, seconds_to_ms
from phalanx.sim.workload import TraceJob

__all__ = ["CHECKPOINT_INTERVAL", "COLUMNS", "read_philly"]

COLUMNS = ("timestamp", "duration", "num_gpus", "cluster")
"""Required columns (``gpu_time`` is derived and ignored)."""
CHECKPOINT_INTERVAL: Duration = 30 * MINUTE

_EPOCH = datetime(1970, 1, 1)
_MS = timedelta(milliseconds=1)
_MAX_SECONDS = 1e12  # also rejects inf and nan, which fail every comparison


class _Row(NamedTuple):
    submit: Instant
    runtime: Duration
    gpus: int
    account: str
    line: int


def read_philly(
    path: str,
    options: TraceOptions = NO_OPTIONS,
) -> list[TraceJob]:
    """Jobs of a Philly CSV, options applied as ``options.select`` describes."""
    options.check(path)
    seed = options.seed
    rows = [_parse(values, path, line) for line, values in csv_rows(path, COLUMNS)]
    kept = select([row.submit for row in rows], options)
    return [_job(rows[index], index, at, seed) for index, at in kept]


def _parse(values: dict[str, str], path: str, line: int) -> _Row:
    # Fast path for well-formed rows (the full file must load in well under 2 s); anything it
    # does not accept goes through the checked path below, which names the bad field.
    try:
        duration = float(values["duration"])
        gpus = int(values["num_gpus"])
        account = values["cluster"].strip()
        moment = datetime.fromisoformat(values["timestamp"])
    except ValueError:
        return _checked(Cells(values, source=path, line=line))
    if not (
        0.0 <= duration < _MAX_SECONDS
        and 0 <= gpus <= MAX_COUNT
        and account
        and moment.tzinfo is None
    ):
        return _checked(Cells(values, source=path, line=line))
    return _Row(
        (moment - _EPOCH) // _MS, max(round(duration * SECOND), SECOND), gpus, account, line
    )


def _checked(cells: Cells) -> _Row:
    runtime = seconds_to_ms(cells.seconds("duration"))
    if runtime < 0:
        raise cells.error(f"duration cannot be negative: {cells.text('duration')}", "duration")
    return _Row(
        submit=_timestamp(cells, "timestamp"),
        runtime=max(runtime, SECOND),
        gpus=cells.count("num_gpus"),
        account=cells.text("cluster"),
        line=cells.line,
    )


def _timestamp(cells: Cells, field: str) -> Instant:
    """``2017-10-09 07:01:55`` (UTC when no offset is given) to ms since the Unix epoch."""
    text = cells.text(field)
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        raise cells.error(f"not a timestamp: {text!r}", field) from None
    if moment.tzinfo is not None:
        moment = moment.astimezone(UTC).replace(tzinfo=None)
    return (moment - _EPOCH) // _MS


def _job(row: _Row, index: int, submit: Instant, seed: int) -> TraceJob:
    nodes, per_node = gang_shape(row.gpus)
    name = f"philly-{index}"
    spec = JobSpec(
        name=name,
        user=row.account,
        account=row.account,
        nodes_min=nodes,
        nodes_max=nodes,
        tasks_per_node=1,
        gpus_per_task=per_node,
        cpus_per_task=max(1, per_node),
        mem_per_node_mb=0,
        time_limit=estimate_limit(row.runtime, seed, index),
        checkpoint_interval=CHECKPOINT_INTERVAL,
    )
    return TraceJob(submit=submit, spec=spec, runtime=row.runtime, trace_id=name, line=row.line)
