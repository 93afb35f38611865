"""Advice as JSON and as terminal tables.

The JSON (``advice_json``) is::

    {"setups": {NAME: {"eta_sched", "theta_overhead", "utilization", "jct_mean_s",
                       "wait_by_size", "jct_by_size", "slo_attainment", "productive_gpu_hours",
                       "cost_per_productive_gpu_hour", "makespan_s", "jct_mean_s_by_class",
                       "gpu_hours_by_class", "rejected", "unfinished", "seeds", "load",
                       "serving_nodes", "spread": {figure: [low, high]}, "description",
                       "by_load": {LOAD: {same figures at that load}}}},
     "recommendation": {"setup": NAME, "reasons": [...]},
     "claims": [{"claim", "setup", "figure", "measured", "range", "holds"}],
     "runs": [{"setup", "seed", "load", "productive_gpu_hours", "slo_attainment", "metrics"}],
     ...what was run (workload, cluster, loads, seeds, prices, MFU, SLO settings, notes)}

A set-up's top-level figures are medians over seeds at the reference load (the load nearest
1); ``slo_attainment`` and the cost are null where they do not apply. Nothing in it measures
the machine that ran the sweep, so a serial and a parallel sweep write the same bytes.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rich import box
from rich.console import Console
from rich.table import Table

from phalanx.sim.advice import Advice, SetupFigures, Stat, reference_load
from phalanx.sim.metrics import SIZE_CLASSES, to_json_dict
from phalanx.sim.report import format_duration_s
from phalanx.sim.setups import SETUPS

__all__ = ["advice_json", "print_advice", "size_cell"]

_SPREAD = (
    "eta_sched",
    "theta_overhead",
    "utilization",
    "jct_mean_s",
    "makespan_s",
    "productive_gpu_hours",
    "cost_per_productive_gpu_hour",
    "slo_attainment",
)


def advice_json(advice: Advice) -> dict[str, Any]:
    """The JSON document of the module docstring."""
    setups: dict[str, Any] = {}
    for name, by_load in advice.summary.items():
        ref = by_load[reference_load(list(by_load))]
        setups[name] = {
            **_figures(ref),
            "description": SETUPS[name].description if name in SETUPS else "",
            "by_load": {f"{load:g}": _figures(f) for load, f in by_load.items()},
        }
    rec = advice.recommendation
    return {
        "setups": setups,
        "recommendation": {"setup": rec.setup, "reasons": list(rec.reasons)},
        "claims": [
            {
                "claim": c.claim,
                "setup": c.setup,
                "figure": c.figure,
                "measured": c.measured,
                "range": [c.low, c.high],
                "holds": c.holds,
            }
            for c in advice.claims
        ],
        "runs": [
            {
                "setup": r.setup,
                "seed": r.seed,
                "load": r.load,
                "productive_gpu_hours": r.productive_gpu_hours,
                "slo_attainment": r.slo_attainment,
                "gpu_hours_by_class": r.gpu_hours_by_class,
                "jct_mean_s_by_class": r.jct_mean_s_by_class,
                "serving_nodes": r.serving_nodes,
                "metrics": to_json_dict(r.metrics),
            }
            for r in advice.runs
        ],
        **advice.context,
    }


def _figures(f: SetupFigures) -> dict[str, Any]:
    spread: dict[str, list[float] | None] = {}
    out: dict[str, Any] = {}
    for key in _SPREAD:
        stat: Stat | None = getattr(f, key)
        out[key] = None if stat is None else stat.median
        spread[key] = None if stat is None else [stat.low, stat.high]
    out.update(
        wait_by_size={k: dict(v) for k, v in f.wait_by_size.items()},
        jct_by_size=dict(f.jct_by_size),
        jct_mean_s_by_class={k: v.median for k, v in f.jct_mean_s_by_class.items()},
        gpu_hours_by_class=dict(f.gpu_hours_by_class),
        rejected=f.rejected,
        unfinished=f.unfinished,
        seeds=f.seeds,
        load=f.load,
        serving_nodes=f.serving_nodes,
        spread=spread,
    )
    return out


# -- terminal ---------------------------------------------------------------------------------


def _pct(x: float) -> str:
    return f"{100 * x:.1f}%"


def _cell(stat: Stat | None, text: Any, seeds: int) -> str:
    if stat is None:
        return "-"
    if seeds < 2 or text(stat.low) == text(stat.high):
        return str(text(stat.median))
    return f"{text(stat.median)} [dim]({text(stat.low)}-{text(stat.high)})[/dim]"


def _money(x: float) -> str:
    return f"{x:,.3f}"


def _hours(x: float) -> str:
    return f"{x:,.0f}"


def main_table(summary: Mapping[str, Mapping[float, SetupFigures]], title: str) -> Table:
    """Per set-up at each load: the efficiency figures, median (spread) over seeds."""
    table = Table(title=title, box=box.SIMPLE_HEAD, pad_edge=False, padding=(0, 1))
    for header in ("setup", "load", "eta sched", "theta", "util", "JCT mean", "SLO", "prod GPU-h",
                   "cost / prod GPU-h"):  # fmt: skip
        table.add_column(header, justify="left" if header == "setup" else "right", no_wrap=True)
    for name, by_load in summary.items():
        for load, f in by_load.items():
            s = f.seeds
            table.add_row(
                name,
                f"{load:g}",
                _cell(f.eta_sched, _pct, s),
                _cell(f.theta_overhead, _pct, s),
                _cell(f.utilization, _pct, s),
                _cell(f.jct_mean_s, format_duration_s, s),
                _cell(f.slo_attainment, _pct, s),
                _cell(f.productive_gpu_hours, _hours, s),
                _cell(f.cost_per_productive_gpu_hour, _money, s),
            )
    return table


def wait_table(summary: Mapping[str, Mapping[float, SetupFigures]]) -> Table:
    """Per set-up at the reference load: mean and p95 wait, and mean JCT, by size class
    (medians over seeds)."""
    table = Table(
        title="queue wait by job size (GPUs), mean / p95, and mean JCT, at the reference load",
        box=box.SIMPLE_HEAD,
        pad_edge=False,
        padding=(0, 1),
    )
    table.add_column("setup", no_wrap=True)
    for size in SIZE_CLASSES:
        table.add_column(size, justify="right", no_wrap=True)
    for name, by_load in summary.items():
        f = by_load[reference_load(list(by_load))]
        cells = []
        for size in SIZE_CLASSES:
            cells.append(size_cell(f, size))
        table.add_row(name, *cells)
    return table


def size_cell(f: SetupFigures, size: str) -> str:
    """``mean / p95 wait, JCT mean`` of a size class, or ``-`` where no job of it started."""
    w = f.wait_by_size[size]
    if w["jobs"] == 0:
        return "-"
    wait = f"{format_duration_s(w['mean_s'])} / {format_duration_s(w['p95_s'])}"
    jct = f.jct_by_size.get(size)
    return wait if not jct else f"{wait}, JCT {format_duration_s(jct)}"


def print_advice(advice: Advice, title: str, console: Console | None = None) -> None:
    """The tables, the claims and the recommendation on ``console`` (stdout by default); a
    console narrower than a table is widened rather than cutting its cells."""
    from rich.measure import Measurement

    for table in (main_table(advice.summary, title), wait_table(advice.summary)):
        out = console or Console()
        needed = Measurement.get(out, out.options.update(max_width=10_000), table).maximum
        if console is None and out.width < needed:
            out = Console(width=needed)
        out.print(table)
    out = console or Console()
    out.print("[bold]common claims[/bold] (medians at the reference load):")
    for c in advice.claims:
        verdict = {True: "holds", False: "does not hold", None: "not run"}[c.holds]
        measured = "-" if c.measured is None else _pct(c.measured)
        out.print(f"  {c.claim}: measured {measured}: {verdict}", highlight=False, soft_wrap=True)
    for note in advice.context.get("notes", []) or []:  # type: ignore[attr-defined]
        out.print(f"note: {note}", highlight=False, soft_wrap=True)
    rec = advice.recommendation
    out.print(f"[bold]recommendation: {rec.setup}[/bold]")
    for reason in rec.reasons:
        out.print(f"  - {reason}", highlight=False, soft_wrap=True)
