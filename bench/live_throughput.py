"""Sustained throughput of a live cluster: trivial real-process jobs completed per second.

A live cluster (controller and agents as processes, ``LocalCluster``) of 4 nodes x 64 CPUs
(256 one-CPU slots, so that jobs do not wait for cores), started afresh for each run. Jobs are
``true`` with output to /dev/null, one CPU each: every one is a real process that an agent
starts and reaps.

During ``--duration`` (60) seconds the queue is kept fed: whenever fewer than ``--backlog``
(2,000) jobs wait beyond the ones the slots can hold (submitted minus completed, less 256), a
batch of ``--per-batch`` (500) is submitted (``POST /v1/jobs/batch``, one kept-open
connection). Completions are read from ``GET /v1/accounting?since=MS`` (4 times a second while
feeding, then once more for all) and counted by each job's own ``end`` stamp: the window
runs from the first submission for ``--duration`` seconds, ramp-up included. Printed per run:
completions/s over the whole window, min / median / max over its 5-s slices, and jobs that did
not complete; then min / median / max of the runs' overall figures over ``--repeat`` (3) runs.
Target: median >= 200 completions/s.

Slurm peer (when ``../shared/slurm`` runs here), the method of
``../shared/slurm/bench/held.py``: ``--slurm-jobs`` (1,000) serial ``sbatch -H --wrap=true``,
then ``scontrol release`` of all and the time until the jobcomp file has a line for each:
jobs / (release -> all completed). That is a drain of a 1,000-job backlog, not 60 sustained
seconds; the ratio is Phalanx's median over it. The script exits 0 whether the target is met
or not, and prints PASS or FAIL.

    .venv/bin/python bench/live_throughput.py [--quick] [--duration S] [--repeat N]
"""

from __future__ import annotations

import argparse
import shlex
import statistics
import sys
import time
from collections import Counter
from typing import Any

from harness import fresh_cluster, keepalive_client, python_cmd, spread, submit_batch, verdict
from slurm_peer import NO_SLURM, SlurmPeer

TARGET_PER_S = 200.0
NODES, CPUS = 4, 64
SLOTS = NODES * CPUS
SLICE_S = 5
POLL_S = 0.25


def _run(args: argparse.Namespace) -> dict[str, Any]:
    """One fed run on a fresh cluster: the jobs' end stamps and what they ended as."""
    with fresh_cluster(NODES, cpus=CPUS) as (cluster, workdir), keepalive_client(cluster) as c:
        job = {"command": ["true"], "workdir": workdir, "output": "/dev/null", "cpus_per_task": 1}
        ends: dict[int, tuple[int, str]] = {}
        start_ms = int(time.time() * 1000)
        stop_ms = start_ms + args.duration * 1000
        since = start_ms
        submitted = 0
        next_poll = 0.0
        while (now_ms := int(time.time() * 1000)) < stop_ms:
            if submitted - len(ends) - SLOTS < args.backlog:
                submitted += len(submit_batch(c, [job] * args.per_batch))
                continue
            if time.monotonic() >= next_poll:
                next_poll = time.monotonic() + POLL_S
                since = _read_ends(c, since, ends)
            time.sleep(max(0.0, min(POLL_S, (stop_ms - now_ms) / 1000)))
        _read_ends(c, start_ms, ends)
    return {"start_ms": start_ms, "submitted": submitted, "ends": ends}


def _read_ends(client: Any, since: int, ends: dict[int, tuple[int, str]]) -> int:
    """Add what ended at or after ``since`` to ``ends``; the next ``since`` to ask."""
    answer = client.get("/v1/accounting", params={"since": since})
    answer.raise_for_status()
    latest = since
    for record in answer.json():
        ends[record["job_id"]] = (record["end"], record["state"])
        latest = max(latest, record["end"])
    return latest


def _figures(run: dict[str, Any], duration: int) -> tuple[float, list[float], Counter[str]]:
    """Completions/s over the window, per 5-s slice, and the states of jobs that ended."""
    start = run["start_ms"]
    slices = [0] * max(1, duration // SLICE_S)
    states: Counter[str] = Counter()
    done = 0
    for end, state in run["ends"].values():
        offset = end - start
        if not 0 <= offset < duration * 1000:
            continue
        states[state] += 1
        if state == "COMPLETED":
            done += 1
            index = offset // (SLICE_S * 1000)
            if index < len(slices):
                slices[index] += 1
    return done / duration, [n / SLICE_S for n in slices], states


def _slurm(peer: SlurmPeer, count: int) -> tuple[float, float]:
    """Held submissions released at once: completions/s of the drain, and submissions/s."""
    peer.wait_idle()
    t0 = time.perf_counter()
    ids = [peer.sbatch("-H", "-o", "/dev/null", "--wrap=true") for _ in range(count)]
    submit_rate = count / (time.perf_counter() - t0)
    base = peer.completions()
    t0 = time.perf_counter()
    peer.release(ids)
    while peer.completions() - base < count:
        if time.perf_counter() - t0 > 900:
            raise TimeoutError("Slurm did not drain 1,000 jobs in 15 minutes")
        time.sleep(0.05)
    return count / (time.perf_counter() - t0), submit_rate


def _args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--duration", type=int, default=None, help="seconds a run (60)")
    parser.add_argument("--repeat", type=int, default=None, help="runs (default 3)")
    parser.add_argument("--backlog", type=int, default=2_000, help="jobs kept waiting")
    parser.add_argument("--per-batch", type=int, default=500, help="jobs a batch request")
    parser.add_argument("--slurm-jobs", type=int, default=None, help="Slurm held jobs (1,000)")
    parser.add_argument("--slurm-repeat", type=int, default=1, help="Slurm runs (default 1)")
    parser.add_argument("--quick", action="store_true", help="one 15-s run; 200 Slurm jobs")
    args = parser.parse_args(argv)
    if args.duration is None:
        args.duration = 15 if args.quick else 60
    if args.repeat is None:
        args.repeat = 1 if args.quick else 3
    if args.slurm_jobs is None:
        args.slurm_jobs = 200 if args.quick else 1_000
    if args.repeat < 1 or args.duration < SLICE_S:
        parser.error(f"--repeat must be at least 1 and --duration at least {SLICE_S}")
    return args


def main(argv: list[str] | None = None) -> int:
    args = _args(argv)
    print("$", shlex.join([python_cmd(), *sys.argv]))
    print(
        f"cluster: {NODES} nodes x {CPUS} CPUs ({SLOTS} one-CPU slots); jobs: true; "
        f"{args.duration} s a run, backlog {args.backlog:,}, batches of {args.per_batch}"
    )
    print()
    print(
        f"  {'run':>3}  {'submitted':>9}  {'completed/s':>11}  per {SLICE_S}-s slice, "
        "completions/s;  ended otherwise"
    )
    overall: list[float] = []
    for i in range(args.repeat):
        run = _run(args)
        rate, slices, states = _figures(run, args.duration)
        overall.append(rate)
        other = ", ".join(f"{n} {s}" for s, n in sorted(states.items()) if s != "COMPLETED")
        print(
            f"  {i + 1:>3}  {run['submitted']:>9,}  {rate:>11,.1f}  "
            f"{spread(slices, '.0f')};  {other or 'none'}",
            flush=True,
        )
    median = statistics.median(overall)
    print(f"  completions/s over {args.repeat} runs: {spread(overall, ',.1f')}")
    print()

    peer, about = SlurmPeer.find()
    if peer is None:
        print(f"Slurm: not running here ({about})")
        print(NO_SLURM)
    else:
        drains, submits = [], []
        for _ in range(args.slurm_repeat):
            drain, submit = _slurm(peer, args.slurm_jobs)
            drains.append(drain)
            submits.append(submit)
        sinfo = peer.run("sinfo", "-h", "-o", "%D nodes x %c CPUs").stdout.strip()
        print(f"{about} ({sinfo}): {args.slurm_jobs:,} held sbatch --wrap=true, released at once")
        print(
            f"  drain, completions/s: {spread(drains, ',.1f')}  "
            f"(held submissions/s: {spread(submits, ',.0f')})"
        )
        print(f"ratio Phalanx median / Slurm median: {median / statistics.median(drains):.1f}x")
    print()
    print(
        verdict(
            median >= TARGET_PER_S,
            f"median {median:,.1f} completions/s (target >= {TARGET_PER_S:,.0f}/s)",
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
