"""``phalanx advise``: which scheduler for my workload, with measurements.

A thin shell over ``phalanx.sim`` (sweep, advice, advice_report, advice_html). Recipe:

1. read the workload: a trace or the generator (``phalanx simulate``'s options), or a mix
   (``--mix FILE`` or a built-in name); the cluster as ``phalanx simulate`` builds it;
2. plan the sweep: every set-up x load x seed (``--setup``, ``--loads``, ``--seeds``); the
   two-cluster split only where the workload has serving;
3. run it serially, on ``--workers`` processes or on ``--dask ADDRESS``, one line per run on
   stderr;
4. sum it up per set-up (medians and spread over seeds), check the common claims, recommend;
5. print the tables and the recommendation; write ``--json`` and ``--html``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import TYPE_CHECKING, Any

from phalanx.cli.simulate import (
    add_cluster_arguments,
    add_workload_arguments,
    build_cluster,
    check_workload_cluster,
    fraction,
    non_negative_int,
    positive_float,
)
from phalanx.domain.time import SECOND
from phalanx.errors import ConfigError, InputError

if TYPE_CHECKING:
    from phalanx.domain.cluster import Cluster
    from phalanx.sim.sweep import WorkloadSource
    from phalanx.sim.workload import TraceJob

__all__ = ["add_arguments", "run"]

DEFAULT_SEEDS = 3
DEFAULT_SLO_WAIT_S = 60.0
DEFAULT_SLO_TARGET = 0.99


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from phalanx.sim.mixes import BUILTIN_MIXES
    from phalanx.sim.setups import SETUPS

    source = add_workload_arguments(parser, sweep=True)
    source.add_argument(
        "--mix",
        metavar="NAME|FILE",
        help=f"a workload mix: a YAML file or a built-in ({', '.join(BUILTIN_MIXES)})",
    )
    add_cluster_arguments(parser)
    sweep = parser.add_argument_group("sweep")
    sweep.add_argument(
        "--setup",
        metavar="NAME",
        action="append",
        dest="setups",
        help=f"a set-up to compare; repeat for several (default all: {', '.join(SETUPS)})",
    )
    sweep.add_argument(
        "--seeds",
        metavar="N",
        type=_positive_int,
        default=DEFAULT_SEEDS,
        help=f"seeds per set-up and load: --seed, --seed+1, ... (default {DEFAULT_SEEDS})",
    )
    sweep.add_argument(
        "--loads",
        metavar="X,Y,...",
        type=_loads,
        default=(1.0,),
        help="arrival-rate scales to run, e.g. 0.7,1.0,1.3 (default 1)",
    )
    sweep.add_argument(
        "--workers", metavar="N", type=_positive_int, default=1, help="local processes (default 1)"
    )
    sweep.add_argument(
        "--dask", metavar="ADDRESS", help="run the sweep on this dask.distributed scheduler"
    )
    money = parser.add_argument_group("efficiency model")
    money.add_argument(
        "--cost-per-gpu-hour",
        metavar="PRICE",
        type=positive_float,
        default=1.0,
        help="price of one GPU-hour (default 1: costs read as GPU-hours paid per productive one)",
    )
    money.add_argument(
        "--mfu",
        metavar="[CLASS=]F",
        action="append",
        default=[],
        help="model FLOPs utilisation: F for every class, CLASS=F for one (repeatable; "
        "default 0.4, or the mix file's)",
    )
    money.add_argument(
        "--slo-wait",
        metavar="SECONDS",
        type=non_negative_int,
        default=int(DEFAULT_SLO_WAIT_S),
        help=f"a serving replica queued no longer than this meets its SLO "
        f"(default {DEFAULT_SLO_WAIT_S:g})",
    )
    money.add_argument(
        "--slo-target",
        metavar="F",
        type=fraction,
        default=DEFAULT_SLO_TARGET,
        help=f"SLO attainment a set-up must keep to be recommended (default {DEFAULT_SLO_TARGET})",
    )
    out = parser.add_argument_group("output")
    out.add_argument("--json", metavar="FILE", help="write the figures and advice as JSON")
    out.add_argument("--html", metavar="FILE", help="write a self-contained HTML report")


def run(args: argparse.Namespace) -> int:
    from phalanx.sim.advice import Advice, check_claims, recommend, reference_load, summarise
    from phalanx.sim.advice_report import advice_json, print_advice
    from phalanx.sim.setups import setup
    from phalanx.sim.sweep import RunFigures, RunSpec, run_sweep

    check_workload_cluster(args)
    if args.mix is not None and args.trace_format is not None:
        raise InputError("only applies to --trace", field="--trace-format")
    if args.dask is not None and args.workers != 1:
        raise InputError("choose --workers or --dask, not both", field="--dask")
    names = list(dict.fromkeys(args.setups or _all_setups()))
    for name in names:
        setup(name)  # unknown names fail before any work
    source = _source(args)
    ref_jobs = source.jobs(args.seed, args.loads[0])
    cluster = build_cluster(args, source.fmt).cluster
    classes = source.classes()
    mfu, default_mfu = _mfu(args.mfu, source)
    ref_load = reference_load(args.loads)
    serving_peak = _serving_peak(source, args.seed, ref_load)
    notes = _plan_split(names, source, cluster, serving_peak, explicit=bool(args.setups))
    seeds = [args.seed + k for k in range(args.seeds)]
    specs = [
        RunSpec(
            source,
            cluster,
            name,
            seed,
            load,
            mfu,
            default_mfu,
            args.slo_wait * SECOND,
            split_serving_gpus=serving_peak,
        )
        for name in names
        for load in args.loads
        for seed in seeds
    ]
    total = len(specs)
    finished = 0

    def done(figures: RunFigures) -> None:
        nonlocal finished
        finished += 1
        print(
            f"[{finished}/{total}] {figures.setup} seed {figures.seed} load {figures.load:g}: "
            f"{figures.metrics.jobs:,} jobs in {figures.wall_s:.1f} s",
            file=sys.stderr,
            flush=True,
        )

    runs = run_sweep(specs, workers=args.workers, dask=args.dask, done=done)
    summary = summarise(runs, args.cost_per_gpu_hour, cluster.total_gpus)
    if source.serving_classes():
        notes.append(
            "serving modelled as long-running replica jobs in QOS high whose count follows a "
            "daily curve (replicas per bucket), not as a service with requests; SLO attainment "
            f"= share of replica demand-time whose replica ran or had waited under "
            f"{args.slo_wait} s. The slurm and phalanx profiles order (and may preempt) by "
            "QOS; the k8s, kueue and volcano profiles order by submit time and do not see it"
        )
    context: dict[str, Any] = {
        "workload": {
            "kind": source.kind,
            "source": source.label,
            "jobs": len(ref_jobs),
            "classes": list(classes),
            "serving_classes": list(source.serving_classes()),
            "multinode_gpu_hour_share": _multinode_share(ref_jobs),
        },
        "cluster": {
            "nodes": len(cluster.nodes),
            "gpus": cluster.total_gpus,
            "leaves": len(cluster.leaves),
        },
        "loads": list(args.loads),
        "seeds": seeds,
        "cost_per_gpu_hour": args.cost_per_gpu_hour,
        "mfu": {c: dict(mfu).get(c, default_mfu) for c in classes},
        "slo_wait_s": args.slo_wait,
        "slo_target": args.slo_target,
        "notes": notes,
    }
    advice = Advice(
        summary, recommend(summary, args.slo_target), check_claims(summary), runs, context
    )
    title = (
        f"{source.label}: {len(ref_jobs):,} jobs (seed {args.seed}, load {args.loads[0]:g}) "
        f"on {len(cluster.nodes):,} nodes ({cluster.total_gpus:,} GPUs), "
        f"{len(seeds)} seed{'s' if len(seeds) > 1 else ''}"
    )
    print_advice(advice, title)
    if args.json is not None:
        with open(args.json, "w", encoding="utf-8") as handle:
            json.dump(advice_json(advice), handle, sort_keys=True, indent=2)
            handle.write("\n")
        print(f"wrote {args.json}")
    if args.html is not None:
        from phalanx.sim.advice_html import advice_html

        page = advice_html(advice, title)
        with open(args.html, "w", encoding="utf-8") as handle:
            handle.write(page)
        print(f"wrote {args.html}")
    return 0


def _all_setups() -> list[str]:
    from phalanx.sim.setups import SETUPS

    return list(SETUPS)


def _source(args: argparse.Namespace) -> WorkloadSource:
    from phalanx.sim.mixes import BUILTIN_MIXES, read_mix
    from phalanx.sim.sweep import WorkloadSource
    from phalanx.sim.traces import guess_format

    if args.mix is not None:
        if args.limit is not None or args.window is not None:
            raise InputError(
                "does not apply to --mix", field="--limit" if args.limit else "--window"
            )
        mix = BUILTIN_MIXES.get(args.mix)
        if mix is None:
            if not os.path.isfile(args.mix):
                raise ConfigError(
                    f"neither a file nor a built-in mix ({', '.join(BUILTIN_MIXES)})",
                    source=args.mix,
                    field="--mix",
                )
            mix = read_mix(args.mix)
        return WorkloadSource("mix", mix=mix, label=f"mix {args.mix}")
    window = args.window
    if args.trace is not None:
        if not os.path.isfile(args.trace):
            raise InputError("no such trace file", source=args.trace, field="--trace")
        fmt = args.trace_format or guess_format(args.trace)
        return WorkloadSource(
            "trace", args.trace, fmt, args.limit, window, label=os.path.basename(args.trace)
        )
    return WorkloadSource(
        "generate",
        limit=args.limit,
        window=window,
        days=args.generate,
        label=f"generated ({args.generate:g} days)",
    )


def _mfu(values: list[str], source: WorkloadSource) -> tuple[tuple[tuple[str, float], ...], float]:
    """(MFU by class, the default for the others): the mix file's, then ``--mfu``'s."""
    default = 0.4
    by_class: dict[str, float] = {}
    if source.mix is not None:
        by_class.update({c.name: c.mfu for c in source.mix.classes if c.mfu is not None})
    classes = source.classes()
    for text in values:
        name, sep, number = text.rpartition("=")
        try:
            value = fraction(number)
        except argparse.ArgumentTypeError as exc:
            raise InputError(str(exc), field="--mfu") from None
        if not sep:
            default = value
            by_class = {c: value for c in by_class}
        elif name not in classes:
            raise InputError(
                f"unknown workload class {name!r}; classes: {', '.join(classes)}", field="--mfu"
            )
        else:
            by_class[name] = value
    return tuple(sorted(by_class.items())), default


def _serving_peak(source: WorkloadSource, seed: int, load: float) -> float:
    """The serving load's peak in GPUs at ``load``: what a static split is sized for."""
    from phalanx.sim.setups import peak_gpus

    serving = set(source.serving_classes())
    return peak_gpus([j for j in source.jobs(seed, load) if j.spec.account in serving])


def _plan_split(
    names: list[str],
    source: WorkloadSource,
    cluster: Cluster,
    serving_peak: float,
    *,
    explicit: bool,
) -> list[str]:
    """Drop the split where it cannot run (a note says why); an explicit ``--setup split``
    that cannot run is an error."""
    from phalanx.sim.setups import split_clusters

    if "split" not in names:
        return []
    if not source.serving_classes():
        why = "the workload has no serving class, so the split would be slurm on all nodes"
    else:
        try:
            train, serve = split_clusters(cluster, serving_peak)
            return [
                f"split: serving on {len(serve.nodes)} nodes (its peak at the reference load, "
                f"{serving_peak:g} GPUs), training on {len(train.nodes)}, at every load"
            ]
        except ConfigError as exc:
            why = exc.message
    if explicit:
        raise ConfigError(f"the split cannot run: {why}", field="--setup")
    names.remove("split")
    return [f"split not run: {why}"]


def _multinode_share(jobs: list[TraceJob]) -> float:
    total = sum(j.spec.gpu_equivalent * j.runtime for j in jobs)
    multi = sum(j.spec.gpu_equivalent * j.runtime for j in jobs if j.spec.nodes_min > 1)
    return multi / total if total > 0 else 0.0


# -- argument types ---------------------------------------------------------------------------


def _positive_int(text: str) -> int:
    value = non_negative_int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1: {text!r}")
    return value


def _loads(text: str) -> tuple[float, ...]:
    parts = [p.strip() for p in text.split(",")]
    if not all(parts):
        raise argparse.ArgumentTypeError(f"expected X,Y,... (positive numbers), got {text!r}")
    values = tuple(positive_float(p) for p in parts)
    if len(set(values)) != len(values):
        raise argparse.ArgumentTypeError(f"a load is named twice: {text!r}")
    return values
