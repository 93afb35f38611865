"""PNG charts of simulated runs: GPU allocation over time, queue-wait CDF, a Gantt chart per policy.

matplotlib is imported inside the functions, so importing this module costs nothing for
commands that never plot. Figures are built with ``matplotlib.figure.Figure`` rather than pyplot:
no global figure registry to leak or to warn about when many runs are plotted.
Everything is reduced with numpy before drawing (a fixed number of time bins, quantiles of the
wait distribution, only the segments of the Gantt window), so 82k jobs and 100k segments plot in
a few seconds.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from phalanx.domain.time import DAY, SECOND, Instant
from phalanx.sim.records import RunRecord

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["write_plots"]

FloatArray = npt.NDArray[np.float64]

_BINS = 2000
"""Time bins of the utilisation chart: finer than the pixels of a 12-inch-wide figure."""
_CDF_POINTS = 2000
_GANTT_NODES = 16
_PALETTE = 20
"""Colors of matplotlib's tab20 map, picked by job id hash."""


def write_plots(out_dir: str, runs: Mapping[str, RunRecord]) -> list[str]:
    """Write ``utilization.png``, ``wait_cdf.png`` and ``gantt_<policy>.png`` per policy.

    Returns the paths written, in that order. ``out_dir`` is created if missing.
    """
    import matplotlib

    # Explicitly non-interactive: plots are written from CLIs and tests, never shown.
    matplotlib.use("Agg")
    os.makedirs(out_dir, exist_ok=True)
    paths = [
        _save(_utilization_figure(runs), os.path.join(out_dir, "utilization.png")),
        _save(_wait_cdf_figure(runs), os.path.join(out_dir, "wait_cdf.png")),
    ]
    for name, run in runs.items():
        path = os.path.join(out_dir, f"gantt_{_slug(name)}.png")
        paths.append(_save(_gantt_figure(name, run), path))
    return paths


def _save(fig: Figure, path: str) -> str:
    fig.savefig(path, dpi=100)
    return path


def _slug(name: str) -> str:
    """A file-name-safe form of a policy name ("sched/backfill" -> "sched-backfill")."""
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", name).strip("-") or "policy"


def _new_figure(width: float, height: float) -> Figure:
    from matplotlib.figure import Figure

    return Figure(figsize=(width, height), layout="constrained")


def _cumulative(timeline: Sequence[tuple[Instant, float]]) -> tuple[FloatArray, FloatArray]:
    """Change times and the GPU x ms allocated from time 0 up to each of them.

    Between change points the integral grows linearly, so ``np.interp`` on these arrays gives
    the integral at any time, and differences of it give exact time-weighted bin means.
    """
    points = np.asarray(timeline, dtype=np.float64).reshape(len(timeline), 2)
    times, levels = points[:, 0], points[:, 1]
    area = np.concatenate([[0.0], np.cumsum(levels[:-1] * np.diff(times))])
    return times, area


def _integral_at(
    times: FloatArray, area: FloatArray, levels: FloatArray, at: FloatArray
) -> FloatArray:
    """The allocation integral from the first change point up to each instant of ``at``."""
    inside = np.interp(at, times, area)
    # Past the last change point the last level holds; np.interp would flatten it.
    beyond = np.maximum(at - times[-1], 0.0) * levels[-1]
    return np.where(at < times[0], 0.0, inside + beyond)


def _utilization_figure(runs: Mapping[str, RunRecord]) -> Figure:
    fig = _new_figure(12, 4.5)
    ax = fig.add_subplot()
    drawn = False
    for name, run in runs.items():
        if not run.alloc_timeline or run.total_gpus <= 0:
            continue
        times, area = _cumulative(run.alloc_timeline)
        levels = np.asarray([g for _, g in run.alloc_timeline], dtype=np.float64)
        end = max(float(times[-1]), max((j.end or 0 for j in run.jobs), default=0))
        if end <= times[0]:
            end = float(times[0]) + 1.0
        edges = np.linspace(float(times[0]), end, _BINS + 1)
        per_bin = np.diff(_integral_at(times, area, levels, edges)) / np.diff(edges)
        ax.stairs(per_bin / run.total_gpus, edges / DAY, label=name)
        drawn = True
    ax.set_xlabel("time (days)")
    ax.set_ylabel("GPUs allocated (fraction of cluster)")
    ax.set_ylim(0, 1.05)
    ax.set_title("GPU allocation over time")
    ax.grid(alpha=0.3)
    if drawn:
        ax.legend(loc="lower right", fontsize="small")
    return fig


def _wait_cdf_figure(runs: Mapping[str, RunRecord]) -> Figure:
    fig = _new_figure(8, 5)
    ax = fig.add_subplot()
    drawn = False
    for name, run in runs.items():
        waits = (
            np.asarray(
                [
                    j.first_start - j.submit
                    for j in run.jobs
                    if j.first_start is not None and j.rejected is None
                ],
                dtype=np.float64,
            )
            / SECOND
        )
        if waits.size == 0:
            continue
        # A log axis cannot show 0: waits under one second are drawn at one second.
        waits = np.sort(np.maximum(waits, 1.0))
        # The empirical CDF as steps, at most _CDF_POINTS evenly spaced ranks of it: exact for
        # small runs, and finer than the figure's pixels for large ones.
        ranks = np.unique(np.linspace(0, waits.size - 1, min(_CDF_POINTS, waits.size)).astype(int))
        xs = np.concatenate([[waits[0]], waits[ranks]])
        ys = np.concatenate([[0.0], (ranks + 1) / waits.size])
        ax.plot(xs, ys, drawstyle="steps-post", label=name)
        drawn = True
    ax.set_xscale("log")
    # A little room left of 1 s, so a run whose waits are all under a second stays visible.
    ax.set_xlim(left=0.8)
    ax.set_ylim(0, 1.0)
    ax.set_xlabel("queue wait (s; under 1 s shown at 1 s)")
    ax.set_ylabel("fraction of jobs")
    ax.set_title("Queue wait CDF")
    ax.grid(alpha=0.3, which="both")
    if drawn:
        ax.legend(loc="lower right", fontsize="small")
    return fig


def _gantt_figure(name: str, run: RunRecord) -> Figure:
    from matplotlib import colormaps

    fig = _new_figure(12, 6)
    ax = fig.add_subplot()
    segs = run.segments
    ax.set_xlabel("time (days)")
    ax.set_ylabel("node")
    if not segs:
        ax.set_title(f"{name}: no segments recorded")
        return fig
    table = np.array([(s.start, s.end, s.node, s.job_id) for s in segs], dtype=np.float64)
    start, end = table[:, 0], table[:, 1]
    node = table[:, 2].astype(np.int64)
    job = table[:, 3].astype(np.int64)
    gpus = np.array([s.gpus for s in segs], dtype=np.float64)
    w0 = _busiest_day(start, end, gpus)
    w1 = w0 + DAY
    # Only segments overlapping the window are drawn, clipped to it.
    keep = (end > w0) & (start < w1)
    start, end = np.maximum(start[keep], w0), np.minimum(end[keep], w1)
    node, job, gpus = node[keep], job[keep], gpus[keep]
    held = np.bincount(node, weights=(end - start) * gpus) if node.size else np.zeros(0)
    # The busiest nodes, shown in node order so neighbours in the topology stay together.
    top = np.sort(np.argsort(-held, kind="stable")[:_GANTT_NODES])
    top = top[held[top] > 0]
    cmap = colormaps["tab20"]
    # Knuth's multiplicative hash spreads consecutive job ids over the palette, deterministically.
    color_index = (job * 2654435761) % (2**32) % _PALETTE
    for row, n in enumerate(top):
        mine = node == n
        spans = [(s / DAY, (e - s) / DAY) for s, e in zip(start[mine], end[mine], strict=True)]
        colors = [cmap(int(c)) for c in color_index[mine]]
        ax.broken_barh(spans, (row - 0.4, 0.8), facecolors=colors, edgecolor="none")
    ax.set_yticks(range(len(top)), [str(int(n)) for n in top])
    ax.set_xlim(w0 / DAY, w1 / DAY)
    ax.set_ylim(-0.6, max(len(top), 1) - 0.4)
    ax.set_title(f"{name}: busiest day, {len(top)} busiest nodes (color = job)")
    return fig


def _busiest_day(start: FloatArray, end: FloatArray, gpus: FloatArray) -> float:
    """Start (ms) of the one-day window, aligned to whole days, holding the most GPU time."""
    first = int(start.min() // DAY)
    last = int(end.max() // DAY)
    days = np.arange(first, last + 1, dtype=np.float64) * DAY
    # Sum over segments of their overlap with each day, via the integral of a step timeline:
    # +gpus at each start, -gpus at each end, evaluated at the day edges.
    edges = np.append(days, days[-1] + DAY)
    times = np.concatenate([start, end])
    deltas = np.concatenate([gpus, -gpus])
    order = np.argsort(times, kind="stable")
    times, level = times[order], np.cumsum(deltas[order])
    area = np.concatenate([[0.0], np.cumsum(level[:-1] * np.diff(times))])
    per_day = np.diff(np.interp(edges, times, area))
    return float(days[int(np.argmax(per_day))])
