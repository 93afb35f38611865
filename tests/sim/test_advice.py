"""Advice: medians and spread over seeds, the recommendation rule and its reasons, the claims."""

from __future__ import annotations

import statistics

from phalanx.config.clusterspec import regular_cluster
from phalanx.domain.time import SECOND
from phalanx.sim.advice import (
    COST_TIE,
    SetupFigures,
    Stat,
    check_claims,
    recommend,
    reference_load,
    summarise,
)
from phalanx.sim.metrics import SIZE_CLASSES
from phalanx.sim.sweep import RunSpec, WorkloadSource, run_sweep
from phalanx.testing.mixes import TINY_CLUSTER, tiny_mix


def _figures(
    name: str, cost: float, jct: float, slo: float | None = None, load: float = 1.0
) -> SetupFigures:
    one = Stat(0.9, 0.9, 0.9)
    waits = {s: {"jobs": 1.0, "mean_s": 0.0, "p95_s": 0.0} for s in SIZE_CLASSES}
    return SetupFigures(
        setup=name,
        load=load,
        seeds=3,
        eta_sched=one,
        theta_overhead=Stat(0.01, 0.01, 0.01),
        utilization=one,
        jct_mean_s=Stat(jct, jct, jct),
        makespan_s=Stat(1e5, 1e5, 1e5),
        productive_gpu_hours=Stat(100, 90, 110),
        cost_per_productive_gpu_hour=Stat(cost, cost, cost),
        slo_attainment=None if slo is None else Stat(slo, slo, slo),
        wait_by_size=waits,
        jct_mean_s_by_class={},
        gpu_hours_by_class={"train": 900.0, "serve": 100.0},
        rejected=0,
        unfinished=0,
        serving_nodes=None,
    )


def test_summaries_are_medians_and_spreads_of_the_runs() -> None:
    source = WorkloadSource("mix", mix=tiny_mix(), label="tiny")
    cluster = regular_cluster(*TINY_CLUSTER)
    specs = [
        RunSpec(source, cluster, name, seed, 1.0, (), 0.4, 60 * SECOND)
        for name in ("slurm", "k8s")
        for seed in range(3)
    ]
    runs = run_sweep(specs)
    summary = summarise(runs, 2.0, cluster.total_gpus)
    assert list(summary) == ["slurm", "k8s"]
    for name, by_load in summary.items():
        f = by_load[1.0]
        mine = [r for r in runs if r.setup == name]
        etas = [r.metrics.eta_sched for r in mine]
        assert f.seeds == 3
        assert f.eta_sched == Stat(statistics.median(etas), min(etas), max(etas))
        costs = [2.0 * 64 * r.metrics.makespan_s / 3600 / r.productive_gpu_hours for r in mine]
        assert f.cost_per_productive_gpu_hour is not None
        assert f.cost_per_productive_gpu_hour.median == statistics.median(costs)
        assert f.slo_attainment is not None
        waits = [r.metrics.wait_by_size["9-64"].mean_s for r in mine]
        assert f.wait_by_size["9-64"]["mean_s"] == statistics.median(waits)


def test_the_cheapest_wins_unless_another_is_tied_and_faster() -> None:
    clear = {"a": {1.0: _figures("a", 2.0, 500)}, "b": {1.0: _figures("b", 3.0, 100)}}
    rec = recommend(clear, 0.99)
    assert rec.setup == "a"
    assert any("2.000 per productive GPU-hour" in r for r in rec.reasons)
    assert any(r.startswith("b: 3.000 per productive GPU-hour (+50.0 %)") for r in rec.reasons)
    tied_cost = 2.0 * (1 + COST_TIE / 2)
    tied = {"a": {1.0: _figures("a", 2.0, 500)}, "b": {1.0: _figures("b", tied_cost, 100)}}
    rec = recommend(tied, 0.99)
    assert rec.setup == "b"
    assert any("lowest mean JCT decides" in r for r in rec.reasons)


def test_a_setup_missing_the_slo_at_any_load_is_not_recommended() -> None:
    summary = {
        "cheap": {1.0: _figures("cheap", 1.0, 100, 0.999), 1.3: _figures("cheap", 1.0, 100, 0.9)},
        "safe": {1.0: _figures("safe", 2.0, 200, 1.0), 1.3: _figures("safe", 2.0, 200, 0.995)},
    }
    rec = recommend(summary, 0.99)
    assert rec.setup == "safe"
    against = next(r for r in rec.reasons if r.startswith("cheap:"))
    assert "serving SLO attainment falls to 90.0 % at load 1.3" in against
    assert "better: mean JCT" in against
    assert rec.reasons[0] == "train drives it: 90.0 % of the 1,000 GPU-hours held"


def test_reference_load_is_the_one_nearest_one() -> None:
    assert reference_load([0.7, 1.3]) == 0.7
    assert reference_load([0.5, 0.9, 1.2]) == 0.9
    assert reference_load([2.0]) == 2.0


def test_claims_are_checked_against_the_medians() -> None:
    summary = {"slurm": {1.0: _figures("slurm", 1, 1)}, "k8s": {1.0: _figures("k8s", 1, 1)}}
    claims = {c.claim: c for c in check_claims(summary)}
    assert claims["Slurm eta_sched above 92 %"].holds is False  # 90 %
    assert claims["vanilla Kubernetes eta_sched below 60 %"].holds is False
    assert claims["Slurm theta_overhead below 4 %"].holds is True  # 1 %
    assert claims["vanilla Kubernetes theta_overhead 20-30 %"].measured == 0.01
    only = check_claims({"slurm": summary["slurm"]})
    assert [c.holds for c in only if c.setup == "k8s"] == [None, None]
