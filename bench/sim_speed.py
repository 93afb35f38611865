"""Simulator throughput: replay the Philly trace and report jobs simulated per wall second.

Three sections, each one can be skipped:

1. throughput: the trace as it is (``--load``, default 1), ``--policy`` (default phalanx);
2. deep queues: the same trace with inter-arrival times divided by ``--deep-load`` (default 2,
   as ``phalanx simulate --load 2``), ``--deep-policy`` (default phalanx, slurm, tiresias);
3. pass cost: one scheduling pass against queue depth (``--depths``, default 100, 1,000 and
   10,000 pending) on the same cluster at 90% of its GPUs allocated, built as
   ``sched_pass.py`` builds its state.

With ``--queues FILE`` (Kueue's and Volcano's queue objects, as ``phalanx simulate --queues``:
``examples/philly_queues.py`` writes the Philly trace's), the cluster has those queues.

With ``--hash``, each run also prints a digest of its decision log and of every job's record
(first start, end, state): two versions of the code decide alike on a trace when their
digests are equal (how an optimisation is shown to change no decision).

With ``--why``, each run also prints its passes by what came before them (only submissions,
an end, a priority recalculation) and what they did (started a job, preempted, nothing),
with the CPU seconds they took, and the CPU seconds spent outside passes: where skipping
passes could save time, and how much there is to save. It wraps the driver, so it needs the
pure-Python core (``make pure``; ``make native`` compiles it again).

Only ``Simulator.run()`` (or the one pass) is timed; reading the trace is timed and printed
apart. Each policy is run ``--repeat`` times on a fresh simulator; the verdicts use the median
jobs/s against the targets (>= 5,000 jobs/s for phalanx at load 1; at the deep load phalanx
>= 3,000 and slurm >= 1,000). The script is a measurement: it exits 0 whether the targets are
met or not, and prints PASS or FAIL.

    .venv/bin/python bench/sim_speed.py [--limit N] [--repeat N] [--policy NAME ...]
        [--deep-policy NAME ...] [--skip throughput|deep|pass ...] [--queues FILE] [--hash]
        [--why]
"""

from __future__ import annotations

import argparse
import dataclasses
import gc
import hashlib
import os
import shlex
import statistics
import sys
import time
from pathlib import Path

import phalanx.runtime.driver as driver_module
from phalanx.config.clusterspec import regular_cluster
from phalanx.config.queues import queues_from_file
from phalanx.domain.cluster import Cluster
from phalanx.domain.time import HOUR
from phalanx.engine import CleanupDone, Event, Launch, Submit, TasksExited, TimerFired
from phalanx.engine.commands import Command
from phalanx.engine.decisions import Preempted, Started
from phalanx.engine.timers import PASS, LimitTimer, PassTimer, RecalcTimer
from phalanx.errors import InputError
from phalanx.policies.catalog import POLICIES, profile
from phalanx.sim.records import RunRecord
from phalanx.sim.simulator import Simulator
from phalanx.sim.traces import read_trace
from phalanx.sim.traces.options import TraceOptions
from phalanx.sim.workload import TraceJob

sys.path.insert(0, str(Path(__file__).resolve().parent))
import sched_pass  # a sibling script, not a package

# Targets in jobs/s, per (section, policy); a policy without one is measured only.
TARGETS = {
    ("throughput", "phalanx"): 5_000.0,
    ("deep", "phalanx"): 3_000.0,
    ("deep", "slurm"): 1_000.0,
}
SECTIONS = ("throughput", "deep", "pass")
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
    parser.add_argument(
        "--load", type=float, default=1.0, help="divide inter-arrival times (default 1)"
    )
    parser.add_argument(
        "--deep-policy",
        action="append",
        choices=sorted(POLICIES),
        help="policy for the deep-queue section (repeatable; default phalanx, slurm, tiresias)",
    )
    parser.add_argument(
        "--deep-load", type=float, default=2.0, help="load of the deep-queue section (2)"
    )
    parser.add_argument(
        "--deep-limit", type=int, default=None, help="replay only N jobs in the deep section"
    )
    parser.add_argument(
        "--depths",
        default="100,1000,10000",
        help="pending jobs for the pass-cost section, comma separated",
    )
    parser.add_argument("--pass-samples", type=int, default=3, help="passes per depth (3)")
    parser.add_argument(
        "--skip", action="append", choices=SECTIONS, default=[], help="skip a section"
    )
    parser.add_argument(
        "--queues",
        type=Path,
        default=None,
        help="queue objects (YAML) for the cluster, as phalanx simulate --queues",
    )
    parser.add_argument(
        "--hash",
        action="store_true",
        help="print a digest of each run's decision log and job records",
    )
    parser.add_argument(
        "--why",
        action="store_true",
        help="print the passes by what came before them and what they did, with CPU time",
    )
    args = parser.parse_args(argv)
    if args.repeat < 1 or args.pass_samples < 1:
        parser.error("--repeat and --pass-samples must be at least 1")
    if not (args.load > 0 and args.deep_load > 0):
        parser.error("--load and --deep-load must be positive")
    try:
        args.depths = [int(d) for d in args.depths.split(",") if d]
    except ValueError:
        parser.error(f"--depths must be integers separated by commas: {args.depths!r}")
    return args


def digest(sim: Simulator, record: RunRecord) -> str:
    """A digest of ``sim``'s decision log and of every job's first start, end and state."""
    h = hashlib.sha256()
    for entry in sim.engine.decisions.entries:
        h.update(repr(entry).encode())
    for job in sorted(record.jobs, key=lambda r: r.job_id):
        h.update(repr((job.job_id, job.first_start, job.end, job.state)).encode())
    return h.hexdigest()[:16]


def _before(event: Event) -> str:
    """What kind of input ``event`` is, for ``--why``."""
    if type(event) is Submit:
        return "submit"
    if type(event) is TasksExited or type(event) is CleanupDone:
        return "end"
    if isinstance(event, TimerFired):
        if type(event.key) is LimitTimer:
            return "limit"  # a limit timer alone changes nothing a pass reads
        if type(event.key) is RecalcTimer:
            return "recalc"
    return "other"


class PassTable:
    """``--why``: wraps a simulator's driver so each pass is timed (CPU) and classed."""

    CAUSES = ("submissions only", "an end", "a recalculation", "other")
    OUTCOMES = ("started", "preempted", "nothing")

    def __init__(self, sim: Simulator) -> None:
        self.since: set[str] = set()
        self.rows: dict[tuple[str, str], list[float]] = {}
        self.entries = sim.engine.decisions.entries
        self.handle = sim.driver.handle
        sim.driver.handle = self.timed  # type: ignore[method-assign]

    def timed(self, event: Event) -> list[Command]:
        if not isinstance(event, TimerFired) or type(event.key) is not PassTimer:
            self.since.add(_before(event))
            return self.handle(event)
        logged = len(self.entries)
        c0 = time.process_time()
        out = self.handle(event)
        cpu = time.process_time() - c0
        new = {type(d) for d in self.entries[logged:]}
        outcome = "started" if Started in new else "preempted" if Preempted in new else "nothing"
        since = self.since - {"limit"}
        cause = (
            "an end" if "end" in since
            else "a recalculation" if "recalc" in since
            else "submissions only" if since <= {"submit"}
            else "other"
        )  # fmt: skip
        row = self.rows.setdefault((cause, outcome), [0, 0.0])
        row[0] += 1
        row[1] += cpu
        self.since = set()
        return out

    def print(self, total_cpu: float) -> None:
        print(f"       {'passes after':<18}" + "".join(f"  {o:>19}" for o in self.OUTCOMES))
        for cause in self.CAUSES:
            cells = [self.rows.get((cause, o), [0, 0.0]) for o in self.OUTCOMES]
            print(f"       {cause:<18}" + "".join(f"  {int(n):>9,} {t:>7.2f} s" for n, t in cells))
        inside = sum(t for _, t in self.rows.values())
        print(f"       CPU in passes {inside:.2f} s, outside passes {total_cpu - inside:.2f} s")


def _replay(
    section: str,
    names: list[str],
    cluster: Cluster,
    workload: list[TraceJob],
    repeat: int,
    with_hash: bool = False,
    why: bool = False,
) -> list[tuple[str, str, float]]:
    """Run each policy ``repeat`` times over ``workload``; (section, policy, median jobs/s)."""
    verdicts: list[tuple[str, str, float]] = []
    for name in names:
        rates: list[float] = []
        print(f"policy {name}   (load average {os.getloadavg()[0]:.2f})")
        print(
            f"  {'run':>3}  {'jobs':>8}  {'wall s':>8}  {'cpu s':>8}  {'jobs/s':>9}  "
            f"{'jobs/cpu-s':>10}  {'passes':>8}" + ("  digest" if with_hash else "")
        )
        for i in range(repeat):
            sim = Simulator(cluster, profile(name), workload, keep_segments=False)
            table = PassTable(sim) if why else None
            t0, c0 = time.perf_counter(), time.process_time()
            record = sim.run()
            wall, cpu = time.perf_counter() - t0, time.process_time() - c0
            jobs = len(record.jobs)
            rate = jobs / wall if wall > 0 else float("inf")
            rates.append(rate)
            per_cpu = jobs / cpu if cpu > 0 else float("inf")
            print(
                f"  {i + 1:>3}  {jobs:>8,}  {wall:>8.2f}  {cpu:>8.2f}  {rate:>9,.0f}  "
                f"{per_cpu:>10,.0f}  {record.passes:>8,}"
                + (f"  {digest(sim, record)}" if with_hash else "")
            )
            if table is not None:
                table.print(cpu)
        median = statistics.median(rates)
        verdicts.append((section, name, median))
        print(f"  median {median:,.0f} jobs/s")
        print()
    return verdicts


def _pass_cost(args: argparse.Namespace, names: list[str]) -> None:
    """One pass's wall time against queue depth, on this cluster at 90% allocated."""
    for name in names:
        print(f"policy {name}   (load average {os.getloadavg()[0]:.2f})")
        print(
            f"  {'pending':>8}  {'median ms':>10}  {'min ms':>8}  {'max ms':>8}  "
            f"{'started':>8}  {'GPUs after':>10}"
        )
        for depth in args.depths:
            state = argparse.Namespace(
                seed=1,
                nodes=args.nodes,
                gpus_per_node=args.gpus_per_node,
                nodes_per_switch=args.nodes_per_switch,
                leaves_per_spine=None,
                load=0.90,
                round_limits=False,
                history=12 * HOUR,
                pending=depth,
            )
            base, now, _ = sched_pass.build(state, name)
            times: list[float] = []
            started = 0
            for _ in range(args.pass_samples):
                engine = sched_pass.fresh_copy(base)
                gc.collect()
                t0 = time.perf_counter()
                out = engine.handle(TimerFired(now, PASS))
                times.append((time.perf_counter() - t0) * 1000)
                # What the pass did (the same every sample: it starts from the same copy),
                # so a pass that did nothing cannot pass for a fast one.
                started = sum(isinstance(c, Launch) for c in out)
            total = engine.cluster.total_gpus
            used = (total - engine.state.free_gpus) / total
            print(
                f"  {depth:>8,}  {statistics.median(times):>10.1f}  {min(times):>8.1f}  "
                f"{max(times):>8.1f}  {started:>8,}  {used:>10.1%}"
            )
        print()


def main(argv: list[str] | None = None) -> int:
    args = _args(argv)
    if args.why and not str(driver_module.__file__).endswith(".py"):
        # --why wraps the driver's handle per simulator, which a compiled class refuses.
        print(
            "sim_speed: --why needs the pure-Python driver; the scheduling core is compiled "
            "(tools/native.py): run `make pure` first (`make native` compiles it again)",
            file=sys.stderr,
        )
        return 2
    print("$", shlex.join([_python(), *sys.argv]))
    cluster = regular_cluster(args.nodes, args.gpus_per_node, args.nodes_per_switch)
    if args.queues is not None:
        try:
            queues = queues_from_file(str(args.queues))
        except InputError as exc:
            print(f"sim_speed: {exc}", file=sys.stderr)
            return 2
        cluster = dataclasses.replace(cluster, queues=queues)
    print(
        f"cluster: {args.nodes} nodes x {args.gpus_per_node} GPUs, "
        f"{args.nodes_per_switch} nodes per leaf switch"
        + ("" if args.queues is None else f", queues from {args.queues}")
    )
    verdicts: list[tuple[str, str, float]] = []
    sections = [
        ("throughput", args.policy or ["phalanx"], args.load, args.limit),
        (
            "deep",
            args.deep_policy or ["phalanx", "slurm", "tiresias"],
            args.deep_load,
            args.deep_limit if args.deep_limit is not None else args.limit,
        ),
    ]
    for section, names, load, limit in sections:
        if section in args.skip:
            continue
        t0 = time.perf_counter()
        try:
            workload = read_trace(str(args.trace), "philly", TraceOptions(limit=limit, load=load))
        except InputError as exc:
            print(f"sim_speed: {exc}", file=sys.stderr)
            return 2
        read_s = time.perf_counter() - t0
        print()
        print(f"== {section}: load {load:g}")
        print(f"trace: {args.trace} ({len(workload):,} jobs) read in {read_s:.2f} s")
        print()
        verdicts += _replay(section, names, cluster, workload, args.repeat, args.hash, args.why)
    if "pass" not in args.skip:
        print("== pass cost against queue depth (90% of GPUs allocated)")
        print()
        _pass_cost(args, args.deep_policy or ["phalanx", "slurm", "tiresias"])

    for section, name, median in verdicts:
        target = TARGETS.get((section, name))
        if target is None:
            print(f"info  {section} {name}: median {median:,.0f} jobs/s (no target)")
            continue
        verdict = "PASS" if median >= target else "FAIL"
        print(
            f"{verdict}  {section} {name}: median {median:,.0f} jobs/s "
            f"(target >= {target:,.0f} jobs/s)"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
