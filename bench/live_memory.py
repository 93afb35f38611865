"""Memory of a live controller holding 100,000 pending jobs, and ``phalanx jobs`` over them.

A live cluster (controller and agents as processes, ``LocalCluster``) of 2 nodes x 8 GPUs x
64 CPUs, started afresh for each run. ``--jobs`` (100,000) held jobs (``hold: true``, so they
stay pending; ``true``, one CPU) are submitted in batches of ``--per-batch`` (5,000)
(``POST /v1/jobs/batch``, one kept-open connection). Each figure is read once the controller
has handled the last submission (``GET /v1/jobs/{last id}`` answers), from
``/proc/PID/status`` of the controller process: ``VmRSS`` with 0 (agents registered),
10,000 and 100,000 jobs pending, and ``VmHWM`` (its peak) once all are submitted and again
at the end, after the listings. Also timed: the
submission of all jobs (first request to last answer), and the wall time of
``phalanx jobs`` (a process, as a user runs it, ``PHALANX_STATE_DIR`` pointing at the
cluster), median of ``--list-runs`` (5), with 10,000 and with 100,000 pending.

Printed per run, then min / median / max over ``--repeat`` (3) runs. Target: median RSS with
100,000 pending <= 400 MB (MB = 10^6 bytes). The ``phalanx jobs`` time is only reported.

Slurm peer (when ``../shared/slurm`` runs here): slurmctld ``VmRSS`` before and after
``--slurm-jobs`` (10,000) held ``sbatch --wrap=true`` from 4 parallel submitters (as
``../shared/slurm/bench/held.py``), ``squeue`` wall time (median of 5) with them pending, then
``scancel``. slurmctld keeps finished jobs for a while (``MinJobAge``), so its figure grows with
recent history; the ratio at 10,000 (slurmctld over the Phalanx median) is indicative. The
script exits 0 whether the target is met or not, and prints PASS or FAIL.

    .venv/bin/python bench/live_memory.py [--quick] [--repeat N] [--jobs N]
"""

from __future__ import annotations

import argparse
import os
import shlex
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
from harness import (
    fresh_cluster,
    keepalive_client,
    python_cmd,
    spread,
    status_mb,
    submit_batch,
    verdict,
)
from slurm_peer import NO_SLURM, SlurmPeer

from phalanx.server.localcluster import LocalCluster

TARGET_MB = 400.0
NODES, GPUS, CPUS = 2, 8, 64
CHECKPOINT = 10_000
PHALANX = str(Path(sys.executable).with_name("phalanx"))


def _handled(client: httpx.Client, job_id: int, timeout: float = 120.0) -> None:
    """Until the controller knows job ``job_id`` (it has handled the submission)."""
    deadline = time.monotonic() + timeout
    while client.get(f"/v1/jobs/{job_id}").status_code != 200:
        if time.monotonic() > deadline:
            raise TimeoutError(f"job {job_id} unknown after {timeout:g} s")
        time.sleep(0.01)


def _list_s(cluster: LocalCluster, expect: int, runs: int) -> float:
    """Median wall seconds of ``phalanx jobs``; checks that it lists ``expect`` jobs."""
    env = dict(os.environ, PHALANX_STATE_DIR=str(cluster.state_dir))
    env.pop("PHALANX_URL", None)
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        out = subprocess.run([PHALANX, "jobs"], env=env, check=True, capture_output=True)
        times.append(time.perf_counter() - t0)
        rows = out.stdout.count(b"\n") - 1
        if rows != expect:
            raise RuntimeError(f"phalanx jobs listed {rows:,} jobs, not {expect:,}")
    return statistics.median(times)


def _run(args: argparse.Namespace, progress: str) -> dict[str, float]:
    out: dict[str, float] = {}
    with fresh_cluster(NODES, GPUS, CPUS) as (cluster, workdir), keepalive_client(cluster) as c:
        assert cluster.controller is not None
        pid = cluster.controller.pid
        job = {
            "command": ["true"],
            "workdir": workdir,
            "output": "/dev/null",
            "cpus_per_task": 1,
            "hold": True,
        }
        out["rss_0"] = status_mb(pid)["VmRSS"]
        submitted, spent, last = 0, 0.0, 0
        for target in (min(CHECKPOINT, args.jobs), args.jobs):
            t0 = time.perf_counter()
            while submitted < target:
                count = min(args.per_batch, target - submitted)
                last = submit_batch(c, [job] * count)[-1]
                submitted += count
            spent += time.perf_counter() - t0
            _handled(c, last)
            out[f"rss_{target}"] = status_mb(pid)["VmRSS"]
            out["hwm_submit"] = status_mb(pid)["VmHWM"]
            print(
                f"{progress}: {submitted:,} pending, RSS {out[f'rss_{target}']:,.0f} MB; "
                f"timing phalanx jobs",
                flush=True,
            )
            out[f"list_{target}"] = _list_s(cluster, submitted, args.list_runs)
        out["submit_s"] = spent
        out["hwm"] = status_mb(pid)["VmHWM"]
        out["rss_end"] = status_mb(pid)["VmRSS"]
    return out


def _slurm(peer: SlurmPeer, count: int, runs: int) -> dict[str, float]:
    peer.wait_idle()
    pid = peer.slurmctld_pid()
    out = {"rss_before": status_mb(pid)["VmRSS"]}
    t0 = time.perf_counter()
    failed = peer.sbatch_held(count)
    out["submit_s"] = time.perf_counter() - t0
    out["failed"] = failed
    out["rss"] = status_mb(pid)["VmRSS"]
    out["hwm"] = status_mb(pid)["VmHWM"]
    times = []
    for _ in range(runs):
        t1 = time.perf_counter()
        peer.run("squeue")
        times.append(time.perf_counter() - t1)
    out["squeue_s"] = statistics.median(times)
    peer.cancel_all()
    return out


def _args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=100_000, help="held jobs (100,000)")
    parser.add_argument("--per-batch", type=int, default=5_000, help="jobs a request (5,000)")
    parser.add_argument("--repeat", type=int, default=None, help="runs (default 3)")
    parser.add_argument("--list-runs", type=int, default=5, help="phalanx jobs runs (5)")
    parser.add_argument("--slurm-jobs", type=int, default=None, help="Slurm held jobs (10,000)")
    parser.add_argument("--quick", action="store_true", help="one run; 1,000 Slurm jobs")
    args = parser.parse_args(argv)
    if args.repeat is None:
        args.repeat = 1 if args.quick else 3
    if args.slurm_jobs is None:
        args.slurm_jobs = 1_000 if args.quick else CHECKPOINT
    if args.repeat < 1 or args.jobs < CHECKPOINT:
        parser.error(f"--repeat must be at least 1 and --jobs at least {CHECKPOINT:,}")
    return args


def main(argv: list[str] | None = None) -> int:
    args = _args(argv)
    print("$", shlex.join([python_cmd(), *sys.argv]))
    print(
        f"cluster: {NODES} nodes x {GPUS} GPUs x {CPUS} CPUs; {args.jobs:,} held jobs in "
        f"batches of {args.per_batch:,}; MB = 10^6 bytes"
    )
    runs: list[dict[str, Any]] = []
    for i in range(args.repeat):
        runs.append(_run(args, f"  run {i + 1}"))
    n = args.jobs
    print()
    print(
        f"  {'run':>3}  {'RSS@0':>6}  {'RSS@10k':>7}  {'RSS@' + format(n // 1000) + 'k':>8}  "
        f"{'HWM sub':>7}  {'HWM end':>7}  {'submit s':>8}  {'jobs/s':>7}  {'jobs@10k s':>10}  "
        f"{'jobs@' + format(n // 1000) + 'k s':>11}"
    )
    for i, r in enumerate(runs):
        print(
            f"  {i + 1:>3}  {r['rss_0']:>6.0f}  {r[f'rss_{CHECKPOINT}']:>7.0f}  "
            f"{r[f'rss_{n}']:>8.0f}  {r['hwm_submit']:>7.0f}  {r['hwm']:>7.0f}  "
            f"{r['submit_s']:>8.1f}  "
            f"{n / r['submit_s']:>7,.0f}  {r[f'list_{CHECKPOINT}']:>10.2f}  "
            f"{r[f'list_{n}']:>11.2f}"
        )
    print()
    for label, key, fmt, unit in (
        ("controller VmRSS, 0 pending", "rss_0", ",.0f", "MB"),
        (f"controller VmRSS, {CHECKPOINT:,} pending", f"rss_{CHECKPOINT}", ",.0f", "MB"),
        (f"controller VmRSS, {n:,} pending", f"rss_{n}", ",.0f", "MB"),
        (f"controller VmHWM, {n:,} submitted", "hwm_submit", ",.0f", "MB"),
        ("controller VmHWM after phalanx jobs", "hwm", ",.0f", "MB"),
        ("controller VmRSS after phalanx jobs", "rss_end", ",.0f", "MB"),
        (f"submitting {n:,}", "submit_s", ".1f", "s"),
        (f"phalanx jobs, {CHECKPOINT:,} pending", f"list_{CHECKPOINT}", ".2f", "s"),
        (f"phalanx jobs, {n:,} pending", f"list_{n}", ".2f", "s"),
    ):
        print(f"  {label:<36}  {spread([r[key] for r in runs], fmt, unit)}")
    rss = statistics.median(r[f"rss_{n}"] for r in runs)
    rss10k = statistics.median(r[f"rss_{CHECKPOINT}"] for r in runs)
    list10k = statistics.median(r[f"list_{CHECKPOINT}"] for r in runs)
    print()

    peer, about = SlurmPeer.find()
    if peer is None:
        print(f"Slurm: not running here ({about})")
        print(NO_SLURM)
    else:
        print(f"{about}: {args.slurm_jobs:,} held sbatch --wrap=true, 4 submitters", flush=True)
        s = _slurm(peer, args.slurm_jobs, args.list_runs)
        print(
            f"  slurmctld VmRSS before {s['rss_before']:,.0f} MB, with {args.slurm_jobs:,} "
            f"pending {s['rss']:,.0f} MB (VmHWM {s['hwm']:,.0f} MB); submitted in "
            f"{s['submit_s']:.1f} s ({s['failed']} failed); squeue {s['squeue_s']:.3f} s"
        )
        if args.slurm_jobs == CHECKPOINT:
            print(
                f"ratio at {CHECKPOINT:,} pending: slurmctld RSS / Phalanx controller RSS "
                f"{s['rss'] / rss10k:.2f}x; squeue / phalanx jobs wall time "
                f"{s['squeue_s'] / list10k:.2f}x"
            )
        else:
            print(f"no ratio: Slurm held {args.slurm_jobs:,} jobs, not {CHECKPOINT:,}")
    print()
    print(
        verdict(
            rss <= TARGET_MB,
            f"median controller RSS with {n:,} pending {rss:,.0f} MB "
            f"(target <= {TARGET_MB:,.0f} MB)",
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
