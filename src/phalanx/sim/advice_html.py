"""Advice as one self-contained HTML page: tables, reasons, claims and matplotlib plots.

Every plot is a PNG inlined as a ``data:image/png;base64,...`` URI and the style sits in the
page, so the file opens anywhere, offline, with nothing fetched (no CDN, no script). Plots:

- per set-up at the reference load: eta_sched, theta, utilisation and SLO attainment (bars);
- per set-up: mean queue wait of each size class (bars, log scale);
- per set-up: cost per productive GPU-hour against load, median with the seeds' spread.
"""

from __future__ import annotations

import base64
import html
import io
from collections.abc import Mapping
from typing import TYPE_CHECKING

from phalanx.sim.advice import Advice, SetupFigures, reference_load
from phalanx.sim.advice_report import size_cell
from phalanx.sim.metrics import SIZE_CLASSES
from phalanx.sim.report import format_duration_s

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["advice_html"]

_STYLE = """
body { font-family: system-ui, sans-serif; margin: 2em auto; max-width: 1100px; color: #222; }
table { border-collapse: collapse; margin: 1em 0; font-size: 0.9em; }
th, td { border-bottom: 1px solid #ddd; padding: 0.3em 0.7em; text-align: right; }
th:first-child, td:first-child { text-align: left; }
.best { font-weight: bold; background: #eef6ee; }
.muted { color: #777; }
img { max-width: 100%; }
"""


def advice_html(advice: Advice, title: str) -> str:
    """The page (a complete HTML document)."""
    summary = advice.summary
    rec = advice.recommendation
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f"<title>{html.escape(title)}</title><style>{_STYLE}</style></head><body>",
        f"<h1>Which scheduler for this workload</h1><p>{html.escape(title)}</p>",
        f"<h2>Recommendation: {html.escape(rec.setup)}</h2><ul>",
        *(f"<li>{html.escape(r)}</li>" for r in rec.reasons),
        "</ul>",
        "<h2>Figures</h2>",
        _main_table(summary, rec.setup),
        "<h2>Queue wait by job size (GPUs), mean / p95, and mean JCT, at the reference load</h2>",
        _wait_table(summary, rec.setup),
        "<h2>Common claims</h2><ul>",
    ]
    for c in advice.claims:
        verdict = {True: "holds", False: "does not hold", None: "not run"}[c.holds]
        measured = "-" if c.measured is None else f"{100 * c.measured:.1f} %"
        parts.append(f"<li>{html.escape(c.claim)}: measured {measured}: {verdict}</li>")
    parts.append("</ul>")
    notes = advice.context.get("notes") or []
    if isinstance(notes, list) and notes:
        parts.append("<h2>Notes</h2><ul>")
        parts.extend(f"<li>{html.escape(str(n))}</li>" for n in notes)
        parts.append("</ul>")
    parts.append("<h2>Plots</h2>")
    for alt, fig in (
        ("efficiency by set-up", _efficiency_figure(summary)),
        ("mean wait by size class", _wait_figure(summary)),
        ("cost per productive GPU-hour by load", _cost_figure(summary)),
    ):
        parts.append(f'<p><img alt="{alt}" src="{_data_uri(fig)}"></p>')
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"


def _ref(by_load: Mapping[float, SetupFigures]) -> SetupFigures:
    return by_load[reference_load(list(by_load))]


def _row(cells: list[str], best: bool) -> str:
    cls = ' class="best"' if best else ""
    return f"<tr{cls}>" + "".join(f"<td>{html.escape(c)}</td>" for c in cells) + "</tr>"


def _main_table(summary: Mapping[str, Mapping[float, SetupFigures]], best: str) -> str:
    heads = ["setup", "load", "seeds", "eta_sched", "theta", "util", "JCT mean", "SLO",
             "productive GPU-h", "cost / productive GPU-h"]  # fmt: skip
    rows = ["<table><tr>" + "".join(f"<th>{h}</th>" for h in heads) + "</tr>"]
    for name, by_load in summary.items():
        for load, f in by_load.items():
            cost = f.cost_per_productive_gpu_hour
            slo = f.slo_attainment
            rows.append(
                _row(
                    [
                        name,
                        f"{load:g}",
                        str(f.seeds),
                        f"{100 * f.eta_sched.median:.1f} %",
                        f"{100 * f.theta_overhead.median:.2f} %",
                        f"{100 * f.utilization.median:.1f} %",
                        format_duration_s(f.jct_mean_s.median),
                        "-" if slo is None else f"{100 * slo.median:.2f} %",
                        f"{f.productive_gpu_hours.median:,.0f}",
                        "-" if cost is None else f"{cost.median:,.3f}",
                    ],
                    name == best,
                )
            )
    rows.append("</table>")
    return "\n".join(rows)


def _wait_table(summary: Mapping[str, Mapping[float, SetupFigures]], best: str) -> str:
    rows = ["<table><tr><th>setup</th>" + "".join(f"<th>{s}</th>" for s in SIZE_CLASSES)]
    for name, by_load in summary.items():
        f = _ref(by_load)
        cells = [name]
        for size in SIZE_CLASSES:
            cells.append(size_cell(f, size))
        rows.append(_row(cells, name == best))
    rows.append("</table>")
    return "\n".join(rows)


# -- plots ------------------------------------------------------------------------------------


def _new_figure(width: float, height: float) -> Figure:
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.figure import Figure

    return Figure(figsize=(width, height), layout="constrained")


def _data_uri(fig: Figure) -> str:
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=90)
    return "data:image/png;base64," + base64.b64encode(buffer.getvalue()).decode("ascii")


def _efficiency_figure(summary: Mapping[str, Mapping[float, SetupFigures]]) -> Figure:
    fig = _new_figure(10, 3.6)
    ax = fig.add_subplot()
    names = list(summary)
    series = [
        ("eta_sched", [_ref(summary[n]).eta_sched.median for n in names]),
        ("theta", [_ref(summary[n]).theta_overhead.median for n in names]),
        ("utilisation", [_ref(summary[n]).utilization.median for n in names]),
    ]
    slos = [_ref(summary[n]).slo_attainment for n in names]
    if any(s is not None for s in slos):
        series.append(("SLO attainment", [0.0 if s is None else s.median for s in slos]))
    width = 0.8 / len(series)
    for k, (label, values) in enumerate(series):
        ax.bar([i + k * width for i in range(len(names))], values, width, label=label)
    ax.set_xticks([i + width * (len(series) - 1) / 2 for i in range(len(names))], names)
    ax.set_ylim(0, 1.05)
    ax.set_ylabel("share")
    ax.set_title("efficiency at the reference load (medians over seeds)")
    ax.legend(loc="lower right", fontsize="small")
    return fig


def _wait_figure(summary: Mapping[str, Mapping[float, SetupFigures]]) -> Figure:
    fig = _new_figure(10, 3.6)
    ax = fig.add_subplot()
    names = list(summary)
    width = 0.8 / len(names)
    for k, name in enumerate(names):
        f = _ref(summary[name])
        # Bars start at one second so a log axis can show a zero wait as (almost) nothing.
        values = [max(1.0, f.wait_by_size[s]["mean_s"]) for s in SIZE_CLASSES]
        ax.bar([i + k * width for i in range(len(SIZE_CLASSES))], values, width, label=name)
    ax.set_xticks([i + width * (len(names) - 1) / 2 for i in range(len(SIZE_CLASSES))])
    ax.set_xticklabels([f"{s} GPUs" for s in SIZE_CLASSES])
    ax.set_yscale("log")
    ax.set_ylabel("mean wait (s)")
    ax.set_title("queue wait by job size at the reference load")
    ax.legend(fontsize="small")
    return fig


def _cost_figure(summary: Mapping[str, Mapping[float, SetupFigures]]) -> Figure:
    fig = _new_figure(10, 3.6)
    ax = fig.add_subplot()
    for name, by_load in summary.items():
        points = [(load, f.cost_per_productive_gpu_hour) for load, f in sorted(by_load.items())]
        kept = [(load, c) for load, c in points if c is not None]
        if not kept:
            continue
        loads = [load for load, _ in kept]
        med = [c.median for _, c in kept]
        err = [[c.median - c.low for _, c in kept], [c.high - c.median for _, c in kept]]
        ax.errorbar(loads, med, yerr=err, marker="o", capsize=3, label=name)
    ax.set_xlabel("load (arrival rate x)")
    ax.set_ylabel("cost per productive GPU-hour")
    ax.set_title("cost per productive GPU-hour (median, spread over seeds)")
    ax.legend(fontsize="small")
    return fig
