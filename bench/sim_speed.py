"""Simulator throughput: replay the Philly trace and report jobs simulated per wall second.

The workload and cluster come from ``phalanx.sim.experiment``; only ``Simulator.run()`` is timed
(the experiment runner would time more than the simulation); reading the trace is timed and
printed apart. Each policy is run ``--repeat`` times on a fresh simulator; the verdict uses the
median jobs/s against the target (>= 2,000 jobs/s). The script is a measurement: it exits 0
whether the target is met or not, and prints PASS or FAIL.

    .venv/bin/python bench/sim_speed.py [--limit N] [--repeat N] [--policy NAME ...]
"""

from __future__ import annotations

import argparse
import os
import shlex
import statistics
import sys
import time
from pathlib import Path

from phalanx.policies.catalog import POLICIES, profile
from phalanx.sim.experiment import trace_workload, uniform_cluster
from phalanx.sim.simulator import Simulator
from phalanx.sim.traces.options import TraceOptions

TARGET_JOBS_PER_S = 2_000.0
DEFAULT_TRACE = (
    Path(__file__).resolve().parents[1].parent / "shared" / "traces" / "philly" / ("philly.csv")
)


def _python() -> str:
    """The interpreter as the reader would type it: relative when under the current folder."""
    rel = os.path.relpath(sys.executable)
    return sys.executable if rel.startswith("..") else rel


def _args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trace", type=Path, default=DEFAULT_TRACE, help="Philly CSV")
    parser.add_argument("--limit", type=int, default=None, help="replay only the first N jobs")
    parser.add_argument(
        "--policy",
        action="append",
        choices=sorted(POLICIES),
        help="policy to run (repeatable; default phalanx)",
    )
    parser.add_argument("--nodes", type=int, default=64)
    parser.add_argument("--gpus-per-node", type=int, default=8)
    parser.add_argument("--nodes-per-switch", type=int, default=8)
    parser.add_argument("--repeat", type=int, default=3, help="runs per policy (default 3)")
    args = parser.parse_args(argv)
    if args.repeat < 1:
        parser.error("--repeat must be at least 1")
    return args


def main(argv: list[str] | None = None) -> int:
    args = _args(argv)
    print("$", shlex.join([_python(), *sys.argv]))
    policies: list[str] = args.policy or ["phalanx"]
    cluster = uniform_cluster(args.nodes, args.gpus_per_node, args.nodes_per_switch).cluster

    t0 = time.perf_counter()
    workload = trace_workload(str(args.trace), "philly", TraceOptions(limit=args.limit)).jobs
    read_s = time.perf_counter() - t0
    print(f"trace: {args.trace} ({len(workload):,} jobs) read in {read_s:.2f} s")
    print(
        f"cluster: {args.nodes} nodes x {args.gpus_per_node} GPUs, "
        f"{args.nodes_per_switch} nodes per leaf switch"
    )
    print()

    verdicts: list[tuple[str, float]] = []
    for name in policies:
        rates: list[float] = []
        print(f"policy {name}")
        print(
            f"  {'run':>3}  {'jobs':>8}  {'wall s':>8}  {'cpu s':>8}  {'jobs/s':>9}  {'passes':>8}"
        )
        for i in range(args.repeat):
            sim = Simulator(cluster, profile(name), workload, keep_segments=False)
            t0, c0 = time.perf_counter(), time.process_time()
            record = sim.run()
            wall, cpu = time.perf_counter() - t0, time.process_time() - c0
            jobs = len(record.jobs)
            rate = jobs / wall if wall > 0 else float("inf")
            rates.append(rate)
            print(
                f"  {i + 1:>3}  {jobs:>8,}  {wall:>8.2f}  {cpu:>8.2f}  {rate:>9,.0f}  "
                f"{record.passes:>8,}"
            )
        median = statistics.median(rates)
        verdicts.append((name, median))
        print(f"  median {median:,.0f} jobs/s")
        print()

    for name, median in verdicts:
        verdict = "PASS" if median >= TARGET_JOBS_PER_S else "FAIL"
        print(
            f"{verdict}  {name}: median {median:,.0f} jobs/s "
            f"(target >= {TARGET_JOBS_PER_S:,.0f} jobs/s)"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
