"""A generic trace format, CSV or JSON lines, for workloads from anywhere else.

One job per CSV row (with a header) or per JSON object (one per line). Keys:

=====================  ========  ==========================================================
key                    required  meaning
=====================  ========  ==========================================================
``submit``             yes       submit time, seconds (float; any epoch, rebased to 0)
``runtime``            yes       run time, seconds (0 becomes 1 s)
``gpus``               yes       whole GPUs of the whole job (0 for CPU-only or a fraction)
``nodes``              no        node count; ``gpus`` must divide evenly over it
``gpus_per_node``      no        GPUs per node; ``nodes`` is then ``gpus / gpus_per_node``
``account``/``user``   no        default ``root`` and the account
``name``               no        default ``job<row index>``; also the trace id
``time_limit``         no        seconds; default ``estimates.estimate_limit``
``partition``/``qos``  no        default: the cluster's default partition, ``normal``
``gpu_milli``          no        a fraction of one GPU, 1-999 thousandths (``gpus`` 0 or 1)
``cpus``               no        CPUs per node (one task per node), default 1 per GPU, min 1
``mem_mb``             no        memory per node, MB, default 0
``gpu_model``          no        allowed GPU models, ``A|B``; default any
``checkpoint_interval``  no      seconds between checkpoints; default none
``checkpoint_on_signal``  no     ``true``: the job also checkpoints on SIGTERM; default false
=====================  ========  ==========================================================

Without ``nodes`` or ``gpus_per_node`` the gang comes from ``gang.gang_shape`` (8-GPU nodes).
Empty CSV cells and JSON ``null`` count as absent.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from typing import NamedTuple

from phalanx.domain.jobspec import MILLI, JobSpec
from phalanx.domain.time import SECOND, Duration, Instant
from phalanx.errors import SpecError, TraceError
from phalanx.sim.traces.estimates import estimate_limit
from phalanx.sim.traces.gang import gang_shape
from phalanx.sim.traces.options import NO_OPTIONS, TraceOptions, select
from phalanx.sim.traces.row import Cells, csv_records, jsonl_records, seconds_to_ms
from phalanx.sim.workload import TraceJob

__all__ = ["FORMATS", "REQUIRED", "generic_format", "read_generic"]

REQUIRED = ("submit", "runtime", "gpus")
FORMATS = {".csv": "csv", ".jsonl": "jsonl", ".ndjson": "jsonl"}
"""File extensions (before an optional ``.gz``) and the format each implies."""


class _Job(NamedTuple):
    submit: Instant
    runtime: Duration
    spec: JobSpec
    line: int


def generic_format(path: str) -> str | None:
    """``csv`` or ``jsonl`` from the file name, or None."""
    name = path.lower().removesuffix(".gz")
    for extension, fmt in FORMATS.items():
        if name.endswith(extension):
            return fmt
    return None


def read_generic(
    path: str,
    options: TraceOptions = NO_OPTIONS,
    *,
    fmt: str | None = None,
) -> list[TraceJob]:
    """Jobs of a generic CSV (``fmt="csv"``) or JSON-lines (``fmt="jsonl"``) trace.

    Without ``fmt`` the extension decides; options apply as ``options.select`` describes.
    """
    options.check(path)
    seed = options.seed
    fmt = fmt or generic_format(path)
    records: Iterator[Cells]
    if fmt == "csv":
        records = csv_records(path, REQUIRED)
    elif fmt == "jsonl":
        records = jsonl_records(path)
    else:
        raise TraceError(f"cannot tell csv from jsonl (format {fmt!r}); name one", source=path)
    parsed = [_parse(cells, index) for index, cells in enumerate(records)]
    jobs = []
    for index, at in select([job.submit for job in parsed], options):
        job = parsed[index]
        spec = job.spec
        if spec.time_limit is None:
            spec = replace(spec, time_limit=estimate_limit(job.runtime, seed, index))
        jobs.append(TraceJob(at, spec, job.runtime, trace_id=spec.name, line=job.line))
    return jobs


def _seconds(cells: Cells, field: str) -> Duration | None:
    value = cells.opt_seconds(field)
    if value is None:
        return None
    if value <= 0:
        raise cells.error(f"must be positive: {value:g}", field)
    return max(seconds_to_ms(value), 1)


def _parse(cells: Cells, index: int) -> _Job:
    runtime = cells.seconds("runtime")
    if runtime < 0:
        raise cells.error(f"cannot be negative: {runtime:g}", "runtime")
    gpus = cells.count("gpus")
    milli = cells.opt_integer("gpu_milli") or 0
    if milli and not (0 < milli < MILLI and gpus <= 1):
        raise cells.error(
            "a GPU fraction is 1-999 thousandths of one GPU (gpus 0 or 1)", "gpu_milli"
        )
    if milli:
        gpus = 0
    nodes, per_node = _shape(cells, gpus)
    account = cells.text("account", "root")
    try:
        spec = JobSpec(
            name=cells.text("name", f"job{index}"),
            user=cells.text("user", account),
            account=account,
            partition=cells.opt_text("partition"),
            qos=cells.text("qos", "normal"),
            nodes_min=nodes,
            nodes_max=nodes,
            gpus_per_task=per_node,
            gpu_milli=milli,
            cpus_per_task=_cpus(cells, per_node),
            mem_per_node_mb=cells.count("mem_mb", 0),
            gpu_models=frozenset(m for m in cells.text("gpu_model", "").split("|") if m),
            time_limit=_seconds(cells, "time_limit"),
            checkpoint_interval=_seconds(cells, "checkpoint_interval"),
            checkpoint_on_signal=cells.flag("checkpoint_on_signal"),
        )
    except SpecError as exc:
        raise cells.error(exc.message, exc.field) from None
    submit = seconds_to_ms(cells.seconds("submit"))
    return _Job(submit, max(seconds_to_ms(runtime), SECOND), spec, cells.line)


def _shape(cells: Cells, gpus: int) -> tuple[int, int]:
    """``(nodes, gpus per node)`` from whichever of ``nodes``/``gpus_per_node`` are given."""
    nodes = cells.opt_integer("nodes")
    per_node = cells.opt_integer("gpus_per_node")
    if nodes is not None and nodes < 1:
        raise cells.error(f"must be at least 1: {nodes}", "nodes")
    if per_node is not None and per_node < 0:
        raise cells.error(f"cannot be negative: {per_node}", "gpus_per_node")
    if nodes is None and per_node is None:
        return gang_shape(gpus)
    if nodes is None:
        if per_node == 0 and gpus == 0:
            return 1, 0
        if not per_node or not gpus or gpus % per_node:
            raise cells.error(f"{gpus} GPUs do not split into nodes of {per_node}", "gpus_per_node")
        return gpus // per_node, per_node
    if per_node is None:
        if gpus % nodes:
            raise cells.error(f"{gpus} GPUs do not split evenly over {nodes} nodes", "nodes")
        return nodes, gpus // nodes
    if nodes * per_node != gpus:
        raise cells.error(f"{nodes} nodes x {per_node} GPUs is not {gpus} GPUs", "gpus")
    return nodes, per_node


def _cpus(cells: Cells, gpus_per_node: int) -> int:
    cpus = cells.count("cpus", -1)
    return max(1, gpus_per_node) if cpus < 0 else cpus
