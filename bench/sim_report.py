"""The simulator's report on a large run: ``summarize`` and ``write_plots`` of 82,000 jobs.

A run the size of the Philly trace (82,000 jobs over 30 days on 128 nodes x 8 GPUs, one
segment per job, the allocation timeline of every start and end), generated with a fixed
seed, as the tests' large-run fixtures did before their timings moved here. Medians of
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

import numpy as np
from harness import python_cmd, spread, verdict

from phalanx.domain.time import DAY, HOUR, SECOND
from phalanx.sim.metrics import summarize
from phalanx.sim.plots import write_plots
from phalanx.sim.records import JobRecord, RunRecord, Segment

JOBS = 82_000
TARGETS = {"summarize": 0.5, "write_plots": 5.0}


def large_run(n: int = JOBS, seed: int = 1) -> RunRecord:
    """``n`` one-GPU jobs of up to 6 h over 30 days on 128 nodes, as a finished run."""
    rng = np.random.default_rng(seed)
    submit = np.sort(rng.integers(0, 30 * DAY, n))
    start = submit + rng.integers(0, HOUR, n)
    end = start + rng.integers(SECOND, 6 * HOUR, n)
    node = rng.integers(0, 128, n)
    jobs = [
        JobRecord(
            job_id=k,
            account=f"acct{k % 50}",
            user="u",
            gpus=1.0,
            submit=int(submit[k]),
            runtime_ms=int(end[k] - start[k]),
            first_start=int(start[k]),
            end=int(end[k]),
        )
        for k in range(n)
    ]
    segments = [Segment(k, int(node[k]), int(start[k]), int(end[k]), 1.0) for k in range(n)]
    times = np.concatenate([start, end])
    deltas = np.concatenate([np.ones(n), -np.ones(n)])
    order = np.argsort(times, kind="stable")
    timeline = list(zip(times[order].tolist(), np.cumsum(deltas[order]).tolist(), strict=True))
    return RunRecord(
        policy="big",
        total_gpus=1024,
        node_count=128,
        jobs=jobs,
        alloc_timeline=timeline,
        segments=segments,
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, help="runs of each (default 5 and 3)")
    args = parser.parse_args(argv)
    print("$", shlex.join([python_cmd(), *sys.argv]))
    run = large_run()
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
