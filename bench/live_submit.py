"""Submission rate of a live cluster: jobs accepted per second through the REST API.

A live cluster (controller and agents as processes, ``LocalCluster``) of 4 nodes x 64 CPUs is
started afresh for every variant and repetition, so that no run inherits another's queue.
Every job is ``true`` with output to /dev/null, one CPU. The variants:

- batch: ``POST /v1/jobs/batch`` with ``--per-batch`` (1,000) jobs a request, ``--batch-jobs``
  (20,000) jobs in all, one connection per request (``WireCaller``);
- single, wirecall: one ``POST /v1/jobs`` per job, ``--single-jobs`` (2,000) jobs, a new
  connection per call (``phalanx.client.wirecall``, what the CLI uses);
- single, keep-alive: the same over one kept-open connection (``httpx.Client`` on the Unix
  socket), as a program submitting many jobs would;
- CLI: ``phalanx submit -H`` run as a process per job, ``--cli-jobs`` (50) jobs; the peer of
  ``sbatch``.

Each API variant runs twice: with the jobs held (``hold: true``: nothing else competes for the
controller) and with the jobs released to run (the controller launches them while it accepts
more). Timed: from the first request sent to the last answer received. The figure is jobs/s
(min / median / max over ``--repeat`` runs); the client's own CPU per job (median) is shown
beside it, since client and controller share this machine's cores. Target: batch (held)
median >= 2,000 jobs/s.

Slurm peer (when ``../shared/slurm`` runs here): ``--slurm-jobs`` (200) serial
``sbatch -H --wrap=true`` as in ``../shared/slurm/bench/held.py``, then ``scancel``; the
ratios are Phalanx's medians over sbatch's. The script exits 0 whether the target is met or
not, and prints PASS or FAIL.

State stores: every variant runs on the default store (SQLite in the state directory).
``--postgresql`` also runs the batch variants with the controller on PostgreSQL (a server
this script starts in a temporary directory, durable: fsync on; a fresh database per run),
prints them with their ratio to SQLite's (median / median), and holds them to the same
target. ``--only-batch`` leaves out the single and CLI variants.

    .venv/bin/python bench/live_submit.py [--quick] [--repeat N] [--postgresql] [--only-batch]
"""

from __future__ import annotations

import argparse
import os
import shlex
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from harness import fresh_cluster, keepalive_client, python_cmd, spread, verdict
from slurm_peer import NO_SLURM, SlurmPeer

from phalanx.server.localcluster import LocalCluster

TARGET_BATCH_JOBS_PER_S = 2_000.0
NODES, CPUS = 4, 64
PHALANX = str(Path(sys.executable).with_name("phalanx"))

Submitter = Callable[[LocalCluster, dict[str, Any], int], None]


def _job(workdir: str, held: bool) -> dict[str, Any]:
    return {
        "command": ["true"],
        "workdir": workdir,
        "output": "/dev/null",
        "cpus_per_task": 1,
        "hold": held,
    }


def _batch(per_batch: int) -> Submitter:
    def submit(cluster: LocalCluster, job: dict[str, Any], count: int) -> None:
        for first in range(0, count, per_batch):
            jobs = [job] * min(per_batch, count - first)
            cluster.call("POST", "/v1/jobs/batch", body={"jobs": jobs})

    return submit


def _single_wirecall(cluster: LocalCluster, job: dict[str, Any], count: int) -> None:
    for _ in range(count):
        cluster.call("POST", "/v1/jobs", body=job)


def _single_keepalive(cluster: LocalCluster, job: dict[str, Any], count: int) -> None:
    with keepalive_client(cluster) as client:
        for _ in range(count):
            client.post("/v1/jobs", json=job).raise_for_status()


def _cli(cluster: LocalCluster, job: dict[str, Any], count: int) -> None:
    env = dict(os.environ, PHALANX_STATE_DIR=str(cluster.state_dir))
    env.pop("PHALANX_URL", None)
    argv = [PHALANX, "submit", "-H", "-o", "/dev/null", "-D", job["workdir"], "--", "true"]
    for _ in range(count):
        subprocess.run(argv, env=env, check=True, capture_output=True)


def _measure(
    submit: Submitter, count: int, held: bool, db: Callable[[], str | None] = lambda: None
) -> tuple[float, float]:
    """Jobs/s of one run on a fresh cluster (its store at ``db()``), and the client's own CPU
    ms per job (this process's; a CLI run's is in its children); also checks that every job
    arrived."""
    with fresh_cluster(NODES, cpus=CPUS, db=db()) as (cluster, workdir):
        t0, c0 = time.perf_counter(), time.process_time()
        submit(cluster, _job(workdir, held), count)
        elapsed, cpu = time.perf_counter() - t0, time.process_time() - c0
        last = cluster.call("GET", "/v1/jobs", query={"all": True, "ids": str(count)})["jobs"]
        if not last:
            raise RuntimeError(f"job {count} is missing after {count} submissions")
    return count / elapsed, cpu * 1000 / count


def _slurm(peer: SlurmPeer, count: int) -> float:
    """Serial ``sbatch -H --wrap=true`` per second; the jobs are cancelled after."""
    peer.wait_idle()
    t0 = time.perf_counter()
    for _ in range(count):
        peer.sbatch("-H", "-o", "/dev/null", "--wrap=true")
    elapsed = time.perf_counter() - t0
    peer.cancel_all()
    return count / elapsed


def _args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=None, help="runs per variant (default 3)")
    parser.add_argument("--batch-jobs", type=int, default=None, help="default 20,000")
    parser.add_argument("--per-batch", type=int, default=1_000, help="jobs a request")
    parser.add_argument("--single-jobs", type=int, default=None, help="default 2,000")
    parser.add_argument("--cli-jobs", type=int, default=None, help="default 50")
    parser.add_argument("--slurm-jobs", type=int, default=None, help="default 200")
    parser.add_argument("--quick", action="store_true", help="fewer jobs, one run each")
    parser.add_argument(
        "--postgresql", action="store_true", help="the batch variants on PostgreSQL too"
    )
    parser.add_argument("--only-batch", action="store_true", help="only the batch variants")
    args = parser.parse_args(argv)
    quick = args.quick
    defaults = {
        "repeat": (1, 3),
        "batch_jobs": (5_000, 20_000),
        "single_jobs": (500, 2_000),
        "cli_jobs": (10, 50),
        "slurm_jobs": (50, 200),
    }
    for name, (small, full) in defaults.items():
        if getattr(args, name) is None:
            setattr(args, name, small if quick else full)
    if args.repeat < 1:
        parser.error("--repeat must be at least 1")
    return args


def main(argv: list[str] | None = None) -> int:
    args = _args(argv)
    print("$", shlex.join([python_cmd(), *sys.argv]))
    print(f"cluster: {NODES} nodes x {CPUS} CPUs, started afresh for every run; jobs: true")
    peer, about = SlurmPeer.find()
    print(about if peer else f"Slurm: not running here ({about})")
    print()

    variants: list[tuple[str, Submitter, int, bool]] = []
    for held in (True, False):
        how = "held" if held else "run"
        variants += [
            (f"batch of {args.per_batch:,}, {how}", _batch(args.per_batch), args.batch_jobs, held),
        ]
        if not args.only_batch:
            variants += [
                (f"single, wirecall, {how}", _single_wirecall, args.single_jobs, held),
                (f"single, keep-alive, {how}", _single_keepalive, args.single_jobs, held),
            ]
    if not args.only_batch:
        variants.append(("CLI phalanx submit -H", _cli, args.cli_jobs, True))

    medians: dict[str, float] = {}
    print(f"  {'variant':<28}  {'jobs':>7}  {'client CPU':>10}  jobs/s over {args.repeat} runs")
    for name, submit, count, held in variants:
        runs = [_measure(submit, count, held) for _ in range(args.repeat)]
        rates = [rate for rate, _ in runs]
        cpu = statistics.median(ms for _, ms in runs)
        medians[name] = statistics.median(rates)
        shown = "-" if submit is _cli else f"{cpu:.3f} ms"
        print(f"  {name:<28}  {count:>7,}  {shown:>10}  {spread(rates)}", flush=True)

    if args.postgresql:
        _postgresql(args, medians)

    if peer is not None and not args.only_batch:
        rates = [_slurm(peer, args.slurm_jobs) for _ in range(args.repeat)]
        sbatch = statistics.median(rates)
        name = "Slurm sbatch -H, serial"
        print(f"  {name:<28}  {args.slurm_jobs:>7,}  {'-':>10}  {spread(rates)}")
        print()
        print("ratio to serial sbatch -H (median / median):")
        for name in (
            f"batch of {args.per_batch:,}, held",
            "single, wirecall, held",
            "single, keep-alive, held",
            "CLI phalanx submit -H",
        ):
            print(f"  {name:<28}  {medians[name] / sbatch:8.2f}x")
    else:
        print()
        print(NO_SLURM)
    print()
    for store in ("", ", postgresql") if args.postgresql else ("",):
        for how in ("held", "run"):
            median = medians.get(f"batch of {args.per_batch:,}, {how}{store}")
            if median is None:
                continue
            print(
                verdict(
                    median >= TARGET_BATCH_JOBS_PER_S,
                    f"batch ({how}{store}): median {median:,.0f} jobs/s "
                    f"(target >= {TARGET_BATCH_JOBS_PER_S:,.0f} jobs/s)",
                )
            )
    return 0


def _postgresql(args: argparse.Namespace, medians: dict[str, float]) -> None:
    """The batch variants with the controller's store on PostgreSQL; ratios to SQLite's."""
    from phalanx.testing.postgres import TempPostgres, pg_bin_dir

    bin_dir = pg_bin_dir()
    if bin_dir is None:
        print("PostgreSQL: initdb/pg_ctl not found (apt-get install postgresql): skipped")
        return
    server = TempPostgres(bin_dir, durable=True).start()
    try:
        print()
        print(f"on PostgreSQL ({bin_dir}), a fresh database per run; ratio to SQLite:")
        for how, held in (("held", True), ("run", False)):
            name = f"batch of {args.per_batch:,}, {how}"
            runs = [
                _measure(_batch(args.per_batch), args.batch_jobs, held, server.new_database)
                for _ in range(args.repeat)
            ]
            rates = [rate for rate, _ in runs]
            cpu = statistics.median(ms for _, ms in runs)
            median = medians[f"{name}, postgresql"] = statistics.median(rates)
            ratio = median / medians[name]
            print(
                f"  {name + ', pg':<28}  {args.batch_jobs:>7,}  {cpu:.3f} ms  {spread(rates)}"
                f"  ({ratio:.2f}x SQLite)",
                flush=True,
            )
    finally:
        server.stop()


if __name__ == "__main__":
    sys.exit(main())
