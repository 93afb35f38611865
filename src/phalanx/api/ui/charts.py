"""Small inline SVG charts for the dashboard: lines over time and horizontal bars. Inline
SVG needs no script, no library and no request of its own; text in it is escaped."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from html import escape

from markupsafe import Markup

__all__ = ["bars", "lines"]

_PALETTE = ("#2b6cb0", "#c05621", "#2f855a", "#9b2c2c", "#6b46c1", "#b7791f", "#2c7a7b")


def _fmt(value: float) -> str:
    if value == 0 or 0.01 <= abs(value) < 10_000:
        return f"{value:.3g}" if abs(value) < 100 else f"{value:,.0f}"
    return f"{value:.2e}"


def lines(
    series: Mapping[str, Sequence[tuple[float, float]]],
    *,
    width: int = 640,
    height: int = 180,
    y_max: float | None = None,
    y_label: str = "",
    percent: bool = False,
) -> Markup:
    """One polyline per named series of (x, y) points (x: seconds, any origin), a shared y
    axis from 0 to ``y_max`` (default: the largest y), and a legend."""
    points = [p for s in series.values() for p in s]
    if not points:
        return Markup('<p class="muted">no samples yet</p>')
    x0 = min(x for x, _ in points)
    x1 = max(x for x, _ in points)
    top = y_max if y_max is not None else max(max(y for _, y in points), 1e-9)
    left, right, up, down = 48, 8, 8, 22
    w, h = width - left - right, height - up - down

    def sx(x: float) -> float:
        return left + (w * (x - x0) / (x1 - x0) if x1 > x0 else w)

    def sy(y: float) -> float:
        return up + h - h * min(max(y, 0.0), top) / top

    out = [
        f'<svg class="chart" viewBox="0 0 {width} {height}" width="{width}" height="{height}" '
        f'role="img" aria-label="{escape(y_label)}">',
        f'<line x1="{left}" y1="{up + h}" x2="{left + w}" y2="{up + h}" class="axis"/>',
        f'<line x1="{left}" y1="{up}" x2="{left}" y2="{up + h}" class="axis"/>',
    ]
    for frac in (0.0, 0.5, 1.0):
        value = top * frac
        text = f"{value * 100:.0f}%" if percent else _fmt(value)
        out.append(f'<text x="{left - 4}" y="{sy(value) + 4:.1f}" text-anchor="end">{text}</text>')
    span = x1 - x0
    out.append(
        f'<text x="{left + w}" y="{height - 6}" text-anchor="end">last {span / 60:.1f} min</text>'
    )
    for i, (name, pts) in enumerate(series.items()):
        colour = _PALETTE[i % len(_PALETTE)]
        path = " ".join(f"{sx(x):.1f},{sy(y):.1f}" for x, y in pts)
        out.append(f'<polyline fill="none" stroke="{colour}" stroke-width="2" points="{path}"/>')
        out.append(
            f'<text x="{left + 8 + 150 * i}" y="{height - 6}" fill="{colour}">{escape(name)}</text>'
        )
    out.append("</svg>")
    return Markup("".join(out))


def bars(
    values: Mapping[str, float],
    *,
    width: int = 520,
    unit: str = "",
    lower_is_better: bool = False,
) -> Markup:
    """One horizontal bar per name, scaled to the largest; the best (all tied for it) marked."""
    if not values:
        return Markup('<p class="muted">no figures</p>')
    finite = {k: v for k, v in values.items() if v == v}  # NaN-free
    top = max((abs(v) for v in finite.values()), default=0.0) or 1.0
    # Every name with the best value is marked: among ties, none is better than another.
    top_value = (min if lower_is_better else max)(finite.values()) if finite else None
    best = {k for k, v in finite.items() if top_value is not None and v == top_value}
    row, label = 22, 130
    height = row * len(values) + 4
    out = [f'<svg class="chart" viewBox="0 0 {width} {height}" width="{width}" height="{height}">']
    for i, (name, value) in enumerate(values.items()):
        y = 2 + row * i
        ok = value == value
        length = (width - label - 90) * abs(value) / top if ok else 0
        cls = "bar best" if name in best else "bar"
        shown = _fmt(value) + unit if ok else "n/a"
        out.append(
            f'<text x="{label - 6}" y="{y + 15}" text-anchor="end">{escape(name)}</text>'
            f'<rect class="{cls}" x="{label}" y="{y + 3}" width="{length:.1f}" height="{row - 6}"/>'
            f'<text x="{label + length + 4:.1f}" y="{y + 15}">{escape(shown)}</text>'
        )
    out.append("</svg>")
    return Markup("".join(out))
