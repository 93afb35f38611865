"""Where ``squeue``'s time goes with 1,000 and 10,000 pending jobs, past the process start.

A live cluster (controller and agents as processes, ``LocalCluster``) of 4 nodes x 8 GPUs x
64 CPUs, with 1,000 and then 10,000 held jobs (``POST /v1/jobs/batch``), as in
``slurm_commands.py``. At each size, ``--samples`` (20) calls of each, medians in ms:

1. The controller's answer, over the Unix socket as the shims call it (``unixhttp``, one
   connection a call): wall time of the whole exchange, and the controller process's CPU time
   per call (``/proc``, utime + stime over all the calls, divided). For ``GET /v1/jobs`` (whole
   records: what ``squeue`` read before) and ``GET /v1/jobs/table`` with the fields the
   default ``squeue`` reads (what it reads now), with the answer's size.
2. ``squeue``'s own work on that answer, in this process (no call): decode, select, collapse,
   sort and format the default listing; thread CPU time.
3. ``squeue.main([])`` in this process, call included, output to memory: wall time. This is
   what a pre-started (forked) ``squeue`` costs past its ~3 ms process start, without the
   interpreter start and imports that ``slurm_commands.py`` also counts.

Target: (3) at 10,000 pending well under Slurm's whole ``squeue`` (86 ms quoted in
``../shared/slurm/README.md``); about 10 ms at 1,000. Exits 0 either way; prints PASS or FAIL.

    .venv/bin/python bench/squeue_listing.py [--samples N]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import shlex
import statistics
import sys
import time
from collections.abc import Callable

from harness import fresh_cluster, keepalive_client, python_cmd, submit_batch, verdict

from phalanx.client.unixhttp import exchange
from phalanx.slurm import squeue
from phalanx.slurm.format import now_ms

NODES, GPUS, CPUS = 4, 8, 64
PENDING = (1_000, 10_000)
PER_BATCH = 1_000
TARGET_MS = {1_000: 10.0, 10_000: 86.0}
TICK = os.sysconf("SC_CLK_TCK")


def _process_cpu_s(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK


def _wall_ms(call: Callable[[], object], runs: int) -> float:
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        call()
        times.append((time.perf_counter() - t0) * 1000)
    return statistics.median(times)


def _cpu_ms(call: Callable[[], object], runs: int) -> float:
    times = []
    for _ in range(runs):
        t0 = time.thread_time()
        call()
        times.append((time.thread_time() - t0) * 1000)
    return statistics.median(times)


def _answer(sock: str, target: str, pid: int, runs: int) -> tuple[float, float, int]:
    """Median wall ms of the exchange, controller CPU ms per call, and the body's bytes."""

    def call() -> bytes:
        status, body = exchange(sock, 60.0, "GET", target, {"Accept": "application/json"}, None)
        if status != 200:
            raise RuntimeError(f"GET {target}: {status} {body[:200]!r}")
        return body

    size = len(call())
    cpu0 = _process_cpu_s(pid)
    wall = _wall_ms(call, runs)
    return wall, (_process_cpu_s(pid) - cpu0) * 1000 / runs, size


def _work(body: bytes, pending: int) -> Callable[[], list[str]]:
    """``squeue``'s part between the answer and the printed lines, as ``main`` does it."""
    opts = squeue._parse([])
    prefix, specs = squeue._specs(opts, [])

    def work() -> list[str]:
        jobs = squeue.records(json.loads(body))
        lines = squeue.listing(jobs, opts, prefix, specs, now_ms())
        if len(lines) != pending:
            raise RuntimeError(f"{len(lines)} lines, not {pending}")
        return lines

    return work


def _main_call(pending: int) -> Callable[[], None]:
    def call() -> None:
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            rc = squeue.main([])
        if rc != 0 or out.getvalue().count("\n") != pending + 1:
            raise RuntimeError(f"squeue: exit {rc}, {out.getvalue().count(chr(10))} lines")

    return call


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=20, help="calls of each (20)")
    args = parser.parse_args(argv)
    runs = max(1, args.samples)
    print("$", shlex.join([python_cmd(), *sys.argv]))
    print(f"cluster: {NODES} nodes x {GPUS} GPUs x {CPUS} CPUs; {os.cpu_count()} cores")
    opts = squeue._parse([])
    fields = squeue.wire_fields(opts, squeue._specs(opts, [])[1])
    table = "/v1/jobs/table?fields=" + ",".join(fields)
    print(f"squeue's fields: {','.join(fields)}")
    results: dict[int, float] = {}
    with fresh_cluster(NODES, GPUS, CPUS) as (cluster, workdir), keepalive_client(cluster) as c:
        os.environ["PHALANX_STATE_DIR"] = str(cluster.state_dir)
        os.environ.pop("PHALANX_URL", None)
        assert cluster.controller is not None
        pid, sock = cluster.controller.pid, str(cluster.socket)
        job = {
            "name": "wrap",
            "command": ["true"],
            "workdir": workdir,
            "output": "/dev/null",
            "cpus_per_task": 1,
            "hold": True,
        }
        submitted = 0
        for pending in PENDING:
            while submitted < pending:
                count = min(PER_BATCH, pending - submitted)
                submit_batch(c, [job] * count)
                submitted += count
            print(f"\n{pending:,} pending, medians of {runs} (load {os.getloadavg()[0]:.1f}):")
            for label, target in (("GET /v1/jobs", "/v1/jobs"), ("GET /v1/jobs/table", table)):
                wall, cpu, size = _answer(sock, target, pid, runs)
                print(
                    f"  controller {label:<20} {wall:7.1f} ms wall  {cpu:6.1f} ms CPU"
                    f"  {size / 1e6:5.2f} MB"
                )
            _, body = exchange(sock, 60.0, "GET", table, {}, None)
            work = _cpu_ms(_work(body, pending), runs)
            print(f"  squeue decode+select+sort+format   {work:7.1f} ms CPU")
            results[pending] = _wall_ms(_main_call(pending), runs)
            print(f"  squeue.main([]) in process         {results[pending]:7.1f} ms wall")
    print()
    for pending, ms in results.items():
        limit = TARGET_MS[pending]
        print(
            verdict(
                ms <= limit,
                f"squeue past start, {pending:,} pending: {ms:.1f} ms (target <= {limit:g})",
            )
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
