"""``phalanx simulate``: replay one workload under several policies and compare them.

Recipe:

1. read the workload: a trace (``--trace``, any of ``traces.FORMATS``) or the seeded generator
   (``--generate DAYS``), with the shared options ``--limit``, ``--window``, ``--load``;
2. build the cluster: ``--cluster FILE`` (YAML), ``--nodes N`` (a uniform cluster) or, for an
   openb trace, the node list next to it;
3. run each policy over the same workload, showing progress on stderr;
4. print the side-by-side table, then the jobs no policy could ever place; write the JSON,
   markdown and plots asked for.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from rich.console import Console
from rich.measure import Measurement

from phalanx.cli.progress import RunProgress
from phalanx.config.clusterspec import cluster_from_yaml, regular_cluster
from phalanx.domain.cluster import Cluster
from phalanx.domain.time import HOUR, SECOND, Instant
from phalanx.errors import InputError, TraceError
from phalanx.policies.catalog import POLICIES, profile
from phalanx.sim.executor import CHECKPOINT_RESTORE_MS, CHECKPOINT_SAVE_MS
from phalanx.sim.faults import FaultModel
from phalanx.sim.generator import generate
from phalanx.sim.metrics import PolicyMetrics, per_account, summarize, to_json_dict
from phalanx.sim.records import RunRecord
from phalanx.sim.report import markdown_table, render_table, write_json
from phalanx.sim.simulator import Simulator
from phalanx.sim.traces import FORMATS, guess_format, openb_cluster, read_trace
from phalanx.sim.traces.options import TraceOptions, select
from phalanx.sim.workload import TraceJob

__all__ = ["OPENB_NODE_LIST", "add_arguments", "run"]

OPENB_NODE_LIST = "openb_node_list_gpu_node.csv"
"""The node list an openb trace is replayed on when no cluster is named."""
DEFAULT_GPUS_PER_NODE = 8
DEFAULT_NODES_PER_SWITCH = 8
_REJECTED_EXAMPLES = 5


def add_arguments(parser: argparse.ArgumentParser) -> None:
    work = parser.add_argument_group("workload (one of --trace and --generate)")
    source = work.add_mutually_exclusive_group(required=True)
    source.add_argument("--trace", metavar="PATH", help="trace file to replay")
    source.add_argument(
        "--generate",
        metavar="DAYS",
        type=_positive_float,
        help="use the seeded synthetic workload of DAYS days instead",
    )
    work.add_argument(
        "--trace-format",
        choices=FORMATS,
        type=str.lower,
        help="format of --trace (default: from its header or extension)",
    )
    work.add_argument(
        "--limit",
        metavar="N",
        type=_non_negative_int,
        help="keep the first N jobs (after --window)",
    )
    work.add_argument(
        "--window",
        metavar="START:END",
        type=_window,
        help="keep jobs submitted in [START, END) hours after the first submit",
    )
    work.add_argument(
        "--load",
        metavar="X",
        type=_positive_float,
        default=1.0,
        help="divide submit times by X: X=2 doubles the arrival rate (default 1)",
    )
    work.add_argument(
        "--seed",
        metavar="S",
        type=int,
        default=0,
        help="seed of time-limit estimates, the generator and faults (default 0)",
    )

    where = parser.add_argument_group("cluster (one of --cluster and --nodes)")
    shape = where.add_mutually_exclusive_group()
    shape.add_argument("--cluster", metavar="FILE", help="cluster definition (YAML)")
    shape.add_argument("--nodes", metavar="N", type=int, help="a uniform cluster of N nodes")
    where.add_argument(
        "--gpus-per-node",
        metavar="G",
        type=int,
        help=f"GPUs per node with --nodes (default {DEFAULT_GPUS_PER_NODE})",
    )
    where.add_argument(
        "--nodes-per-switch",
        metavar="S",
        type=int,
        help=f"nodes per leaf switch with --nodes (default "
        f"{DEFAULT_NODES_PER_SWITCH}) or for an openb node list "
        f"(default 16)",
    )

    sim = parser.add_argument_group("simulation")
    sim.add_argument(
        "--policy",
        metavar="NAME",
        action="append",
        dest="policies",
        help=f"a policy to run; repeat for several (default all: {', '.join(POLICIES)})",
    )
    sim.add_argument(
        "--mtbf",
        metavar="HOURS",
        type=_positive_float,
        help="mean time between failures of each node (needs --repair)",
    )
    sim.add_argument(
        "--repair",
        metavar="HOURS",
        type=_positive_float,
        help="mean repair time of a failed node (needs --mtbf)",
    )
    sim.add_argument(
        "--mfu",
        metavar="F",
        type=_fraction,
        default=0.4,
        help="model FLOPs utilisation for productive GPU-hours (default 0.4)",
    )
    sim.add_argument(
        "--checkpoint-save",
        metavar="SECONDS",
        type=_non_negative_int,
        default=CHECKPOINT_SAVE_MS // SECOND,
        help="time a job takes to save a checkpoint when a preemption suspends it "
        f"(default {CHECKPOINT_SAVE_MS // SECOND})",
    )
    sim.add_argument(
        "--checkpoint-restore",
        metavar="SECONDS",
        type=_non_negative_int,
        default=CHECKPOINT_RESTORE_MS // SECOND,
        help="time a job resuming from a checkpoint takes to load it "
        f"(default {CHECKPOINT_RESTORE_MS // SECOND})",
    )

    out = parser.add_argument_group("output")
    out.add_argument("--json", metavar="FILE", help="write every figure as JSON")
    out.add_argument(
        "--per-account",
        action="store_true",
        help="add per-account figures to the JSON under 'accounts'",
    )
    out.add_argument("--markdown", metavar="FILE", help="write the table as markdown")
    out.add_argument("--out", metavar="DIR", help="write PNG charts into DIR")


def run(args: argparse.Namespace) -> int:
    _check_combinations(args)
    names = list(dict.fromkeys(args.policies or POLICIES))
    profiles = [profile(name) for name in names]  # unknown names fail before any work
    workload = _load_workload(args)
    cluster = _build_cluster(args, workload.fmt)
    faults = (
        None
        if args.mtbf is None
        else FaultModel(round(args.mtbf * HOUR), round(args.repair * HOUR), args.seed)
    )
    keep_runs = args.out is not None
    results: dict[str, PolicyMetrics] = {}
    accounts: dict[str, dict[str, PolicyMetrics]] = {}
    runs: dict[str, RunRecord] = {}
    rejected: dict[str, list[str]] = {}
    with RunProgress() as progress:
        for prof in profiles:
            simulator = Simulator(
                cluster.cluster,
                prof,
                workload.jobs,
                faults=faults,
                mfu=args.mfu,
                keep_segments=keep_runs or args.per_account,
                checkpoint_save_ms=args.checkpoint_save * SECOND,
                checkpoint_restore_ms=args.checkpoint_restore * SECOND,
            )
            record = simulator.run(progress=progress.start(prof.name, len(workload.jobs)))
            metrics = summarize(record)
            progress.finished(prof.name, metrics.jobs, record.sim_wall_s)
            results[prof.name] = metrics
            rejected[prof.name] = _rejected_examples(record, workload.jobs)
            if args.per_account:
                accounts[prof.name] = per_account(record)
            if keep_runs:
                runs[prof.name] = record

    _print_results(results, _title(workload, cluster, args.load))
    for name, metrics in results.items():
        if metrics.rejected:
            jobs = "1 job" if metrics.rejected == 1 else f"{metrics.rejected:,} jobs"
            ids = "job id" if len(rejected[name]) == 1 else "job ids"
            print(
                f"policy {name}: {jobs} rejected (could never fit this cluster), "
                f"e.g. {ids} {', '.join(rejected[name])}"
            )
    _write_outputs(args, results, accounts, runs, workload, cluster)
    return 0


# -- 1. the workload ------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Workload:
    jobs: list[TraceJob]
    label: str
    """The trace's file name, or how the workload was generated."""
    source: str
    fmt: str | None
    """The trace format; None for a generated workload."""


def _load_workload(args: argparse.Namespace) -> Workload:
    if args.trace is None:
        jobs = generate(args.seed, days=args.generate)
        options = TraceOptions(args.limit, args.window, args.load, args.seed)
        kept = [replace(jobs[i], submit=at) for i, at in select([j.submit for j in jobs], options)]
        label = f"generated ({args.generate:g} days, seed {args.seed})"
        return Workload(kept, label, f"generate:{args.generate:g}", None)
    path: str = args.trace
    if not os.path.isfile(path):
        raise TraceError("no such trace file", source=path)
    fmt: str = args.trace_format or guess_format(path)
    jobs = read_trace(
        path, fmt, limit=args.limit, window=args.window, load=args.load, seed=args.seed
    )
    return Workload(jobs, os.path.basename(path), path, fmt)


# -- 2. the cluster -------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ClusterChoice:
    cluster: Cluster
    source: str
    """The YAML file, the openb node list, or ``--nodes``."""

    def facts(self) -> dict[str, Any]:
        """Size and shape, for titles and the JSON report."""
        nodes = self.cluster.nodes
        per_node = {node.gpus for node in nodes}
        leaf = max((len(leaf.children) for leaf in self.cluster.leaves), default=len(nodes))
        return {
            "name": self.cluster.name,
            "source": self.source,
            "nodes": len(nodes),
            "gpus": self.cluster.total_gpus,
            "gpus_per_node": per_node.pop() if len(per_node) == 1 else None,
            "nodes_per_switch": leaf,
            "leaves": len(self.cluster.leaves),
        }


def _build_cluster(args: argparse.Namespace, fmt: str | None) -> ClusterChoice:
    if args.cluster is not None:
        with open(args.cluster, encoding="utf-8") as handle:
            text = handle.read()
        return ClusterChoice(cluster_from_yaml(text, args.cluster), args.cluster)
    if args.nodes is not None:
        cluster = regular_cluster(
            args.nodes,
            DEFAULT_GPUS_PER_NODE if args.gpus_per_node is None else args.gpus_per_node,
            DEFAULT_NODES_PER_SWITCH if args.nodes_per_switch is None else args.nodes_per_switch,
        )
        return ClusterChoice(cluster, "--nodes")
    if fmt == "openb":
        node_list = os.path.join(os.path.dirname(args.trace), OPENB_NODE_LIST)
        if args.nodes_per_switch is None:
            return ClusterChoice(openb_cluster(node_list), node_list)
        return ClusterChoice(openb_cluster(node_list, args.nodes_per_switch), node_list)
    raise InputError("name the cluster: --cluster FILE or --nodes N", field="--cluster")


def _check_combinations(args: argparse.Namespace) -> None:
    """Argument combinations argparse cannot express."""
    if (args.mtbf is None) != (args.repair is None):
        given, missing = ("--mtbf", "--repair") if args.repair is None else ("--repair", "--mtbf")
        raise InputError(f"needed with {given}", field=missing)
    if args.cluster is not None:
        for flag, value in (
            ("--gpus-per-node", args.gpus_per_node),
            ("--nodes-per-switch", args.nodes_per_switch),
        ):
            if value is not None:
                raise InputError(
                    "the cluster file already says this; use it with --nodes", field=flag
                )
    if args.nodes is None and args.gpus_per_node is not None:
        raise InputError("needs --nodes", field="--gpus-per-node")
    if args.trace is None and args.trace_format is not None:
        raise InputError("only applies to --trace", field="--trace-format")
    if args.per_account and args.json is None:
        raise InputError(
            "per-account figures go into the JSON: add --json FILE", field="--per-account"
        )


# -- 4. the report ----------------------------------------------------------------------------


def _title(workload: Workload, cluster: ClusterChoice, load: float) -> str:
    facts = cluster.facts()
    if facts["gpus_per_node"] is not None:
        size = f"{facts['nodes']:,} nodes x {facts['gpus_per_node']} GPUs ({facts['gpus']:,} GPUs)"
    else:
        size = f"{facts['nodes']:,} nodes ({facts['gpus']:,} GPUs)"
    return (
        f"{workload.label}: {len(workload.jobs):,} jobs on {size}, "
        f"{facts['nodes_per_switch']}-node leaves, load {load:g}"
    )


def _print_results(results: dict[str, PolicyMetrics], title: str) -> None:
    """The table on stdout, never squeezed: a console narrower than the table is widened
    (a terminal then wraps lines) rather than letting rich cut every cell to an ellipsis."""
    table = render_table(results, title=title)
    console = Console()
    unbounded = console.options.update(max_width=10_000)
    needed = Measurement.get(console, unbounded, table).maximum
    if console.width < needed:
        console = Console(width=needed)
    console.print(table)


def _rejected_examples(record: RunRecord, workload: Sequence[TraceJob]) -> list[str]:
    """The first few rejected jobs, with their trace id and line where they can be told."""
    source = _trace_jobs_by_id(record, workload)
    out = []
    for job in record.jobs:
        if job.rejected is None:
            continue
        origin = source.get(job.job_id)
        if origin is None:
            out.append(str(job.job_id))
        else:
            where = origin.trace_id + ("" if origin.line is None else f", line {origin.line}")
            out.append(f"{job.job_id} ({where})")
        if len(out) == _REJECTED_EXAMPLES:
            break
    return out


def _trace_jobs_by_id(record: RunRecord, workload: Sequence[TraceJob]) -> dict[int, TraceJob]:
    """Engine job id -> the trace job it came from, when every trace job made one job.

    The simulator submits jobs in (submit, position) order and numbers them in that order, so
    the records (kept in submission order) pair with the sorted workload one to one. A job array
    would make several records of one trace job; then nothing is paired rather than guessed.
    """
    if len(record.jobs) != len(workload):
        return {}
    order = sorted(range(len(workload)), key=lambda i: (workload[i].submit, i))
    return {job.job_id: workload[i] for job, i in zip(record.jobs, order, strict=True)}


def _write_outputs(
    args: argparse.Namespace,
    results: dict[str, PolicyMetrics],
    accounts: dict[str, dict[str, PolicyMetrics]],
    runs: dict[str, RunRecord],
    workload: Workload,
    cluster: ClusterChoice,
) -> None:
    written: list[str] = []
    if args.json is not None:
        extra: dict[str, Any] = {
            "trace": workload.source,
            "trace_format": workload.fmt,
            "cluster": cluster.facts(),
            "load": args.load,
            "seed": args.seed,
            "limit": args.limit,
            "window_ms": None if args.window is None else list(args.window),
            "mfu": args.mfu,
            "checkpoint_save_s": args.checkpoint_save,
            "checkpoint_restore_s": args.checkpoint_restore,
            "faults": None
            if args.mtbf is None
            else {"mtbf_hours": args.mtbf, "repair_hours": args.repair},
        }
        if args.per_account:
            extra["accounts"] = {
                policy: {account: to_json_dict(m) for account, m in by_account.items()}
                for policy, by_account in accounts.items()
            }
        write_json(args.json, results, extra=extra)
        written.append(args.json)
    if args.markdown is not None:
        with open(args.markdown, "w", encoding="utf-8") as handle:
            handle.write(markdown_table(results))
        written.append(args.markdown)
    if args.out is not None:
        from phalanx.sim.plots import write_plots

        written.extend(write_plots(args.out, runs))
    for path in written:
        print(f"wrote {path}")


# -- argument types ---------------------------------------------------------------------------


def _number(kind: Callable[[str], float], text: str) -> float:
    try:
        value = kind(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if value != value or value in (float("inf"), float("-inf")):
        raise argparse.ArgumentTypeError(f"not a finite number: {text!r}")
    return value


def _positive_float(text: str) -> float:
    value = _number(float, text)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be positive: {text!r}")
    return value


def _fraction(text: str) -> float:
    value = _number(float, text)
    if not 0 < value <= 1:
        raise argparse.ArgumentTypeError(f"must be in (0, 1]: {text!r}")
    return value


def _non_negative_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"must not be negative: {text!r}")
    return value


def _window(text: str) -> tuple[Instant, Instant]:
    start, sep, end = text.partition(":")
    if not sep:
        raise argparse.ArgumentTypeError(f"expected START:END in hours, got {text!r}")
    low, high = _number(float, start), _number(float, end)
    if low < 0 or high <= low:
        raise argparse.ArgumentTypeError(f"expected 0 <= START < END, got {text!r}")
    return round(low * HOUR), round(high * HOUR)
