"""Policies side by side: a terminal table, a markdown table for the README, and JSON.

One row per policy and one column per key figure, so adding a policy adds a line rather than
widening the table past a terminal (about 150 columns with the default figures). A second table
tells how big gangs fare: the queue wait of each job-size class (mean and p95), the capacity
left idle while jobs waited, and the gangs spread over more leaf switches than needed. The best
value of each column is bold when more than one policy is shown.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from rich import box
from rich.console import Console
from rich.table import Table

from phalanx.sim.metrics import SIZE_CLASSES, PolicyMetrics, to_json_dict

__all__ = [
    "format_duration_s",
    "markdown_table",
    "print_table",
    "render_size_table",
    "render_table",
    "write_json",
]


def format_duration_s(seconds: float) -> str:
    """Seconds in the largest unit that keeps the number readable: s, min or h, one decimal."""
    if seconds < 60:
        return f"{seconds:.1f} s"
    if seconds < 3600:
        return f"{seconds / 60:.1f} min"
    return f"{seconds / 3600:.1f} h"


def _pct(x: float) -> str:
    return f"{100 * x:.1f}%"


def _pct2(x: float) -> str:
    return f"{100 * x:.2f}%"


def _count(x: float) -> str:
    return f"{x:,.0f}"


@dataclass(frozen=True, slots=True)
class _Column:
    header: str
    """Short header; a newline splits it over two lines to keep the column narrow."""
    value: Callable[[PolicyMetrics], float]
    text: Callable[[float], str]
    better: int
    """+1 when higher is better, -1 when lower is better, 0 when neither (not highlighted)."""


_COLUMNS: tuple[_Column, ...] = (
    _Column("jobs", lambda m: m.jobs, _count, 0),
    _Column("eta\nsched", lambda m: m.eta_sched, _pct2, +1),
    _Column("theta", lambda m: m.theta_overhead, _pct2, -1),
    _Column("util", lambda m: m.utilization, _pct2, +1),
    # Mean JCT in plain seconds: policies often differ by far less than an hour's tenth.
    _Column("JCT\nmean", lambda m: m.jct_mean_s, lambda x: f"{x:,.1f} s", -1),
    _Column("JCT\np95", lambda m: m.jct_p95_s, format_duration_s, -1),
    _Column("wait\nmean", lambda m: m.wait_mean_s, format_duration_s, -1),
    _Column("wait\np95", lambda m: m.wait_p95_s, format_duration_s, -1),
    _Column("make-\nspan", lambda m: m.makespan_s, format_duration_s, -1),
    _Column("gang\nGPU-h", lambda m: m.gang_wait_gpu_hours, _count, -1),
    _Column("lost\nGPU-h", lambda m: m.lost_gpu_hours, _count, -1),
    _Column("pre-\nempt", lambda m: m.preemptions, _count, -1),
    _Column("dead-\nlock", lambda m: m.deadlocks, _count, -1),
    _Column("Jain", lambda m: m.fairness_jain, lambda x: f"{x:.3f}", +1),
    _Column("jobs/s", lambda m: m.jobs_per_s, _count, +1),
)


def _size_column(size: str, header: str, pick: str) -> _Column:
    def value(m: PolicyMetrics) -> float:
        found = m.wait_by_size.get(size)
        return 0.0 if found is None else float(getattr(found, pick))

    return _Column(header, value, format_duration_s, -1)


_SIZE_COLUMNS: tuple[_Column, ...] = (
    *(
        col
        for size in SIZE_CLASSES
        for col in (
            _size_column(size, f"{size}\nmean", "mean_s"),
            _size_column(size, f"{size}\np95", "p95_s"),
        )
    ),
    _Column("idle\npend", lambda m: m.idle_while_pending, _pct2, -1),
    _Column("extra\nleaves", lambda m: m.multinode_extra_leaves, _count, -1),
)
"""Queue wait by job size (GPUs), mean and p95 per class of ``SIZE_CLASSES``; the capacity
idle while jobs waited; multi-node jobs spread over more leaf switches than needed."""

SIZE_TITLE = "queue wait by job size (GPUs), idle while pending, gangs on extra leaves"


def _cells(
    results: Mapping[str, PolicyMetrics], columns: tuple[_Column, ...] = _COLUMNS
) -> list[list[tuple[str, bool]]]:
    """Per policy, per column: the text and whether it is the column's best value."""
    rows = [[(col.text(col.value(m)), False) for col in columns] for m in results.values()]
    if len(results) < 2:
        return rows
    metrics = list(results.values())
    for k, col in enumerate(columns):
        if col.better == 0:
            continue
        # Compare the shown text, not the raw float, so values that print alike are all bold.
        shown = [col.text(col.value(m)) for m in metrics]
        values = [col.value(m) for m in metrics]
        best = max(values) if col.better > 0 else min(values)
        best_text = shown[values.index(best)]
        for i, text in enumerate(shown):
            rows[i][k] = (text, text == best_text)
    return rows


def _rich(results: Mapping[str, PolicyMetrics], title: str, columns: tuple[_Column, ...]) -> Table:
    table = Table(title=title, box=box.SIMPLE_HEAD, pad_edge=False, padding=(0, 1))
    table.add_column("policy", no_wrap=True)
    for col in columns:
        table.add_column(col.header, justify="right", no_wrap=True)
    for name, row in zip(results, _cells(results, columns), strict=True):
        table.add_row(name, *(f"[bold]{text}[/bold]" if best else text for text, best in row))
    return table


def render_table(results: Mapping[str, PolicyMetrics], *, title: str) -> Table:
    """A rich table: one row per policy, in the mapping's order."""
    return _rich(results, title, _COLUMNS)


def render_size_table(results: Mapping[str, PolicyMetrics], *, title: str = SIZE_TITLE) -> Table:
    """Per policy: mean and p95 queue wait of each class of ``SIZE_CLASSES``, idle while
    pending, multi-node jobs on extra leaves."""
    return _rich(results, title, _SIZE_COLUMNS)


def print_table(
    results: Mapping[str, PolicyMetrics], *, title: str, console: Console | None = None
) -> None:
    """Print :func:`render_table` and :func:`render_size_table` to ``console`` (a fresh stdout
    console by default)."""
    out = console or Console()
    out.print(render_table(results, title=title))
    out.print(render_size_table(results))


def _markdown(results: Mapping[str, PolicyMetrics], columns: tuple[_Column, ...]) -> list[str]:
    headers = ["policy", *(col.header.replace("-\n", "").replace("\n", " ") for col in columns)]
    lines = [
        "| " + " | ".join(headers) + " |",
        "|" + "|".join([":---", *("---:" for _ in columns)]) + "|",
    ]
    for name, row in zip(results, _cells(results, columns), strict=True):
        cells = [f"**{text}**" if best else text for text, best in row]
        lines.append("| " + " | ".join([name, *cells]) + " |")
    return lines


def markdown_table(results: Mapping[str, PolicyMetrics]) -> str:
    """The main table as GitHub markdown (best values in ``**bold**``), then, after a blank
    line, a line naming the size table and that table; ends with a newline."""
    lines = _markdown(results, _COLUMNS)
    lines += ["", f"{SIZE_TITLE[0].upper()}{SIZE_TITLE[1:]}:", ""]
    lines += _markdown(results, _SIZE_COLUMNS)
    return "\n".join(lines) + "\n"


def write_json(
    path: str, results: Mapping[str, PolicyMetrics], extra: dict[str, Any] | None = None
) -> None:
    """Write ``{"policies": {name: figures}, **extra}`` with sorted keys, indented by 2.

    Raises ValueError when ``extra`` has its own "policies" key, which would hide the figures.
    """
    if extra and "policies" in extra:
        raise ValueError('extra must not contain the key "policies"')
    doc: dict[str, Any] = {"policies": {name: to_json_dict(m) for name, m in results.items()}}
    if extra:
        doc.update(extra)
    with open(path, "w", encoding="utf-8") as f:
        json.dump(doc, f, sort_keys=True, indent=2)
        f.write("\n")
