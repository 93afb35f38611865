"""Admission speed under ClusterQueues: Kueue's large-scale scenario on the engine.

Kueue's scheduler performance test (``test/performance/scheduler``, where Kueue admits about
42 workloads/s against its test API server) at the size issue 11 names: 1,000 ClusterQueues
in 10 cohorts, 50,000 pending workloads. Here:

- ``--nodes`` nodes of 8 GPUs (default 1,000: 8,000 GPUs), one ResourceFlavor over all of
  them; each ClusterQueue has a nominal quota of 8 GPUs (the cluster's GPUs split evenly),
  with CPUs and memory it never runs short of, in cohort ``cohort-<i mod 10>``, borrowing
  with no limit; one LocalQueue ``default`` per namespace ``ns-<i>`` feeds ClusterQueue i.
- ``--workloads`` jobs (default 50,000) of 1, 2 or 4 GPUs (3:1:1), each in a namespace drawn
  at random (seeded), all submitted before the clock starts.
- Then the engine drains the queue in waves: a pass admits and starts what quota and nodes
  allow, every started job ends (its tasks exit, its cleanup is done) and the next pass runs,
  until every workload was admitted. The engine's work (every ``Engine.handle`` from the
  first pass on: passes, endings) is timed in CPU seconds of this process
  (``time.process_time``, so other load on the machine does not count), and wall seconds.

Printed: admissions per second (workloads admitted and started / engine CPU seconds), the
median of ``--runs`` runs, against the target (>= 5,000/s); the script exits 0 either way.
With ``--hash``, each run also prints a digest of the engine's decision log (equal digests:
two versions of the code admitted alike).

    .venv/bin/python bench/queue_admission.py [--runs 3] [--profile kueue] [--cprofile] [--hash]
"""

from __future__ import annotations

import argparse
import cProfile
import dataclasses
import hashlib
import os
import pstats
import random
import shlex
import statistics
import sys
import time

from phalanx.config.clusterspec import regular_cluster
from phalanx.domain.cluster import Cluster
from phalanx.domain.jobspec import JobSpec
from phalanx.domain.quantity import GPU, MILLI_UNITS
from phalanx.domain.queues import (
    ClusterQueue,
    FlavorQuotas,
    LabelSelector,
    LocalQueue,
    Queues,
    ResourceFlavor,
    ResourceGroup,
    ResourceQuota,
)
from phalanx.domain.time import HOUR, MINUTE
from phalanx.engine import CleanupDone, Engine, Launch, Submit, TasksExited, TimerFired
from phalanx.engine.timers import PASS
from phalanx.policies.catalog import profile

TARGET = 5_000.0
COHORTS = 10
_PLENTY = 10**15
"""CPUs and memory quota no ClusterQueue runs short of (the scenario is about GPUs)."""


def cluster(nodes: int, queues: int) -> Cluster:
    base = regular_cluster(nodes, 8, 16)
    nominal = nodes * 8 // queues * MILLI_UNITS
    group = ResourceGroup(
        (GPU, "cpu", "memory"),
        (
            FlavorQuotas(
                "default",
                (
                    ResourceQuota(GPU, nominal),
                    ResourceQuota("cpu", _PLENTY),
                    ResourceQuota("memory", _PLENTY),
                ),
            ),
        ),
    )
    cqs = {
        f"cq-{i}": ClusterQueue(
            f"cq-{i}", (group,), cohort=f"cohort-{i % COHORTS}", namespace_selector=LabelSelector()
        )
        for i in range(queues)
    }
    locals_ = {
        (f"ns-{i}", "default"): LocalQueue(f"ns-{i}", "default", f"cq-{i}") for i in range(queues)
    }
    found = Queues(
        flavors={"default": ResourceFlavor("default")}, cluster_queues=cqs, local_queues=locals_
    )
    return dataclasses.replace(base, queues=found)


def workloads(count: int, queues: int, seed: int) -> list[JobSpec]:
    rng = random.Random(seed)
    return [
        JobSpec(
            name="wl",
            user="bench",
            account=f"ns-{rng.randrange(queues)}",
            gpus_per_task=rng.choice((1, 1, 1, 2, 4)),
            time_limit=HOUR,
        )
        for _ in range(count)
    ]


def run_once(args: argparse.Namespace, seed: int) -> tuple[int, float, float, int, str]:
    """(admitted, CPU seconds, wall seconds, passes, digest of the decision log) of one
    drain."""
    engine = Engine(cluster(args.nodes, args.queues), profile(args.profile))
    for spec in workloads(args.workloads, args.queues, seed):
        engine.handle(Submit(0, spec))
    profiler = cProfile.Profile() if args.cprofile else None
    admitted = passes = 0
    now = MINUTE
    cpu = wall = 0.0
    while admitted < args.workloads:
        t_cpu, t_wall = time.process_time(), time.perf_counter()
        if profiler is not None:
            profiler.enable()
        out = engine.handle(TimerFired(now, PASS))
        started = [c for c in out if isinstance(c, Launch)]
        now += MINUTE
        for launch in started:
            engine.handle(TasksExited(now, launch.job_id, launch.run))
            engine.handle(CleanupDone(now, launch.job_id, launch.run))
        if profiler is not None:
            profiler.disable()
        cpu += time.process_time() - t_cpu
        wall += time.perf_counter() - t_wall
        passes += 1
        admitted += len(started)
        if not started:
            raise SystemExit(f"stuck: {args.workloads - admitted} workloads never admitted")
        now += MINUTE
    if profiler is not None:
        pstats.Stats(profiler).sort_stats("cumulative").print_stats(30)
    digest = hashlib.sha256()
    for entry in engine.decisions.entries:
        digest.update(repr(entry).encode())
    return admitted, cpu, wall, passes, digest.hexdigest()[:16]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--nodes", type=int, default=1_000)
    parser.add_argument("--queues", type=int, default=1_000)
    parser.add_argument("--workloads", type=int, default=50_000)
    parser.add_argument("--profile", default="kueue", help="scheduling profile (kueue, phalanx)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--cprofile", action="store_true", help="print a cProfile of one run")
    parser.add_argument("--hash", action="store_true", help="print each run's decision digest")
    args = parser.parse_args(argv)
    given = sys.argv[1:] if argv is None else argv
    python = os.path.relpath(sys.executable)
    python = sys.executable if python.startswith("..") else python
    print("$ " + shlex.join([python, "bench/queue_admission.py", *given]))
    if args.cprofile:
        args.runs = 1
    rates = []
    for k in range(args.runs):
        admitted, cpu, wall, passes, digest = run_once(args, args.seed + k)
        rates.append(admitted / cpu)
        print(
            f"run {k + 1}: {admitted:,} admitted in {passes} passes, {cpu:.2f} s CPU "
            f"({wall:.2f} s wall): {admitted / cpu:,.0f} admissions/s"
            + (f", decisions {digest}" if args.hash else "")
        )
    median = statistics.median(rates)
    verdict = "PASS" if median >= TARGET else "FAIL"
    print(
        f"{args.profile}: {args.queues:,} ClusterQueues in {COHORTS} cohorts, "
        f"{args.workloads:,} workloads, {args.nodes:,} nodes x 8 GPUs: median "
        f"{median:,.0f} admissions/s (target >= {TARGET:,.0f}): {verdict}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
