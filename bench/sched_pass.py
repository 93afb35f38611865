"""Latency of one scheduling pass: 10,000 pending jobs on 1,024 nodes x 8 GPUs (64 leaf switches).

Setup (not timed), deterministic for ``--seed``:

1. A running load: jobs of the mix below, each started at a seeded time before ``now`` at which
   it is still running at ``now``, placed by the engine itself (``Engine.view.place`` then
   ``Engine.start``; a job that does not fit is withdrawn), until ``--load`` of the GPUs is
   allocated.
2. ``--pending`` jobs of the same mix, submitted in the last ``--history`` before ``now``.

The mix: 70% one GPU, 20% 2-8 GPUs on one node, 10% gangs of 2-16 whole 8-GPU nodes; time
limits log-uniform from 10 minutes to 3 days, in whole minutes (``--round-limits``: one of a
few round values, as users tend to ask for, which lets a pass reuse more failed placements).

Then ONE pass (``TimerFired(now, PASS)``) is timed. A pass starts jobs, so every sample
runs on a fresh copy of the engine built once, garbage-collected before the clock starts
(the collector stays on during the pass). The verdict is the median against the
target (<= 100 ms); the script exits 0 either way and prints PASS or FAIL.

    .venv/bin/python bench/sched_pass.py [--samples N] [--policy NAME ...]
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import math
import os
import pickle
import pstats
import random
import shlex
import statistics
import sys
import time

from phalanx.config.clusterspec import regular_cluster
from phalanx.domain.jobspec import JobSpec
from phalanx.domain.state import JobState
from phalanx.domain.time import DAY, HOUR, MINUTE
from phalanx.engine import Cancel, Engine, Kill, Launch, Signal, Submit, TimerFired
from phalanx.engine.timers import PASS
from phalanx.policies.catalog import POLICIES, profile

TARGET_MS = 100.0
ACCOUNTS = ("pretrain", "finetune", "research", "rlhf")
USERS_PER_ACCOUNT = 4
_MAX_CANDIDATES_PER_NODE = 20
"""Bound on running-load candidates, should placement strand GPUs below ``--load``."""
ROUND_LIMITS = tuple(m * MINUTE for m in (10, 30, 60, 120, 240, 480, 720, 1440, 2880, 4320))


def _python() -> str:
    """The interpreter as the reader would type it: relative when under the current folder."""
    rel = os.path.relpath(sys.executable)
    return sys.executable if rel.startswith("..") else rel


def _limit(rng: random.Random, round_limits: bool) -> int:
    if round_limits:
        return rng.choice(ROUND_LIMITS)
    lo, hi = math.log(10 * MINUTE), math.log(3 * DAY)
    return max(10 * MINUTE, round(math.exp(rng.uniform(lo, hi)) / MINUTE) * MINUTE)


def _spec(rng: random.Random, gpus_per_node: int, round_limits: bool, i: int) -> JobSpec:
    """One job of the mix: 70% one GPU, 20% 2-8 GPUs on one node, 10% 2-16 node gangs."""
    account = rng.choice(ACCOUNTS)
    user = f"{account}{rng.randrange(USERS_PER_ACCOUNT)}"
    limit = _limit(rng, round_limits)
    draw = rng.random()
    if draw < 0.7:
        nodes, tasks, gpus = 1, 1, 1
    elif draw < 0.9:
        nodes, tasks, gpus = 1, 1, rng.randint(2, min(8, gpus_per_node))
    else:
        nodes, tasks, gpus = rng.randint(2, 16), gpus_per_node, 1
    return JobSpec(
        name=f"job{i}",
        user=user,
        account=account,
        nodes_min=nodes,
        nodes_max=nodes,
        tasks_per_node=tasks,
        gpus_per_task=gpus,
        cpus_per_task=max(1, gpus),
        time_limit=limit,
    )


def fresh_copy(engine: Engine) -> Engine:
    """An independent copy of ``engine``, made as a snapshot is (pickled and loaded).

    Not ``copy.deepcopy``: compiled (``tools/native.py``), the engine keeps bound methods of
    compiled classes (the recipe's ``start`` and ``pending``), which are builtin methods, and
    ``deepcopy`` shares those instead of copying them. A pass on such a copy started its jobs
    in the original engine, and the copy's own pass returned nothing."""
    copied = pickle.loads(pickle.dumps(engine, pickle.HIGHEST_PROTOCOL))
    assert isinstance(copied, Engine)
    return copied


def build(args: argparse.Namespace, policy: str) -> tuple[Engine, int, int]:
    """The engine ready for the timed pass; also ``now`` and the running job count."""
    rng = random.Random(args.seed)
    cluster = regular_cluster(
        args.nodes,
        args.gpus_per_node,
        args.nodes_per_switch,
        leaves_per_spine=args.leaves_per_spine,
    )
    engine = Engine(cluster, profile(policy))
    total = cluster.total_gpus
    now = args.history

    # 1. The running load: candidates in generation order, each started at its own time so
    #    that it is still running at ``now``; one that does not fit is withdrawn. The starts
    #    need not come in time order: the pass sees only each running job's allocation,
    #    account and end, and drawing in time order would favour long limits (early starts).
    target = args.load * total
    running = 0
    for _ in range(_MAX_CANDIDATES_PER_NODE * args.nodes):
        if total - engine.state.free_gpus >= target:
            break
        spec = _spec(rng, args.gpus_per_node, args.round_limits, engine.next_id)
        limit = spec.time_limit or DAY
        start = rng.randint(max(0, now - limit + 1), now - 1)
        first = engine.next_id
        engine.handle(Submit(start, spec))
        job = engine.jobs[first]
        alloc = engine.view.place(job)
        if alloc is None:
            engine.handle(Cancel(start, job.id))
            continue
        engine.start(job, alloc)
        running += 1

    # 2. The pending queue, submitted in the last ``history`` before now.
    submits = sorted(now - rng.randint(0, args.history) for _ in range(args.pending))
    for i, at in enumerate(submits):
        engine.handle(Submit(at, _spec(rng, args.gpus_per_node, args.round_limits, i)))
    return engine, now, running


def _profile(engine: Engine, now: int) -> None:
    """cProfile of one more pass (not among the samples), sorted by own time."""
    gc.collect()
    profiler = cProfile.Profile()
    profiler.runcall(engine.handle, TimerFired(now, PASS))
    stats = pstats.Stats(profiler, stream=sys.stdout)
    stats.sort_stats("tottime").print_stats(15)


def _percentile(sorted_values: list[float], q: float) -> float:
    """Linear interpolation between closest ranks (numpy's default)."""
    pos = (len(sorted_values) - 1) * q
    lo = math.floor(pos)
    hi = min(lo + 1, len(sorted_values) - 1)
    return sorted_values[lo] + (sorted_values[hi] - sorted_values[lo]) * (pos - lo)


def _args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--policy",
        action="append",
        choices=sorted(POLICIES),
        help="policy to time (repeatable; default phalanx)",
    )
    parser.add_argument("--samples", type=int, default=15, help="timed passes (default 15)")
    parser.add_argument("--pending", type=int, default=10_000)
    parser.add_argument(
        "--load",
        type=float,
        default=0.90,
        help="fraction of GPUs allocated before the pass (default 0.90)",
    )
    parser.add_argument("--nodes", type=int, default=1024)
    parser.add_argument("--gpus-per-node", type=int, default=8)
    parser.add_argument("--nodes-per-switch", type=int, default=16)
    parser.add_argument("--leaves-per-spine", type=int, default=16)
    parser.add_argument(
        "--history",
        type=int,
        default=12 * HOUR,
        help="ms of history before the pass (default 12 h)",
    )
    parser.add_argument(
        "--round-limits",
        action="store_true",
        help="time limits from a few round values instead of any minute",
    )
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument(
        "--profile",
        action="store_true",
        help="also profile one extra pass per policy (top 15 by own time)",
    )
    args = parser.parse_args(argv)
    if args.samples < 1:
        parser.error("--samples must be at least 1")
    if not 0 < args.load < 1:
        parser.error("--load must be between 0 and 1")
    return args


def main(argv: list[str] | None = None) -> int:
    args = _args(argv)
    print("$", shlex.join([_python(), *sys.argv]))
    policies: list[str] = args.policy or ["phalanx"]
    verdicts: list[tuple[str, float]] = []
    for name in policies:
        t0 = time.perf_counter()
        base, now, running = build(args, name)
        build_s = time.perf_counter() - t0
        total = base.cluster.total_gpus
        used = total - base.state.free_gpus
        pending = sum(1 for j in base.jobs.values() if j.state is JobState.PENDING)
        print(
            f"policy {name}: {args.nodes} nodes x {args.gpus_per_node} GPUs, "
            f"{base.state.n_leaves} leaf switches; {running:,} running jobs on "
            f"{used:,}/{total:,} GPUs ({used / total:.1%}); {pending:,} pending; "
            f"built in {build_s:.1f} s"
        )
        times: list[float] = []
        copy_s: list[float] = []
        outcome = ""
        for _ in range(args.samples):
            t0 = time.perf_counter()
            engine = fresh_copy(base)
            copy_s.append(time.perf_counter() - t0)
            gc.collect()  # the copy's garbage is setup's, not the pass's to collect
            t0 = time.perf_counter()
            out = engine.handle(TimerFired(now, PASS))
            times.append((time.perf_counter() - t0) * 1000)
            started = sum(isinstance(c, Launch) for c in out)
            preempted = sum(isinstance(c, Kill | Signal) for c in out)
            expected = sum(
                1
                for j in engine.jobs.values()
                if j.state is JobState.PENDING and j.expected_start is not None
            )
            now_used = total - engine.state.free_gpus
            result = (
                f"started {started:,} jobs (GPUs {used / total:.1%} -> "
                f"{now_used / total:.1%}), {expected} pending with an expected start "
                f"(reservations), {preempted} preemption signals/kills"
            )
            if outcome and result != outcome:
                result += "  [differs between samples!]"
            outcome = result
        times.sort()
        median = statistics.median(times)
        verdicts.append((name, median))
        print(f"  pass: {outcome}")
        print(f"  copy per sample: median {statistics.median(copy_s):.2f} s (not timed)")
        print(
            f"  pass ms over {len(times)} samples: min {times[0]:.1f}  "
            f"p25 {_percentile(times, 0.25):.1f}  median {median:.1f}  "
            f"p75 {_percentile(times, 0.75):.1f}  max {times[-1]:.1f}"
        )
        if args.profile:
            _profile(fresh_copy(base), now)
        print()
    for name, median in verdicts:
        verdict = "PASS" if median <= TARGET_MS else "FAIL"
        print(f"{verdict}  {name}: median pass {median:.1f} ms (target <= {TARGET_MS:.0f} ms)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
