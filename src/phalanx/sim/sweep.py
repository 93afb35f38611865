"""Sweeps: many independent runs of (setup, seed, load), serial, in processes or on Dask.

Each run is a pure function of its ``RunSpec`` (``run_one``): the workload is rebuilt from its
description (``WorkloadSource``) in whichever process runs it, the simulator is deterministic,
and the figures it returns leave out the wall-clock time (``RunFigures.wall_s`` is kept apart).
So ``run_sweep`` returns the same figures, in the specs' order, whether it runs them one after
another, on ``workers`` local processes (``concurrent.futures.ProcessPoolExecutor``, spawned
so no lock or thread of the caller is inherited) or on a Dask cluster
(``distributed.Client(address)``, the optional extra ``phalanx[dask]``).

Per run, beyond ``phalanx.sim.metrics``:

- productive GPU-hours by workload class ``c``: ``H = sum_c T_total,c x (1 - theta) x MFU_c``,
  ``T_total,c`` the GPU time held by the class's jobs (the metrics' ``T_total`` split by class)
  and ``theta`` the run's overhead share;
- serving SLO attainment: each serving replica job wants its GPUs for its runtime ``D`` from
  its submit; it misses ``max(0, wait - slo_wait) + requeue_wait`` of that (capped at ``D``; a
  replica that never started misses all of it); attainment is the met share of the summed
  ``D``. None without serving jobs.
"""

from __future__ import annotations

import dataclasses
import functools
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

from phalanx.domain.cluster import Cluster
from phalanx.domain.time import HOUR, SECOND, Duration
from phalanx.errors import ConfigError
from phalanx.sim.experiment import generated_workload
from phalanx.sim.metrics import PolicyMetrics, summarize
from phalanx.sim.mixes import Mix, mix_jobs
from phalanx.sim.records import JobRecord, RunRecord
from phalanx.sim.setups import SETUPS, merge_runs, peak_gpus, split_clusters
from phalanx.sim.simulator import Simulator
from phalanx.sim.traces import read_trace
from phalanx.sim.traces.options import TraceOptions
from phalanx.sim.workload import TraceJob

__all__ = [
    "ALL_CLASS",
    "RunFigures",
    "RunSpec",
    "WorkloadSource",
    "run_one",
    "run_sweep",
]

ALL_CLASS = "all"
"""The one workload class of a trace: its accounts are not classes of work."""


@dataclass(frozen=True)
class WorkloadSource:
    """How to build the workload for a (seed, load): a trace, the generator or a mix."""

    kind: str
    """"trace", "generate" or "mix"."""
    path: str | None = None
    fmt: str | None = None
    limit: int | None = None
    window: tuple[int, int] | None = None
    days: float | None = None
    mix: Mix | None = None
    label: str = ""

    def classes(self) -> tuple[str, ...]:
        """The workload classes (accounts of their jobs); ``(ALL_CLASS,)`` for a trace."""
        if self.mix is not None:
            return self.mix.class_names()
        if self.kind == "generate":
            from phalanx.sim.generator import DEFAULT_ACCOUNTS

            return DEFAULT_ACCOUNTS
        return (ALL_CLASS,)

    def serving_classes(self) -> tuple[str, ...]:
        return () if self.mix is None else self.mix.serving_classes()

    def class_of(self, account: str) -> str:
        classes = self.classes()
        return account if account in classes else ALL_CLASS

    def jobs(self, seed: int, load: float) -> list[TraceJob]:
        """The workload for ``seed`` with arrival rates times ``load`` (cached per process)."""
        return _jobs(self, seed, load)


@functools.lru_cache(maxsize=32)
def _jobs(source: WorkloadSource, seed: int, load: float) -> list[TraceJob]:
    if source.kind == "mix":
        assert source.mix is not None
        return mix_jobs(source.mix, seed, load)
    options = TraceOptions(source.limit, source.window, load, seed)
    if source.kind == "generate":
        assert source.days is not None
        return generated_workload(source.days, options).jobs
    if source.kind == "trace":
        # Read once per seed; a load divides the rebased submit times as ``TraceOptions.load``
        # does (``traces.options.select``), so the jobs are the same as reading at that load.
        base = _trace(source, seed)
        return base if load == 1 else [replace(j, submit=int(j.submit / load)) for j in base]
    raise ConfigError(f"unknown workload kind {source.kind!r}")


@functools.lru_cache(maxsize=8)
def _trace(source: WorkloadSource, seed: int) -> list[TraceJob]:
    assert source.path is not None
    return read_trace(source.path, source.fmt, TraceOptions(source.limit, source.window, 1, seed))


@dataclass(frozen=True)
class RunSpec:
    """One run of a sweep."""

    source: WorkloadSource
    cluster: Cluster
    setup: str
    seed: int
    load: float
    mfu: tuple[tuple[str, float], ...] = ()
    """MFU by workload class; classes not named get ``default_mfu``."""
    default_mfu: float = 0.4
    slo_wait_ms: Duration = 60 * SECOND
    split_serving_gpus: float | None = None
    """GPUs the split's serving side is sized for (static across loads); None: this run's
    serving peak."""


@dataclass(frozen=True)
class RunFigures:
    """What one run measured; equal for equal specs, wherever it ran (``wall_s`` aside)."""

    setup: str
    seed: int
    load: float
    metrics: PolicyMetrics
    """With ``sim_wall_s`` and ``jobs_per_s`` zeroed: they measure the machine."""
    productive_gpu_hours: float
    gpu_hours_by_class: dict[str, float]
    jct_mean_s_by_class: dict[str, float]
    slo_attainment: float | None
    serving_nodes: int | None = None
    """The split's serving side, in nodes."""
    wall_s: float = field(default=0.0, compare=False)


def run_one(spec: RunSpec) -> RunFigures:
    """Simulate ``spec``; a pure function of it (module docstring)."""
    wall0 = time.perf_counter()
    source = spec.source
    jobs = source.jobs(spec.seed, spec.load)
    chosen = SETUPS[spec.setup]
    serving_nodes = None
    if chosen.split:
        serving_names = set(source.serving_classes())
        serving = [j for j in jobs if j.spec.account in serving_names]
        training = [j for j in jobs if j.spec.account not in serving_names]
        sized_for = spec.split_serving_gpus
        train_cluster, serve_cluster = split_clusters(
            spec.cluster, peak_gpus(serving) if sized_for is None else sized_for
        )
        serving_nodes = len(serve_cluster.nodes)
        train_profile, serve_profile = chosen.profiles()
        record = merge_runs(
            chosen.name,
            _simulate(train_cluster, train_profile.name, training, spec.default_mfu),
            _simulate(serve_cluster, serve_profile.name, serving, spec.default_mfu),
        )
    else:
        record = _simulate(spec.cluster, chosen.profile, jobs, spec.default_mfu)
    metrics = dataclasses.replace(
        summarize(record), policy=chosen.name, sim_wall_s=0.0, jobs_per_s=0.0
    )
    held = _held_by_class(record.jobs, source)
    mfu = dict(spec.mfu)
    productive = sum(
        hours * (1 - metrics.theta_overhead) * mfu.get(cls, spec.default_mfu)
        for cls, hours in held.items()
    )
    return RunFigures(
        setup=spec.setup,
        seed=spec.seed,
        load=spec.load,
        metrics=metrics,
        productive_gpu_hours=productive,
        gpu_hours_by_class=held,
        jct_mean_s_by_class=_jct_by_class(record.jobs, source),
        slo_attainment=_slo(record.jobs, set(source.serving_classes()), spec.slo_wait_ms),
        serving_nodes=serving_nodes,
        wall_s=time.perf_counter() - wall0,
    )


def _simulate(cluster: Cluster, profile_name: str, jobs: list[TraceJob], mfu: float) -> RunRecord:
    from phalanx.policies.catalog import profile

    return Simulator(cluster, profile(profile_name), jobs, mfu=mfu, keep_segments=False).run()


def _held_by_class(jobs: Sequence[JobRecord], source: WorkloadSource) -> dict[str, float]:
    """GPU-hours held by the (not rejected) jobs of each class, every class present."""
    out = dict.fromkeys(source.classes(), 0.0)
    for j in jobs:
        if j.rejected is not None:
            continue
        held = (
            j.compute_gpu_ms
            + j.gang_wait_gpu_ms
            + j.launch_gpu_ms
            + j.evict_gpu_ms
            + j.cleanup_gpu_ms
            + j.lost_gpu_ms
        )
        cls = source.class_of(j.account)
        out[cls] = out.get(cls, 0.0) + held / HOUR
    return out


def _jct_by_class(jobs: Sequence[JobRecord], source: WorkloadSource) -> dict[str, float]:
    sums: dict[str, list[float]] = {cls: [] for cls in source.classes()}
    for j in jobs:
        if j.rejected is None and j.end is not None:
            sums.setdefault(source.class_of(j.account), []).append((j.end - j.submit) / SECOND)
    return {cls: (sum(v) / len(v) if v else 0.0) for cls, v in sums.items()}


def _slo(jobs: Sequence[JobRecord], serving: set[str], slo_wait_ms: Duration) -> float | None:
    wanted = met = 0
    for j in jobs:
        if j.account not in serving:
            continue
        wanted += j.runtime_ms
        if j.first_start is None:
            continue
        late = max(0, j.first_start - j.submit - slo_wait_ms) + j.requeue_wait_ms
        met += max(0, j.runtime_ms - late)
    return None if wanted == 0 else met / wanted


# -- running many -----------------------------------------------------------------------------


def run_sweep(
    specs: Sequence[RunSpec],
    *,
    workers: int = 1,
    dask: str | None = None,
    done: Callable[[RunFigures], None] | None = None,
) -> list[RunFigures]:
    """Every spec's figures, in the order of ``specs``.

    ``workers`` > 1 runs them on that many local processes; ``dask`` (a scheduler address)
    runs them on that Dask cluster instead. ``done`` is called with each run's figures as it
    finishes (in finishing order).
    """
    report: Callable[[RunFigures], None] = done or (lambda _f: None)
    if dask is not None:
        return _on_dask(specs, dask, report)
    if workers <= 1:
        out = []
        for spec in specs:
            out.append(run_one(spec))
            report(out[-1])
        return out
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor, as_completed

    with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn")) as pool:
        futures = {pool.submit(run_one, spec): k for k, spec in enumerate(specs)}
        results: list[RunFigures | None] = [None] * len(specs)
        for future in as_completed(futures):
            results[futures[future]] = future.result()
            report(future.result())
    return [r for r in results if r is not None]


def _on_dask(
    specs: Sequence[RunSpec], address: str, report: Callable[[RunFigures], None]
) -> list[RunFigures]:
    try:
        from distributed import Client, as_completed
    except ImportError:
        raise ConfigError(
            "needs dask.distributed: pip install 'phalanx[dask]'", field="--dask"
        ) from None
    try:
        client = Client(address, timeout="10s")  # type: ignore[no-untyped-call]
    except OSError as exc:
        raise ConfigError(
            f"cannot reach the Dask scheduler at {address}: {exc}", field="--dask"
        ) from None
    try:
        # pure=False: equal specs are still separate runs (and separate progress reports).
        futures = client.map(run_one, list(specs), pure=False)
        index = {f.key: k for k, f in enumerate(futures)}
        results: list[RunFigures | None] = [None] * len(specs)
        for future in as_completed(futures):  # type: ignore[no-untyped-call]
            figures: RunFigures = future.result()
            results[index[future.key]] = figures
            report(figures)
        return [r for r in results if r is not None]
    finally:
        client.close()  # type: ignore[no-untyped-call]
