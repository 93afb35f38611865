"""The serving comparison as a table (rich), as JSON, and as one PNG figure.

The figure has three panels over the serving load's span, one line per set-up: the offered
load against the capacity of the ready replicas (requests/s at the SLO), the SLO attainment of
each sync period, and the GPUs training held. matplotlib is imported inside ``write_plot``.
"""

from __future__ import annotations

import bisect
import dataclasses
import json
import os
from collections.abc import Mapping

from rich.table import Table

from phalanx.domain.time import HOUR
from phalanx.sim.report import format_duration_s
from phalanx.sim.serving.compare import ServingResult
from phalanx.sim.serving.run import ServiceTimeline
from phalanx.sim.serving.spec import ServingSpec

__all__ = ["render_serving_table", "serving_json", "write_plot"]

_COLUMNS: tuple[tuple[str, str], ...] = (
    ("setup", "left"),
    ("SLO\nattained", "right"),
    ("serving\nGPU-h", "right"),
    ("busy /\nidle GPU-h", "right"),
    ("training JCT\nmean", "right"),
    ("training JCT\np90", "right"),
    ("lost\nGPU-h", "right"),
    ("preempt-\nions", "right"),
    ("eta\nsched", "right"),
    ("util", "right"),
)


def render_serving_table(results: Mapping[str, ServingResult], *, title: str) -> Table:
    table = Table(title=title, box=None, header_style="bold")
    for header, justify in _COLUMNS:
        table.add_column(header, justify="left" if justify == "left" else "right")
    for name, result in results.items():
        f = result.figures
        setup = name if f.serving_nodes is None else f"{name} ({f.serving_nodes} serving nodes)"
        table.add_row(
            setup,
            f"{100 * f.slo_attainment:.2f}%",
            f"{f.serving_gpu_hours:,.0f}",
            f"{f.serving_busy_gpu_hours:,.0f} / {f.serving_idle_gpu_hours:,.0f}",
            format_duration_s(f.training_jct_mean_s),
            format_duration_s(f.training_jct_p90_s),
            f"{f.training_lost_gpu_hours:,.1f}",
            f"{f.training_preemptions:,}",
            f"{100 * f.eta_sched:.1f}%",
            f"{100 * f.utilization:.1f}%",
        )
    return table


def serving_json(
    results: Mapping[str, ServingResult], serving: ServingSpec, extra: Mapping[str, object]
) -> str:
    """Every figure per set-up, the services' parameters and ``extra`` (what was run)."""
    services = [
        {
            "name": s.name,
            "gpus": s.gpus,
            "capacity_rps": s.latency.capacity_rps,
            "slo_ms": s.latency.slo_s * 1000.0,
            "slo_percentile": s.latency.percentile,
            "min_replicas": s.min_replicas,
            "max_replicas": s.max_replicas,
            "target_utilization": s.target_utilization,
            "startup_s": s.startup / 1000.0,
            "peak_rps": s.load.peak,
            "hours": s.load.end / HOUR,
        }
        for s in serving.services
    ]
    body = {
        "setups": {name: dataclasses.asdict(r.figures) for name, r in results.items()},
        "services": services,
        "sync_s": serving.sync / 1000.0,
        **extra,
    }
    return json.dumps(body, indent=2, sort_keys=True) + "\n"


def write_plot(path: str, results: Mapping[str, ServingResult]) -> str:
    """Write the three-panel figure to ``path`` (its folder is created); return ``path``."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.figure import Figure

    folder = os.path.dirname(path)
    if folder:
        os.makedirs(folder, exist_ok=True)
    fig = Figure(figsize=(12, 9), layout="constrained")
    load_ax, slo_ax, train_ax = fig.subplots(3, 1, sharex=True)
    load_drawn = False
    for name, result in results.items():
        lines = list(result.services.values())
        if not lines:
            continue
        hours = [at / HOUR for at in lines[0].at]
        if not load_drawn:
            offered = [sum(v) for v in zip(*(ln.offered_rps for ln in lines), strict=True)]
            load_ax.plot(hours, offered, color="black", linewidth=1.0, label="offered load")
            load_drawn = True
        capacity = [sum(ln.ready[i] * ln.capacity_rps for ln in lines) for i in range(len(hours))]
        load_ax.plot(hours, capacity, linewidth=0.9, label=f"{name}: ready capacity")
        # From the end of the warm-up on, as the SLO figures count it.
        counted = min(bisect.bisect_left(ln.at, ln.warmup) for ln in lines)
        attained = [_mean_attainment(lines, i) * 100.0 for i in range(counted, len(hours))]
        slo_ax.plot(hours[counted:], attained, linewidth=0.9, label=name)
        train_ax.plot(
            [at / HOUR for at, _ in result.training_gpus],
            [g for _, g in result.training_gpus],
            linewidth=0.9,
            label=name,
        )
    load_ax.set_ylabel("requests/s")
    load_ax.legend(loc="upper left", fontsize="small")
    slo_ax.set_ylabel("SLO attained (%)")
    slo_ax.legend(loc="lower left", fontsize="small")
    train_ax.set_ylabel("GPUs held by training")
    train_ax.set_xlabel("hours")
    train_ax.legend(loc="lower left", fontsize="small")
    fig.suptitle("serving next to training: load, SLO and training GPUs per set-up")
    fig.savefig(path, dpi=100)
    return path


def _mean_attainment(lines: list[ServiceTimeline], i: int) -> float:
    """SLO attainment of period ``i`` over every service's requests."""
    total = sum(ln.offered_rps[i] for ln in lines)
    if total <= 0:
        return 1.0
    return sum(ln.offered_rps[i] * ln.attainment[i] for ln in lines) / total
