"""Sweeps: each run a pure function of its spec; serial, process and Dask sweeps agree."""

from __future__ import annotations

import dataclasses
import warnings

import pytest

from phalanx.config.clusterspec import regular_cluster
from phalanx.domain.time import SECOND
from phalanx.sim.sweep import RunSpec, WorkloadSource, run_one, run_sweep
from phalanx.testing.mixes import TINY_CLUSTER, tiny_mix


def _specs(setups: tuple[str, ...] = ("slurm", "k8s", "split"), seeds: int = 2) -> list[RunSpec]:
    source = WorkloadSource("mix", mix=tiny_mix(), label="tiny")
    cluster = regular_cluster(*TINY_CLUSTER)
    return [
        RunSpec(source, cluster, name, seed, load, (("pretrain", 0.5),), 0.4, 60 * SECOND)
        for name in setups
        for load in (1.0, 1.5)
        for seed in range(seeds)
    ]


def test_a_run_is_a_pure_function_of_its_spec() -> None:
    spec = _specs(("k8s",), 1)[0]
    first, again = run_one(spec), run_one(spec)
    assert first == again  # wall_s is left out of the comparison
    assert first.metrics.sim_wall_s == 0 and first.metrics.jobs_per_s == 0
    other = run_one(dataclasses.replace(spec, seed=7))
    assert other.metrics != first.metrics


def test_productive_hours_weigh_each_class_by_its_mfu() -> None:
    spec = _specs(("slurm",), 1)[0]
    run = run_one(spec)
    keep = 1 - run.metrics.theta_overhead
    held = run.gpu_hours_by_class
    assert set(held) == {"pretrain", "finetune", "chat"}
    expected = keep * (0.5 * held["pretrain"] + 0.4 * held["finetune"] + 0.4 * held["chat"])
    assert run.productive_gpu_hours == pytest.approx(expected)
    assert held["pretrain"] > 0 and held["chat"] > 0


def test_serving_slo_counts_late_replica_time() -> None:
    spec = _specs(("slurm",), 1)[0]
    met = run_one(spec).slo_attainment
    assert met is not None and 0 < met <= 1
    # Asking for replicas to start at once can only lower the attainment.
    strict = run_one(dataclasses.replace(spec, slo_wait_ms=0, load=3.0))
    loose = run_one(dataclasses.replace(spec, slo_wait_ms=24 * 3600 * SECOND, load=3.0))
    assert strict.slo_attainment is not None and loose.slo_attainment is not None
    assert strict.slo_attainment <= loose.slo_attainment
    trace_like = dataclasses.replace(spec.source, mix=None, kind="generate", days=0.05)
    assert run_one(dataclasses.replace(spec, source=trace_like)).slo_attainment is None


def test_the_split_runs_serving_on_its_own_nodes() -> None:
    split = run_one(_specs(("split",), 1)[0])
    assert split.serving_nodes is not None and 0 < split.serving_nodes < TINY_CLUSTER[0]
    assert split.metrics.jobs == run_one(_specs(("slurm",), 1)[0]).metrics.jobs


def test_workers_give_the_serial_results_in_the_same_order() -> None:
    specs = _specs()
    serial = run_sweep(specs)
    seen: list[str] = []
    parallel = run_sweep(specs, workers=2, done=lambda f: seen.append(f.setup))
    assert parallel == serial
    assert [(r.setup, r.seed, r.load) for r in parallel] == [
        (s.setup, s.seed, s.load) for s in specs
    ]
    assert sorted(seen) == sorted(s.setup for s in specs)


def test_a_dask_cluster_gives_the_serial_results() -> None:
    distributed = pytest.importorskip("distributed")
    specs = _specs(("slurm", "split"), 2)
    serial = run_sweep(specs)
    with warnings.catch_warnings():
        # The cluster's own start-up and shutdown chatter is not ours to fail on.
        warnings.simplefilter("ignore")
        with distributed.LocalCluster(
            n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None
        ) as cluster:
            on_dask = run_sweep(specs, dask=cluster.scheduler_address)
    assert on_dask == serial


def test_a_static_split_keeps_its_size_at_every_load() -> None:
    spec = dataclasses.replace(_specs(("split",), 1)[0], split_serving_gpus=8.0)
    sizes = {run_one(dataclasses.replace(spec, load=load)).serving_nodes for load in (0.5, 2.0)}
    assert sizes == {1}
