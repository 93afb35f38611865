"""The simulator's report on a large run: ``summarize`` and ``write_plots`` of 82,000 jobs.

A run the size of the Philly trace (82,000 jobs over 30 days on 128 nodes x 8 GPUs, one
segment per job, the allocation timeline of every start and end), generated with a fixed
seed by ``phalanx.testing.large_run``, as the tests' large run is. Medians of
``--repeat`` runs (5 for ``summarize``, 3 for ``write_plots``), wall seconds.

Targets: ``summarize`` under 0.5 s; ``write_plots`` (every figure of one policy, PNG) under
5 s. Exits 0 either way; prints PASS or FAIL per target.

    .venv/bin/python bench/sim_report.py [--repeat N]
"""

from __future__ import annotations

import argparse
import shlex
import statistics
import sys
import tempfile
import time

from harness import python_cmd, spread, verdict

from phalanx.sim.metrics import summarize
from phalanx.sim.plots import write_plots
from phalanx.testing import large_run

JOBS = 82_000
TARGETS = {"summarize": 0.5, "write_plots": 5.0}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, help="runs of each (default 5 and 3)")
    args = parser.parse_args(argv)
    print("$", shlex.join([python_cmd(), *sys.argv]))
    run = large_run(JOBS, seed=1, accounts=50)
    print(f"run: {len(run.jobs):,} jobs, {len(run.segments):,} segments, 128 nodes x 8 GPUs")
    timings: dict[str, list[float]] = {"summarize": [], "write_plots": []}
    for _ in range(args.repeat or 5):
        began = time.perf_counter()
        metrics = summarize(run)
        timings["summarize"].append(time.perf_counter() - began)
    assert metrics.jobs == len(run.jobs)
    with tempfile.TemporaryDirectory(prefix="phx-plots-") as out:
        for _ in range(args.repeat or 3):
            began = time.perf_counter()
            write_plots(out, {"big": run})
            timings["write_plots"].append(time.perf_counter() - began)
    for name, values in timings.items():
        print(f"  {name:<12} seconds  {spread(values, '.3f')}")
    print()
    for name, values in timings.items():
        median = statistics.median(values)
        target = TARGETS[name]
        print(verdict(median <= target, f"{name}: median {median:.3f} s (target <= {target} s)"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
