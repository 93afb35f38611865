"""``phalanx simulate``: replay one workload under several policies and compare them.

A thin shell over ``phalanx.sim.experiment`` (which does the work): parse, run, print. Recipe:

1. read the workload: a trace (``--trace``, any of ``traces.FORMATS``) or the seeded generator
   (``--generate DAYS``), with the shared options ``--limit``, ``--window``, ``--load``;
2. build the cluster: ``--cluster FILE`` (YAML), ``--nodes N`` (a uniform cluster) or, for an
   openb trace, the node list next to it; ``--queues FILE`` gives it Kueue's and Volcano's
   queue objects (in place of any under the cluster YAML's ``queues:``);
3. run each policy over the same workload, showing progress on stderr;
4. print the side-by-side table, then the jobs no policy could ever place; write the JSON,
   markdown and plots asked for.
"""

from __future__ import annotations

import argparse
import dataclasses
from collections.abc import Callable

from rich.console import Console
from rich.measure import Measurement

from phalanx.cli.progress import RunProgress
from phalanx.domain.time import HOUR, SECOND, Instant
from phalanx.errors import InputError
from phalanx.policies.catalog import POLICIES, profile
from phalanx.sim.elastic import DEFAULT_EFFICIENCY, make_elastic
from phalanx.sim.executor import CHECKPOINT_RESTORE_MS, CHECKPOINT_SAVE_MS
from phalanx.sim.experiment import (
    ClusterChoice,
    Experiment,
    PolicyResult,
    Workload,
    cluster_file,
    generated_workload,
    openb_node_list,
    run_experiment,
    trace_workload,
    uniform_cluster,
    write_results,
)
from phalanx.sim.faults import FaultModel
from phalanx.sim.metrics import PolicyMetrics
from phalanx.sim.report import markdown_table, render_size_table, render_table
from phalanx.sim.traces import FORMATS
from phalanx.sim.traces.options import TraceOptions

__all__ = [
    "add_arguments",
    "add_cluster_arguments",
    "add_workload_arguments",
    "build_cluster",
    "check_workload_cluster",
    "fraction",
    "non_negative_int",
    "positive_float",
    "run",
]

DEFAULT_GPUS_PER_NODE = 8
DEFAULT_NODES_PER_SWITCH = 8


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_workload_arguments(parser)
    add_cluster_arguments(parser)
    _add_simulation_arguments(parser)
    grow = parser.add_argument_group("elastic jobs (phalanx.sim.elastic)")
    grow.add_argument(
        "--elastic",
        metavar="SHARE",
        type=float,
        default=0.0,
        help="make about SHARE (0-1) of the jobs elastic: a job of N nodes runs on "
        "max(1, N/2) to 2N, grown onto free nodes and shrunk instead of preempted "
        "(chosen by --seed; default 0)",
    )
    grow.add_argument(
        "--elastic-efficiency",
        metavar="E",
        type=float,
        default=DEFAULT_EFFICIENCY,
        help="each node beyond the first adds E of one node's throughput "
        f"(default {DEFAULT_EFFICIENCY})",
    )


def add_workload_arguments(
    parser: argparse.ArgumentParser, *, sweep: bool = False
) -> argparse._MutuallyExclusiveGroup:
    """The workload options: ``--trace`` or ``--generate`` (the returned group, required, to
    which a caller may add sources), ``--trace-format``, ``--limit``, ``--window``, ``--seed``
    and, unless ``sweep`` (a caller sweeping loads of its own), ``--load``."""
    heading = "workload (one of --trace and --generate)" if not sweep else "workload"
    work = parser.add_argument_group(heading)
    source = work.add_mutually_exclusive_group(required=True)
    source.add_argument("--trace", metavar="PATH", help="trace file to replay")
    source.add_argument(
        "--generate",
        metavar="DAYS",
        type=positive_float,
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
        type=non_negative_int,
        help="keep the first N jobs (after --window)",
    )
    work.add_argument(
        "--window",
        metavar="START:END",
        type=_window,
        help="keep jobs submitted in [START, END) hours after the first submit",
    )
    if not sweep:
        work.add_argument(
            "--load",
            metavar="X",
            type=positive_float,
            default=1.0,
            help="divide submit times by X: X=2 doubles the arrival rate (default 1)",
        )
    work.add_argument(
        "--seed",
        metavar="S",
        type=int,
        default=0,
        help="seed of time-limit estimates, the generator and faults (default 0)"
        + ("; the first of --seeds" if sweep else ""),
    )
    return source


def add_cluster_arguments(parser: argparse.ArgumentParser) -> None:
    """The cluster options: ``--cluster``, ``--slurm-conf``, ``--nodes``, ``--queues``,
    ``--gpus-per-node``, ``--nodes-per-switch`` (read back by ``build_cluster``)."""
    where = parser.add_argument_group("cluster (one of --cluster, --slurm-conf and --nodes)")
    shape = where.add_mutually_exclusive_group()
    shape.add_argument("--cluster", metavar="FILE", help="cluster definition (YAML)")
    shape.add_argument(
        "--slurm-conf",
        metavar="FILE",
        help="a Slurm cluster's slurm.conf (with the topology.conf and gres.conf beside it)",
    )
    shape.add_argument("--nodes", metavar="N", type=int, help="a uniform cluster of N nodes")
    where.add_argument(
        "--queues",
        metavar="FILE",
        help="Kueue/Volcano queue objects (multi-document YAML), in place of the cluster "
        "file's queues: a job's account is its namespace",
    )
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


def _add_simulation_arguments(parser: argparse.ArgumentParser) -> None:
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
        type=positive_float,
        help="mean time between failures of each node (needs --repair)",
    )
    sim.add_argument(
        "--repair",
        metavar="HOURS",
        type=positive_float,
        help="mean repair time of a failed node (needs --mtbf)",
    )
    sim.add_argument(
        "--gpu-mtbf",
        metavar="HOURS",
        type=positive_float,
        help="mean time between GPU faults of each node, found by its health checks: the "
        "node is drained (needs --gpu-repair)",
    )
    sim.add_argument(
        "--gpu-repair",
        metavar="HOURS",
        type=positive_float,
        help="mean time from a GPU fault until the node is resumed (needs --gpu-mtbf)",
    )
    sim.add_argument(
        "--fatal-fraction",
        metavar="F",
        type=fraction,
        default=0.5,
        help="share of GPU faults that are fatal Xids, requeueing the node's jobs at once "
        "(default 0.5; the others let running jobs finish)",
    )
    sim.add_argument(
        "--mfu",
        metavar="F",
        type=fraction,
        default=0.4,
        help="model FLOPs utilisation for productive GPU-hours (default 0.4)",
    )
    sim.add_argument(
        "--checkpoint-save",
        metavar="SECONDS",
        type=non_negative_int,
        default=CHECKPOINT_SAVE_MS // SECOND,
        help="time a job takes to save a checkpoint when a preemption suspends it "
        f"(default {CHECKPOINT_SAVE_MS // SECOND})",
    )
    sim.add_argument(
        "--checkpoint-restore",
        metavar="SECONDS",
        type=non_negative_int,
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
    _check_faults(args)
    check_workload_cluster(args)
    if args.per_account and args.json is None:
        raise InputError(
            "per-account figures go into the JSON: add --json FILE", field="--per-account"
        )
    names = list(dict.fromkeys(args.policies or POLICIES))
    profiles = [profile(name) for name in names]  # unknown names fail before any work
    workload = _load_workload(args)
    experiment = Experiment(
        workload,
        build_cluster(args, workload.fmt),
        profiles,
        faults=_faults(args),
        mfu=args.mfu,
        checkpoint_save_ms=round(args.checkpoint_save * SECOND),
        checkpoint_restore_ms=round(args.checkpoint_restore * SECOND),
        keep_runs=args.out is not None,
        per_account=args.per_account,
    )
    with RunProgress() as progress:
        results = run_experiment(experiment, progress)

    metrics = {name: result.metrics for name, result in results.items()}
    _print_results(metrics, _title(experiment))
    for name, result in results.items():
        rejected = result.metrics.rejected
        if rejected:
            jobs = "1 job" if rejected == 1 else f"{rejected:,} jobs"
            examples = result.rejected_examples
            ids = "job id" if len(examples) == 1 else "job ids"
            print(
                f"policy {name}: {jobs} rejected (could never fit this cluster), "
                f"e.g. {ids} {', '.join(examples)}"
            )
    for name, result in results.items():
        unfinished = result.metrics.unfinished
        if unfinished:
            jobs = "1 job" if unfinished == 1 else f"{unfinished:,} jobs"
            print(
                f"policy {name}: {jobs} never finished (the replay ended when nothing more "
                "could happen: e.g. no ClusterQueue admits them)"
            )
    _write_outputs(args, experiment, results)
    return 0


def _load_workload(args: argparse.Namespace) -> Workload:
    options = TraceOptions(args.limit, args.window, args.load, args.seed)
    if args.trace is None:
        workload = generated_workload(args.generate, options)
    else:
        workload = trace_workload(args.trace, args.trace_format, options)
    if args.elastic or args.elastic_efficiency != DEFAULT_EFFICIENCY:
        jobs = make_elastic(
            workload.jobs, args.elastic, seed=args.seed, efficiency=args.elastic_efficiency
        )
        workload = dataclasses.replace(workload, jobs=jobs)
    return workload


def build_cluster(args: argparse.Namespace, fmt: str | None) -> ClusterChoice:
    """The cluster the options of ``add_cluster_arguments`` name (``fmt``: the trace's format,
    for an openb trace's own node list)."""
    from phalanx.config.clusterspec import check_queue_routes

    choice = _cluster_shape(args, fmt)
    if args.queues is not None:
        import dataclasses

        from phalanx.config.queues import queues_from_file

        queues = queues_from_file(args.queues)
        cluster = dataclasses.replace(choice.cluster, queues=queues)
        choice = dataclasses.replace(choice, cluster=cluster)
    where = args.queues or args.cluster or args.slurm_conf or "<cluster>"
    check_queue_routes(choice.cluster, str(where))
    return choice


def _cluster_shape(args: argparse.Namespace, fmt: str | None) -> ClusterChoice:
    if args.cluster is not None:
        return cluster_file(args.cluster)
    if args.slurm_conf is not None:
        from phalanx.server.slurmconf_files import cluster_from_slurm_conf

        try:
            return ClusterChoice(cluster_from_slurm_conf(args.slurm_conf), args.slurm_conf)
        except OSError as exc:
            raise InputError(
                f"cannot read it: {exc.strerror or exc}", source=args.slurm_conf
            ) from None
    if args.nodes is not None:
        return uniform_cluster(
            args.nodes,
            DEFAULT_GPUS_PER_NODE if args.gpus_per_node is None else args.gpus_per_node,
            DEFAULT_NODES_PER_SWITCH if args.nodes_per_switch is None else args.nodes_per_switch,
        )
    if fmt == "openb":
        return openb_node_list(args.trace, args.nodes_per_switch)
    raise InputError(
        "name the cluster: --cluster FILE, --slurm-conf FILE or --nodes N", field="--cluster"
    )


def _faults(args: argparse.Namespace) -> FaultModel | None:
    if args.mtbf is None and args.gpu_mtbf is None:
        return None
    return FaultModel(
        None if args.mtbf is None else round(args.mtbf * HOUR),
        round((args.repair or 0) * HOUR),
        args.seed,
        gpu_mtbf=None if args.gpu_mtbf is None else round(args.gpu_mtbf * HOUR),
        gpu_repair=round((args.gpu_repair or 0) * HOUR),
        fatal_fraction=args.fatal_fraction,
    )


def _check_faults(args: argparse.Namespace) -> None:
    for first, second in (("mtbf", "repair"), ("gpu_mtbf", "gpu_repair")):
        a, b = getattr(args, first), getattr(args, second)
        if (a is None) != (b is None):
            flags = ("--" + first.replace("_", "-"), "--" + second.replace("_", "-"))
            given, missing = flags if b is None else flags[::-1]
            raise InputError(f"needed with {given}", field=missing)


def check_workload_cluster(args: argparse.Namespace) -> None:
    """Combinations of the workload and cluster options that argparse cannot express."""
    if args.cluster is not None or args.slurm_conf is not None:
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


def _title(experiment: Experiment) -> str:
    facts = experiment.cluster.facts()
    workload = experiment.workload
    if facts["gpus_per_node"] is not None:
        size = f"{facts['nodes']:,} nodes x {facts['gpus_per_node']} GPUs ({facts['gpus']:,} GPUs)"
    else:
        size = f"{facts['nodes']:,} nodes ({facts['gpus']:,} GPUs)"
    return (
        f"{workload.label}: {len(workload.jobs):,} jobs on {size}, "
        f"{facts['nodes_per_switch']}-node leaves, load {workload.options.load:g}"
    )


def _print_results(results: dict[str, PolicyMetrics], title: str) -> None:
    """The tables on stdout, never squeezed: a console narrower than a table is widened
    (a terminal then wraps lines) rather than letting rich cut every cell to an ellipsis."""
    for table in (render_table(results, title=title), render_size_table(results)):
        console = Console()
        unbounded = console.options.update(max_width=10_000)
        needed = Measurement.get(console, unbounded, table).maximum
        if console.width < needed:
            console = Console(width=needed)
        console.print(table)


def _write_outputs(
    args: argparse.Namespace, experiment: Experiment, results: dict[str, PolicyResult]
) -> None:
    written: list[str] = []
    if args.json is not None:
        write_results(args.json, experiment, results)
        written.append(args.json)
    if args.markdown is not None:
        with open(args.markdown, "w", encoding="utf-8") as handle:
            handle.write(markdown_table({name: r.metrics for name, r in results.items()}))
        written.append(args.markdown)
    if args.out is not None:
        from phalanx.sim.plots import write_plots

        runs = {name: r.run for name, r in results.items() if r.run is not None}
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


def positive_float(text: str) -> float:
    """argparse type: a finite number above 0."""
    value = _number(float, text)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be positive: {text!r}")
    return value


def fraction(text: str) -> float:
    """argparse type: a number in (0, 1]."""
    value = _number(float, text)
    if not 0 < value <= 1:
        raise argparse.ArgumentTypeError(f"must be in (0, 1]: {text!r}")
    return value


def non_negative_int(text: str) -> int:
    """argparse type: a whole number, 0 or more."""
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
