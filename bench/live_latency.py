"""Submit -> RUNNING latency of a live cluster that is idle when each job arrives.

A live cluster (controller and agents as processes, ``LocalCluster``) of 2 nodes x 8 GPUs x
64 CPUs. Each sample, on the idle cluster after a random gap (``--gap`` s plus up to 0.5 s,
so that submissions fall at any phase of the controller's 1-s housekeeping):

1. ``t0``: the client's clock; one ``POST /v1/jobs`` of ``sh -c 'date +%s.%N > STAMP;
   exec sleep 5'`` (one CPU), over a kept-open connection (``httpx`` on the Unix socket);
   ``t1`` when the answer is back.
2. ``GET /v1/jobs/{id}`` on the same connection, 1 ms apart, until the state is RUNNING (or
   later): ``t2``.
3. The STAMP file's time: the job's first command ran at ``t3``.
4. ``DELETE /v1/jobs/{id}``, then wait until no job is pending, running or completing.

Printed, in ms over ``--samples`` (50) samples, min / p50 / p95 / max: the submit round trip
(``t1 - t0``); submit -> RUNNING from the controller's own stamps (the job's ``start`` minus
its ``submit``); submit -> RUNNING seen by the client (``t2 - t0``); submit -> process started
(``t3 - t0``). Target: p50 <= 50 ms, judged on what the client sees (``t2 - t0``).

Slurm peer (when ``../shared/slurm`` runs here), the method of
``../shared/slurm/bench/latency.py``: after ``--slurm-gap`` (1 s) plus up to 1 s idle,
``sbatch --wrap='date +%s.%N > STAMP; sleep 5'``, then ``squeue -h -j ID -o %T`` every 10 ms
until RUNNING, then the STAMP; ``scancel`` and wait until idle (``squeue`` empty, no node
completing). The ratios are Slurm's p50 over Phalanx's. The script exits 0 whether the target
is met or not, and prints PASS or FAIL.

    .venv/bin/python bench/live_latency.py [--quick] [--samples N] [--slurm-samples N]
"""

from __future__ import annotations

import argparse
import random
import shlex
import sys
import time
from pathlib import Path

import httpx
from harness import fresh_cluster, keepalive_client, percentile, python_cmd, verdict, wait_idle
from slurm_peer import NO_SLURM, SlurmPeer

from phalanx.server.localcluster import LocalCluster

TARGET_P50_MS = 50.0
NODES, GPUS, CPUS = 2, 8, 64
STARTED = ("RUNNING", "COMPLETING", "COMPLETED", "FAILED", "CANCELLED")
FIGURES = (
    ("submit round trip (client)", "submit"),
    ("submit -> RUNNING (controller stamps)", "stamps"),
    ("submit -> RUNNING (client polls)", "running"),
    ("submit -> process started", "process"),
)


def _stamp_time(path: Path, timeout: float = 30.0) -> float:
    """The ``date +%s.%N`` a job wrote to ``path``, once it is there."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            text = path.read_text().strip()
            if text:
                return float(text)
        except FileNotFoundError:
            pass
        time.sleep(0.002)
    raise TimeoutError(f"no time stamp in {path} after {timeout:g} s")


def _phalanx_sample(
    cluster: LocalCluster, client: httpx.Client, workdir: str, i: int
) -> dict[str, float]:
    """One sample on the idle cluster, in ms; leaves the cluster idle."""
    stamp = Path(workdir) / f"sample{i}.start"
    job = {
        "command": ["sh", "-c", f"date +%s.%N > {stamp}; exec sleep 5"],
        "workdir": workdir,
        "output": "/dev/null",
        "cpus_per_task": 1,
    }
    t0 = time.time()
    answer = client.post("/v1/jobs", json=job)
    t1 = time.time()
    answer.raise_for_status()
    job_id = answer.json()["job_ids"][0][0]
    while True:
        info = client.get(f"/v1/jobs/{job_id}").json()
        if info["state"] in STARTED:
            t2 = time.time()
            break
        time.sleep(0.001)
    t3 = _stamp_time(stamp)
    client.delete(f"/v1/jobs/{job_id}").raise_for_status()
    wait_idle(cluster)
    return {
        "submit": (t1 - t0) * 1000,
        "stamps": float(info["start"] - info["submit"]),
        "running": (t2 - t0) * 1000,
        "process": (t3 - t0) * 1000,
    }


def _slurm_sample(peer: SlurmPeer, i: int) -> dict[str, float]:
    """One sample as ``../shared/slurm/bench/latency.py`` takes it, in ms."""
    stamp = peer.work / f"latency{i}.start"
    stamp.unlink(missing_ok=True)
    t0 = time.time()
    job_id = peer.sbatch("-o", "/dev/null", f"--wrap=date +%s.%N > {stamp}; sleep 5")
    t1 = time.time()
    while True:
        if peer.state(job_id) in ("RUNNING", "COMPLETING", ""):
            t2 = time.time()
            break
        time.sleep(0.01)
    t3 = _stamp_time(stamp)
    peer.run("scancel", str(job_id))
    peer.wait_idle()
    return {"submit": (t1 - t0) * 1000, "running": (t2 - t0) * 1000, "process": (t3 - t0) * 1000}


def _row(name: str, values: list[float]) -> str:
    if not values:
        return f"  {name:<44}  n/a"
    return (
        f"  {name:<44}  {min(values):>7.1f}  {percentile(values, 0.5):>7.1f}  "
        f"{percentile(values, 0.95):>7.1f}  {max(values):>7.1f}"
    )


def _args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=None, help="Phalanx samples (default 50)")
    parser.add_argument("--slurm-samples", type=int, default=None, help="Slurm samples (20)")
    parser.add_argument("--gap", type=float, default=0.1, help="idle s before a submit (0.1)")
    parser.add_argument("--slurm-gap", type=float, default=1.0, help="the same for Slurm (1.0)")
    parser.add_argument("--seed", type=int, default=1, help="seed of the gaps")
    parser.add_argument("--quick", action="store_true", help="15 and 5 samples")
    args = parser.parse_args(argv)
    if args.samples is None:
        args.samples = 15 if args.quick else 50
    if args.slurm_samples is None:
        args.slurm_samples = 5 if args.quick else 20
    if args.samples < 1:
        parser.error("--samples must be at least 1")
    return args


def main(argv: list[str] | None = None) -> int:
    args = _args(argv)
    print("$", shlex.join([python_cmd(), *sys.argv]))
    rng = random.Random(args.seed)
    print(f"cluster: {NODES} nodes x {GPUS} GPUs x {CPUS} CPUs, idle before each submit")
    samples: list[dict[str, float]] = []
    with fresh_cluster(NODES, GPUS, CPUS) as (cluster, workdir), keepalive_client(cluster) as c:
        for i in range(args.samples):
            time.sleep(args.gap + rng.random() * 0.5)
            samples.append(_phalanx_sample(cluster, c, workdir, i))
    print()
    print(
        f"  {'Phalanx, ms over ' + str(len(samples)) + ' samples':<44}  "
        f"{'min':>7}  {'p50':>7}  {'p95':>7}  {'max':>7}"
    )
    for name, key in FIGURES:
        print(_row(name, [s[key] for s in samples]))
    running = percentile([s["running"] for s in samples], 0.5)
    stamps = percentile([s["stamps"] for s in samples], 0.5)
    process = percentile([s["process"] for s in samples], 0.5)

    peer, about = SlurmPeer.find()
    print()
    if peer is None:
        print(f"Slurm: not running here ({about})")
        print(NO_SLURM)
    else:
        peer.wait_idle()
        slurm = []
        for i in range(args.slurm_samples):
            time.sleep(args.slurm_gap + rng.random())
            slurm.append(_slurm_sample(peer, i))
        print(
            f"  {about + ', ms over ' + str(len(slurm)) + ' samples':<44}  "
            f"{'min':>7}  {'p50':>7}  {'p95':>7}  {'max':>7}"
        )
        for name, key in FIGURES:
            if key != "stamps":
                print(_row(name.replace("submit", "sbatch", 1), [s[key] for s in slurm]))
        slurm_running = percentile([s["running"] for s in slurm], 0.5)
        slurm_process = percentile([s["process"] for s in slurm], 0.5)
        print()
        print(
            f"ratio Slurm p50 / Phalanx p50: to RUNNING {slurm_running / running:.1f}x, "
            f"to process started {slurm_process / process:.1f}x"
        )
    print()
    print(
        verdict(
            running <= TARGET_P50_MS,
            f"submit -> RUNNING seen by the client: p50 {running:.1f} ms "
            f"(target <= {TARGET_P50_MS:.0f} ms)",
        )
    )
    print(
        verdict(
            stamps <= TARGET_P50_MS,
            f"submit -> RUNNING by the controller's stamps: p50 {stamps:.1f} ms "
            f"(target <= {TARGET_P50_MS:.0f} ms)",
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
