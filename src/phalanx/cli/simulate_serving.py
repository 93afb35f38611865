"""``phalanx simulate-serving``: serving and training on one workload, three ways.

A thin shell over ``phalanx.sim.serving`` (which does the work). Recipe:

1. read the training workload (``simulate``'s options: ``--trace`` or ``--generate``,
   ``--limit``, ``--window``, ``--load``) and the serving description (``--serving FILE``);
2. build the cluster (``simulate``'s options);
3. run each set-up (``--setup``, default all of ``SERVING_SETUPS``, none when ``--pool`` is
   given) and each serving pool (``--pool MODE[:GPUS]``: the ``phalanx`` set-up on that
   pool's queues), reporting each on stderr;
4. print the table; write ``--json FILE`` and ``--out DIR`` (``serving.png``) when asked.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

from rich.console import Console

from phalanx.cli.simulate import (
    add_cluster_arguments,
    add_workload_arguments,
    build_cluster,
    check_workload_cluster,
    non_negative_int,
)
from phalanx.config.serving_pool import POOL_MODES, ServingPool, parse_pool, with_pool
from phalanx.domain.time import SECOND
from phalanx.errors import InputError
from phalanx.sim.experiment import Workload, generated_workload, trace_workload
from phalanx.sim.serving.compare import (
    DEFAULT_GRACE,
    SERVING_SETUPS,
    ServingResult,
    check_serving_cluster,
    run_serving_setup,
)
from phalanx.sim.serving.report import render_serving_table, serving_json, write_plot
from phalanx.sim.serving.spec import read_serving
from phalanx.sim.traces.options import TraceOptions

__all__ = ["add_arguments", "run"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_workload_arguments(parser)
    add_cluster_arguments(parser)
    serve = parser.add_argument_group("serving")
    serve.add_argument(
        "--serving",
        metavar="FILE",
        required=True,
        help="the services: replicas, capacity, SLO, autoscaling, request-rate load (YAML)",
    )
    serve.add_argument(
        "--setup",
        metavar="NAME",
        action="append",
        dest="setups",
        choices=list(SERVING_SETUPS),
        help=f"a set-up to run; repeat for several (default all: {', '.join(SERVING_SETUPS)})",
    )
    serve.add_argument(
        "--pool",
        metavar="MODE[:GPUS]",
        action="append",
        dest="pools",
        help="also run the phalanx set-up on a serving pool's queues; repeat for several: "
        + "; ".join(f"{m}: {d}" for m, d in POOL_MODES.items())
        + " (phalanx.config.serving_pool)",
    )
    serve.add_argument(
        "--grace",
        metavar="SECONDS",
        type=non_negative_int,
        default=DEFAULT_GRACE // SECOND,
        help="grace a preempted training job gets to checkpoint under phalanx "
        f"(default {DEFAULT_GRACE // SECOND})",
    )
    out = parser.add_argument_group("output")
    out.add_argument("--json", metavar="FILE", help="write every figure as JSON")
    out.add_argument("--out", metavar="DIR", help="write serving.png into DIR")


def run(args: argparse.Namespace) -> int:
    check_workload_cluster(args)
    serving = read_serving(args.serving)
    workload = _load_workload(args)
    choice = build_cluster(args, workload.fmt)
    check_serving_cluster(choice.cluster, serving)
    pools = {p.label: p for p in map(parse_pool, args.pools or ())}
    for each in pools.values():
        with_pool(choice.cluster, each, serving.services[0].priority_class)  # fail early
    default = () if pools else SERVING_SETUPS
    runs: dict[str, ServingPool | None] = {name: None for name in args.setups or default}
    runs.update(pools)
    results: dict[str, ServingResult] = {}
    for name, pool in runs.items():
        wall0 = time.perf_counter()
        results[name] = run_serving_setup(
            name, choice.cluster, workload.jobs, serving, grace=args.grace * SECOND, pool=pool
        )
        print(f"{name}: done in {time.perf_counter() - wall0:.1f} s", file=sys.stderr)
    facts = choice.facts()
    title = (
        f"{workload.label}: {len(workload.jobs):,} training jobs, "
        f"{len(serving.services)} service(s) over {serving.horizon / 3_600_000:g} h, "
        f"on {facts['nodes']:,} nodes ({facts['gpus']:,} GPUs)"
    )
    Console(width=max(Console().width, 140)).print(render_serving_table(results, title=title))
    if args.json is not None:
        extra = {
            "trace": workload.source,
            "cluster": facts,
            "load": workload.options.load,
            "limit": workload.options.limit,
            "grace_s": args.grace,
        }
        with open(args.json, "w", encoding="utf-8") as handle:
            handle.write(serving_json(results, serving, extra))
        print(f"wrote {args.json}")
    if args.out is not None:
        print(f"wrote {write_plot(os.path.join(args.out, 'serving.png'), results)}")
    return 0


def _load_workload(args: argparse.Namespace) -> Workload:
    options = TraceOptions(args.limit, args.window, args.load, args.seed)
    if args.trace is None:
        return generated_workload(args.generate, options)
    if not args.trace:
        raise InputError("must not be empty", field="--trace")
    return trace_workload(args.trace, args.trace_format, options)
