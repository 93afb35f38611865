"""Advice: a sweep's runs summed up per set-up, a recommendation with its reasons, the claims.

``summarise`` groups the runs (``phalanx.sim.sweep.RunFigures``) by set-up and load and takes,
over the seeds, the median and the spread (lowest, highest) of each figure; the cost per
productive GPU-hour of a run is ``price x GPUs x makespan[h] / H`` (the whole cluster is paid
for over the run's span, ``H`` the run's productive GPU-hours).

``recommend`` applies one rule, at the reference load (the load nearest 1):

1. with serving load, only set-ups whose median SLO attainment reaches ``slo_target`` at every
   load are eligible (none reaching it: those with the best worst-load attainment);
2. the cheapest per productive GPU-hour wins; set-ups within ``COST_TIE`` of it are tied and
   the lowest mean JCT among them wins.

Its reasons quote the numbers: the workload class holding most GPU-hours, the winner's cost,
JCT, eta_sched and theta, and for every other set-up what is worse under it, largest first.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from phalanx.sim.metrics import SIZE_CLASSES
from phalanx.sim.report import format_duration_s
from phalanx.sim.sweep import RunFigures

__all__ = [
    "COST_TIE",
    "Advice",
    "Claim",
    "Recommendation",
    "SetupFigures",
    "Stat",
    "check_claims",
    "recommend",
    "reference_load",
    "summarise",
]

COST_TIE = 0.02
"""Costs within 2 % of the cheapest are a tie, settled by mean JCT."""
_NOISE = 0.005
"""Differences of cost or mean JCT under 0.5 % are not given as reasons either way."""


@dataclass(frozen=True, slots=True)
class Stat:
    """A figure over seeds: median and spread."""

    median: float
    low: float
    high: float

    @staticmethod
    def of(values: Sequence[float]) -> Stat:
        return Stat(float(statistics.median(values)), float(min(values)), float(max(values)))


@dataclass(frozen=True)
class SetupFigures:
    """One set-up at one load, over its seeds."""

    setup: str
    load: float
    seeds: int
    eta_sched: Stat
    theta_overhead: Stat
    utilization: Stat
    jct_mean_s: Stat
    makespan_s: Stat
    productive_gpu_hours: Stat
    cost_per_productive_gpu_hour: Stat | None
    slo_attainment: Stat | None
    wait_by_size: Mapping[str, Mapping[str, float]]
    """Size class -> median over seeds of jobs, mean_s and p95_s."""
    jct_mean_s_by_class: Mapping[str, Stat]
    gpu_hours_by_class: Mapping[str, float]
    """Median GPU-hours held per workload class."""
    rejected: float
    unfinished: float
    serving_nodes: int | None
    jct_by_size: Mapping[str, float] = field(default_factory=dict)
    """Size class -> median over seeds of the mean JCT (s) of its finished jobs."""


def summarise(
    runs: Sequence[RunFigures], price: float, total_gpus: int
) -> dict[str, dict[float, SetupFigures]]:
    """Set-up -> load -> figures over seeds, in the runs' order of set-ups and loads."""
    groups: dict[str, dict[float, list[RunFigures]]] = {}
    for run in runs:
        groups.setdefault(run.setup, {}).setdefault(run.load, []).append(run)
    return {
        name: {load: _figures(name, load, group, price, total_gpus) for load, group in by.items()}
        for name, by in groups.items()
    }


def _figures(
    name: str, load: float, runs: Sequence[RunFigures], price: float, total_gpus: int
) -> SetupFigures:
    ms = [r.metrics for r in runs]
    costs = [
        price * total_gpus * m.makespan_s / 3600 / r.productive_gpu_hours
        for r, m in zip(runs, ms, strict=True)
        if r.productive_gpu_hours > 0
    ]
    slos = [r.slo_attainment for r in runs if r.slo_attainment is not None]
    classes = list(runs[0].jct_mean_s_by_class)
    return SetupFigures(
        setup=name,
        load=load,
        seeds=len(runs),
        eta_sched=Stat.of([m.eta_sched for m in ms]),
        theta_overhead=Stat.of([m.theta_overhead for m in ms]),
        utilization=Stat.of([m.utilization for m in ms]),
        jct_mean_s=Stat.of([m.jct_mean_s for m in ms]),
        makespan_s=Stat.of([m.makespan_s for m in ms]),
        productive_gpu_hours=Stat.of([r.productive_gpu_hours for r in runs]),
        cost_per_productive_gpu_hour=Stat.of(costs) if costs else None,
        slo_attainment=Stat.of(slos) if slos else None,
        wait_by_size={
            size: {
                key: float(statistics.median(getattr(m.wait_by_size[size], key) for m in ms))
                for key in ("jobs", "mean_s", "p95_s")
            }
            for size in SIZE_CLASSES
        },
        jct_mean_s_by_class={
            c: Stat.of([r.jct_mean_s_by_class.get(c, 0.0) for r in runs]) for c in classes
        },
        jct_by_size={
            size: float(statistics.median(m.jct_by_size.get(size, 0.0) for m in ms))
            for size in SIZE_CLASSES
        },
        gpu_hours_by_class={
            c: float(statistics.median(r.gpu_hours_by_class.get(c, 0.0) for r in runs))
            for c in runs[0].gpu_hours_by_class
        },
        rejected=float(statistics.median(m.rejected for m in ms)),
        unfinished=float(statistics.median(m.unfinished for m in ms)),
        serving_nodes=runs[0].serving_nodes,
    )


def reference_load(loads: Sequence[float]) -> float:
    """The load nearest 1 (the lower of two equally near)."""
    return min(loads, key=lambda x: (abs(x - 1.0), x))


@dataclass(frozen=True)
class Recommendation:
    setup: str
    reasons: list[str]


def recommend(
    summary: Mapping[str, Mapping[float, SetupFigures]], slo_target: float
) -> Recommendation:
    """The rule of the module docstring, with its reasons in numbers."""
    loads = sorted({load for by in summary.values() for load in by})
    ref = reference_load(loads)
    at = {name: by[ref] for name, by in summary.items() if ref in by}
    reasons: list[str] = []
    eligible = list(at)
    serving = any(f.slo_attainment is not None for f in at.values())
    if serving:
        worst = {name: _worst_slo(summary[name]) for name in at}
        eligible = [n for n in at if worst[n] >= slo_target]
        if not eligible:
            best_slo = max(worst.values())
            eligible = [n for n in at if worst[n] == best_slo]
            reasons.append(
                f"no set-up keeps serving SLO attainment at {_pct(slo_target)} at every load; "
                f"the best worst-load attainment is {_pct(best_slo)}"
            )
    cheapest = min(eligible, key=lambda n: (_cost(at[n]), at[n].jct_mean_s.median, n))
    tied = [n for n in eligible if _cost(at[n]) <= _cost(at[cheapest]) * (1 + COST_TIE)]
    best = min(tied, key=lambda n: (at[n].jct_mean_s.median, _cost(at[n]), n))
    win = at[best]
    reasons.append(_driver(win))
    reasons.append(
        f"{best} at load {ref:g}: {_money(_cost(win))} per productive GPU-hour, mean JCT "
        f"{_duration(win.jct_mean_s.median)}, eta_sched {_pct(win.eta_sched.median)}, "
        f"theta {_pct(win.theta_overhead.median)}, utilisation {_pct(win.utilization.median)}"
        + (
            f", SLO attainment {_pct(win.slo_attainment.median)}"
            if win.slo_attainment is not None
            else ""
        )
        + (f" (median of {win.seeds} seeds)" if win.seeds > 1 else " (one seed)")
    )
    if len(tied) > 1:
        others = ", ".join(f"{n} {_money(_cost(at[n]))}" for n in tied if n != best)
        reasons.append(
            f"cost is within {_pct(COST_TIE, 0)} of the cheapest for {others}: the lowest mean "
            f"JCT decides"
        )
    for name in at:
        if name != best:
            reasons.append(_against(name, at[name], win, summary, slo_target))
    return Recommendation(best, reasons)


def _cost(f: SetupFigures) -> float:
    c = f.cost_per_productive_gpu_hour
    return float("inf") if c is None else c.median


def _worst_slo(by_load: Mapping[float, SetupFigures]) -> float:
    return min(
        (f.slo_attainment.median for f in by_load.values() if f.slo_attainment is not None),
        default=1.0,
    )


def _driver(win: SetupFigures) -> str:
    held = win.gpu_hours_by_class
    total = sum(held.values())
    if total <= 0:
        return "the workload held no GPU time"
    top = max(held, key=lambda c: (held[c], c))
    if len(held) == 1:
        return f"one workload class ({top}): {total:,.0f} GPU-hours held"
    return f"{top} drives it: {_pct(held[top] / total)} of the {total:,.0f} GPU-hours held"


def _against(
    name: str,
    f: SetupFigures,
    win: SetupFigures,
    summary: Mapping[str, Mapping[float, SetupFigures]],
    slo_target: float,
) -> str:
    """What is worse under ``name`` than under the winner, largest first."""
    issues: list[tuple[float, str]] = []
    if f.slo_attainment is not None and win.slo_attainment is not None:
        worst = _worst_slo(summary[name])
        if worst < slo_target:
            loads = summary[name]
            at = min(loads, key=lambda x: _slo_at(loads[x]))
            issues.append(
                (
                    1e9,
                    f"serving SLO attainment falls to {_pct(worst)} at load {at:g} "
                    f"(target {_pct(slo_target)})",
                )
            )
    cost, best_cost = _cost(f), _cost(win)
    if best_cost > 0 and cost > best_cost * (1 + _NOISE):
        issues.append(
            (
                cost / best_cost - 1,
                f"{_money(cost)} per productive GPU-hour (+{_pct(cost / best_cost - 1)})",
            )
        )
    jct, best_jct = f.jct_mean_s.median, win.jct_mean_s.median
    if best_jct > 0 and jct > best_jct * (1 + _NOISE):
        issues.append(
            (
                jct / best_jct - 1,
                f"mean JCT {_duration(jct)} against {_duration(best_jct)} "
                f"(+{_pct(jct / best_jct - 1)})",
            )
        )
    size, ratio = _worst_size(f, win)
    if size is not None:
        issues.append(
            (
                ratio - 1,
                f"jobs of {size} GPU{'' if size == '1' else 's'} wait "
                f"{format_duration_s(f.wait_by_size[size]['mean_s'])} "
                f"on average against "
                f"{format_duration_s(win.wait_by_size[size]['mean_s'])}",
            )
        )
    gap = win.eta_sched.median - f.eta_sched.median
    if gap > 0.005:
        issues.append(
            (
                gap * 10,
                f"eta_sched {_pct(f.eta_sched.median)} and theta "
                f"{_pct(f.theta_overhead.median)} (gangs holding GPUs while they wait)",
            )
        )
    better = []
    if best_jct > 0 and jct < best_jct * (1 - _NOISE):
        better.append(f"mean JCT {_duration(jct)} against {_duration(best_jct)}")
    if cost < best_cost * (1 - _NOISE):
        better.append(f"{_money(cost)} per productive GPU-hour against {_money(best_cost)}")
    though = f" (better: {'; '.join(better)})" if better else ""
    if not issues:
        return (
            f"{name}: cost {_money(cost)} and mean JCT {_duration(jct)}, within "
            f"{_pct(_NOISE)} of {win.setup}'s{though}"
        )
    issues.sort(key=lambda item: -item[0])
    return f"{name}: " + "; ".join(text for _, text in issues[:3]) + though


def _slo_at(f: SetupFigures) -> float:
    return 1.0 if f.slo_attainment is None else f.slo_attainment.median


def _worst_size(f: SetupFigures, win: SetupFigures) -> tuple[str | None, float]:
    """The size class whose mean wait grew the most (at least 1.5x and 10 minutes)."""
    worst: tuple[str | None, float] = (None, 1.0)
    for size in SIZE_CLASSES:
        ours, theirs = f.wait_by_size[size]["mean_s"], win.wait_by_size[size]["mean_s"]
        if ours - theirs < 600:
            continue
        ratio = ours / max(theirs, 60.0)
        if ratio >= 1.5 and ratio > worst[1]:
            worst = (size, ratio)
    return worst


def _duration(seconds: float) -> str:
    """A mean JCT: hours with two decimals (set-ups often differ by minutes), else as usual."""
    return f"{seconds / 3600:,.2f} h" if seconds >= 3600 else format_duration_s(seconds)


def _pct(x: float, digits: int = 1) -> str:
    return f"{100 * x:.{digits}f} %"


def _money(x: float) -> str:
    return "n/a" if x == float("inf") else f"{x:,.3f}"


# -- the common claims ------------------------------------------------------------------------


@dataclass(frozen=True)
class Claim:
    claim: str
    setup: str
    figure: str
    measured: float | None
    """Median at the reference load; None when the set-up was not run."""
    low: float
    high: float
    """The claimed range."""

    @property
    def holds(self) -> bool | None:
        if self.measured is None:
            return None
        return self.low <= self.measured <= self.high


_CLAIMS = (
    ("Slurm eta_sched above 92 %", "slurm", "eta_sched", 0.92, 1.0),
    ("vanilla Kubernetes eta_sched below 60 %", "k8s", "eta_sched", 0.0, 0.60),
    ("Slurm theta_overhead below 4 %", "slurm", "theta_overhead", 0.0, 0.04),
    ("vanilla Kubernetes theta_overhead 20-30 %", "k8s", "theta_overhead", 0.20, 0.30),
)


def check_claims(summary: Mapping[str, Mapping[float, SetupFigures]]) -> list[Claim]:
    """The usual rules of thumb, against the medians at the reference load."""
    out = []
    for text, name, figure, low, high in _CLAIMS:
        by = summary.get(name)
        measured = None
        if by:
            stat: Stat = getattr(by[reference_load(list(by))], figure)
            measured = stat.median
        out.append(Claim(text, name, figure, measured, low, high))
    return out


@dataclass(frozen=True)
class Advice:
    """Everything ``phalanx advise`` reports."""

    summary: dict[str, dict[float, SetupFigures]]
    recommendation: Recommendation
    claims: list[Claim]
    runs: list[RunFigures]
    context: dict[str, object]
    """What was run: workload, cluster, loads, seeds, price, MFU, SLO settings, notes."""
