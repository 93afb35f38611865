"""A sweep of 100 ``phalanx advise`` runs, serial and on ``--workers`` processes: identical
results, and the speed-up.

The runs: the test suite's tiny mix (``phalanx.testing.mixes``) stretched to ``--days`` days
on 8 nodes x 8 GPUs, 5 set-ups (slurm, k8s, kueue, split, phalanx) x 4 loads (0.8, 1.0, 1.2,
1.4) x 5 seeds = 100 runs. The serial sweep runs first, then the parallel one (``run_sweep``
with ``workers``: spawned processes, their start-up included in the time). "identical" compares
every run's figures (``RunFigures`` equality: every metric, in order) and the bytes of their
JSON. Wall times are of the whole sweep, with CPU times beside them (the serial process's,
the workers'); the machine's CPU count and load average are printed too, as a shared machine
slows both sweeps.

    .venv/bin/python bench/advise_sweep.py [--workers N] [--days D]
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import resource
import time

from phalanx.config.clusterspec import regular_cluster
from phalanx.domain.time import SECOND
from phalanx.sim.metrics import to_json_dict
from phalanx.sim.sweep import RunFigures, RunSpec, WorkloadSource, run_sweep
from phalanx.testing.mixes import TINY_CLUSTER, tiny_mix

SETUPS = ("slurm", "k8s", "kueue", "split", "phalanx")
LOADS = (0.8, 1.0, 1.2, 1.4)
SEEDS = 5


def _specs(days: float) -> list[RunSpec]:
    mix = dataclasses.replace(tiny_mix(), days=days)
    source = WorkloadSource("mix", mix=mix, label=f"tiny mix, {days:g} days")
    cluster = regular_cluster(*TINY_CLUSTER)
    return [
        RunSpec(source, cluster, name, seed, load, (), 0.4, 60 * SECOND)
        for name in SETUPS
        for load in LOADS
        for seed in range(SEEDS)
    ]


def _json(runs: list[RunFigures]) -> str:
    return json.dumps(
        [
            [r.setup, r.seed, r.load, r.productive_gpu_hours, r.slo_attainment,
             to_json_dict(r.metrics)]
            for r in runs
        ],
        sort_keys=True,
    )  # fmt: skip


def _children_cpu() -> float:
    """CPU seconds of this process's finished children (the pool's workers, once joined)."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--days", type=float, default=2.0)
    args = parser.parse_args()
    specs = _specs(args.days)
    jobs = len(specs[0].source.jobs(0, 1.0))
    print(
        f"{len(specs)} runs: {len(SETUPS)} set-ups x {len(LOADS)} loads x {SEEDS} seeds, "
        f"tiny mix of {args.days:g} days ({jobs:,} jobs at load 1, seed 0) on "
        f"{TINY_CLUSTER[0]} nodes x {TINY_CLUSTER[1]} GPUs"
    )
    print(f"machine: {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f} at start")
    t0, cpu0 = time.perf_counter(), time.process_time()
    serial = run_sweep(specs)
    serial_s, serial_cpu = time.perf_counter() - t0, time.process_time() - cpu0
    children0 = _children_cpu()
    t0 = time.perf_counter()
    parallel = run_sweep(specs, workers=args.workers)
    parallel_s, parallel_cpu = time.perf_counter() - t0, _children_cpu() - children0
    same = serial == parallel and _json(serial) == _json(parallel)
    print(f"serial:          {serial_s:7.1f} s wall, {serial_cpu:6.1f} s CPU")
    print(f"--workers {args.workers}:     {parallel_s:7.1f} s wall, {parallel_cpu:6.1f} s CPU")
    print(f"speed-up:        {serial_s / parallel_s:7.2f}x")
    print(f"identical:       {'yes' if same else 'NO'} ({len(serial)} runs compared)")
    print(f"load average {os.getloadavg()[0]:.2f} at end")


if __name__ == "__main__":
    main()
