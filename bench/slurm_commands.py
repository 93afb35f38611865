"""Phalanx's Slurm-compatible commands (``phalanx shims``) against the real Slurm's.

A live cluster (controller and agents as processes, ``LocalCluster``) of 4 nodes x 8 GPUs x
64 CPUs, partition ``main``; the shims are written once into a temporary folder (native where
a C compiler is found: each call is handed to the controller's command server) and find the
controller through ``PHALANX_STATE_DIR``. Every command runs as a process of its own, as a
shell loop runs it (output captured, exit status checked). Measured:

1. ``sbatch -o /dev/null --wrap=true``, ``--calls`` (200) serial calls from a plain loop,
   jobs/s: with the jobs released (they start as they arrive) and held (``-H``: nothing
   launches). A fresh cluster for every variant and repetition; min / median / max over
   ``--repeat`` (3) runs. Target: median >= the real Slurm's median in the same run.
2. ``squeue`` (default format) and ``squeue -h -o %i`` wall time, ``--samples`` (10) calls
   each, with 1,000 and with 10,000 held jobs pending (Phalanx: ``POST /v1/jobs/batch``;
   Slurm: ``sbatch -H`` from 4 parallel shell loops). Each listing is checked for its line
   count. Target: median <= Slurm's.

For context, what a Python shim would pay: the start of its interpreter (``python -IS -c
pass``, median of 20), the import of ``phalanx.slurm.sbatch`` (``python -X importtime``,
median of 5); and ``sbatch --version`` (no controller call) on both sides and from the Python
shim.

Slurm peer (when ``../shared/slurm`` runs here, ``NNODES=4``): the same commands with the same
arguments, interleaved with Phalanx's runs. Without it the script prints ``Slurm: not running
here, no ratio`` and judges against the figures quoted in ``../shared/slurm/README.md``. The
script exits 0 whether the targets are met or not, and prints PASS or FAIL per target.

    .venv/bin/python bench/slurm_commands.py [--quick] [--repeat N] [--calls N]
"""

from __future__ import annotations

import argparse
import os
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

import httpx
from harness import fresh_cluster, keepalive_client, python_cmd, spread, submit_batch, verdict
from slurm_peer import NO_SLURM, SlurmPeer

from phalanx.server.localcluster import LocalCluster

NODES, GPUS, CPUS = 4, 8, 64
PENDING = (1_000, 10_000)
PER_BATCH = 1_000
PHALANX = str(Path(sys.executable).with_name("phalanx"))
SBATCH = ("-o", "/dev/null", "--wrap=true")
SQUEUE = {"squeue": (), "squeue -h -o %i": ("-h", "-o", "%i")}
QUOTED = {"run": 55.0, "held": 176.0, 1_000: 0.015, 10_000: 0.086}
"""Slurm's figures in ``../shared/slurm/README.md``: jobs/s, and squeue seconds by pending."""


class Side:
    """One side of the comparison: where its commands are, their environment, their cwd."""

    def __init__(self, name: str, bindir: str, env: dict[str, str], cwd: str) -> None:
        self.name, self.bindir, self.env, self.cwd = name, bindir, env, cwd

    def argv(self, command: str, *args: str) -> list[str]:
        return [os.path.join(self.bindir, command), *args]

    def call(self, command: str, *args: str) -> str:
        """Run one command to the end; its standard output. A failure is a bug: raise."""
        out = subprocess.run(
            self.argv(command, *args), capture_output=True, text=True, env=self.env, cwd=self.cwd
        )
        if out.returncode != 0:
            raise RuntimeError(f"{self.name} {command} {shlex.join(args)}: {out.stderr.strip()}")
        return out.stdout

    def sbatch_rate(self, count: int, held: bool) -> float:
        """Serial ``sbatch`` calls per second, one process each."""
        args = ("-H", *SBATCH) if held else SBATCH
        t0 = time.perf_counter()
        for _ in range(count):
            self.call("sbatch", *args)
        return count / (time.perf_counter() - t0)

    def wall(self, command: str, args: Sequence[str], runs: int, lines: int = -1) -> list[float]:
        """Wall seconds of ``runs`` calls; each output must have ``lines`` lines (-1: any)."""
        times = []
        for _ in range(runs):
            t0 = time.perf_counter()
            out = self.call(command, *args)
            times.append(time.perf_counter() - t0)
            if lines >= 0 and out.count("\n") != lines:
                raise RuntimeError(f"{command} {shlex.join(args)}: {out.count(chr(10))} lines")
        return times


# ------------------------------------------------------------------ context
def _shim_python(shims: str) -> str:
    """The interpreter named on the Python shims' ``#!`` line."""
    with open(os.path.join(shims, ".python", "sbatch")) as f:
        return f.readline()[2:].split()[0]


def _interpreter_ms(python: str, runs: int) -> list[float]:
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        subprocess.run([python, "-IS", "-c", "pass"], check=True)
        times.append((time.perf_counter() - t0) * 1000)
    return times


def _import_ms(python: str, runs: int) -> tuple[list[float], list[tuple[float, str]]]:
    """Milliseconds of importing ``phalanx.slurm.sbatch`` as a shim does (``-IS``, the
    package root on ``sys.path``): the sum of the top-level ``phalanx*`` entries of
    ``-X importtime``, per run; and the five largest own times of the last run."""
    from phalanx.slurm.shims import package_root

    code = f"import sys; sys.path.insert(0, {package_root()!r}); import phalanx.slurm.sbatch"
    totals: list[float] = []
    own: list[tuple[float, str]] = []
    for _ in range(runs):
        err = subprocess.run(
            [python, "-IS", "-X", "importtime", "-c", code],
            capture_output=True,
            text=True,
            check=True,
        ).stderr
        total, own = 0.0, []
        for line in err.splitlines():
            if not line.startswith("import time:") or "[us]" in line:
                continue
            self_us, cumulative_us, name = line[len("import time:") :].split("|")
            own.append((int(self_us) / 1000, name.strip()))
            if name.startswith(" phalanx") and not name.startswith("  "):
                total += int(cumulative_us) / 1000
        totals.append(total)
    return totals, sorted(own, reverse=True)[:5]


# ------------------------------------------------------------------ the sides
def _phalanx_side(cluster: LocalCluster, shims: str, workdir: str) -> Side:
    env = dict(os.environ, PHALANX_STATE_DIR=str(cluster.state_dir))
    env.pop("PHALANX_URL", None)
    return Side("Phalanx", shims, env, workdir)


def _slurm_side(peer: SlurmPeer) -> Side:
    sbatch = shutil.which("sbatch", path=peer.env.get("PATH"))
    assert sbatch is not None
    return Side("Slurm", os.path.dirname(sbatch), peer.env, str(peer.work))


def _phalanx_sbatch(shims: str, count: int, held: bool) -> float:
    with fresh_cluster(NODES, GPUS, CPUS) as (cluster, workdir):
        rate = _phalanx_side(cluster, shims, workdir).sbatch_rate(count, held)
        last = cluster.call("GET", "/v1/jobs", query={"all": True, "ids": str(count)})["jobs"]
        if not last:
            raise RuntimeError(f"job {count} is missing after {count} sbatch calls")
    return rate


def _slurm_sbatch(peer: SlurmPeer, count: int, held: bool) -> float:
    peer.wait_idle()
    rate = _slurm_side(peer).sbatch_rate(count, held)
    peer.cancel_all()
    peer.wait_idle()
    return rate


def _handled(client: httpx.Client, job_id: int, timeout: float = 120.0) -> None:
    """Until the controller knows job ``job_id``."""
    deadline = time.monotonic() + timeout
    while client.get(f"/v1/jobs/{job_id}").status_code != 200:
        if time.monotonic() > deadline:
            raise TimeoutError(f"job {job_id} unknown after {timeout:g} s")
        time.sleep(0.01)


Listings = dict[tuple[str, int], list[float]]


def _phalanx_squeue(shims: str, samples: int) -> Listings:
    out: Listings = {}
    with fresh_cluster(NODES, GPUS, CPUS) as (cluster, workdir), keepalive_client(cluster) as c:
        side = _phalanx_side(cluster, shims, workdir)
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
            last = 0
            while submitted < pending:
                count = min(PER_BATCH, pending - submitted)
                last = submit_batch(c, [job] * count)[-1]
                submitted += count
            _handled(c, last)
            _squeue_all(side, pending, samples, out)
    return out


def _slurm_forgotten(peer: SlurmPeer, timeout: float) -> None:
    """Until slurmctld holds no job at all, up to ``timeout`` s. It keeps ended jobs for
    ``MinJobAge`` (300 s by default) and ``squeue`` fetches them all before it filters, so
    earlier runs' jobs would slow Slurm's listing; says how many were left if some were."""
    deadline = time.monotonic() + timeout
    while True:
        held = len(peer.run("squeue", "-h", "-t", "all", "-o", "%i").stdout.split())
        if not held or time.monotonic() > deadline:
            break
        time.sleep(5)
    if held:
        print(
            f"  (Slurm still holds {held:,} ended jobs after {timeout:g} s: its squeue is slower)"
        )


def _slurm_squeue(peer: SlurmPeer, samples: int, settle: float) -> tuple[Listings, int]:
    """The listings, and how many ``sbatch -H`` calls failed."""
    out: Listings = {}
    side = _slurm_side(peer)
    peer.wait_idle()
    _slurm_forgotten(peer, settle)
    submitted = failed = 0
    for pending in PENDING:
        failed += peer.sbatch_held(pending - submitted)
        submitted = pending
        _squeue_all(side, pending - failed, samples, out)
    peer.cancel_all()
    peer.wait_idle()
    return out, failed


def _squeue_all(side: Side, pending: int, samples: int, out: Listings) -> None:
    for label, args in SQUEUE.items():
        lines = pending if "-h" in args else pending + 1
        out[(label, pending)] = side.wall("squeue", args, samples, lines)


# ------------------------------------------------------------------ main
def _args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=None, help="sbatch runs (default 3)")
    parser.add_argument("--calls", type=int, default=None, help="sbatch calls a run (200)")
    parser.add_argument("--samples", type=int, default=10, help="squeue calls (10)")
    parser.add_argument(
        "--settle", type=float, default=360, help="s to wait for Slurm to forget ended jobs"
    )
    parser.add_argument("--quick", action="store_true", help="one run of 50 calls")
    args = parser.parse_args(argv)
    if args.repeat is None:
        args.repeat = 1 if args.quick else 3
    if args.calls is None:
        args.calls = 50 if args.quick else 200
    if min(args.repeat, args.calls, args.samples) < 1:
        parser.error("--repeat, --calls and --samples must be at least 1")
    return args


def _judge(label: str, ours: float, theirs: float, live: bool, higher: bool, fmt: str) -> None:
    source = "Slurm in this run" if live else "Slurm's quoted figure"
    ok = ours >= theirs if higher else ours <= theirs
    sign = ">=" if higher else "<="
    print(verdict(ok, f"{label}: median {ours:{fmt}} (target {sign} {theirs:{fmt}}, {source})"))


def main(argv: list[str] | None = None) -> int:
    args = _args(argv)
    print("$", shlex.join([python_cmd(), *sys.argv]))
    print(
        f"cluster: {NODES} nodes x {GPUS} GPUs x {CPUS} CPUs, partition main; "
        f"every command a process; {os.cpu_count()} cores"
    )
    peer, about = SlurmPeer.find()
    print(about if peer else f"Slurm: not running here ({about})")
    slurm = _slurm_side(peer) if peer else None

    with tempfile.TemporaryDirectory(prefix="phx-shims-") as shims:
        subprocess.run([PHALANX, "shims", shims], check=True, capture_output=True)
        python = _shim_python(shims)
        native = os.path.islink(os.path.join(shims, "sbatch"))
        print(
            "shims: phalanx shims DIR: "
            + ("native, with the controller's command server" if native else "Python only")
            + f"; Python shims' interpreter {python}"
        )
        print()

        # ---- where a shim's time goes
        print("context (ms):")
        print(f"  {'python -IS -c pass':<38}  {spread(_interpreter_ms(python, 20), '.1f')}")
        totals, top = _import_ms(python, 5)
        print(f"  {'import phalanx.slurm.sbatch (-IS)':<38}  {spread(totals, '.1f')}")
        print(
            "    largest own import times, last run: " + ", ".join(f"{n} {ms:.1f}" for ms, n in top)
        )
        with fresh_cluster(1, GPUS, CPUS) as (cluster, workdir):
            ours = _phalanx_side(cluster, shims, workdir).wall("sbatch", ["--version"], 20)
            pythons = _phalanx_side(cluster, os.path.join(shims, ".python"), workdir).wall(
                "sbatch", ["--version"], 20
            )
        print(f"  {'Phalanx sbatch --version':<38}  {spread([t * 1000 for t in ours], '.1f')}")
        print(
            f"  {'Phalanx sbatch --version, Python shim':<38}  "
            f"{spread([t * 1000 for t in pythons], '.1f')}"
        )
        if slurm is not None:
            theirs = slurm.wall("sbatch", ["--version"], 20)
            print(f"  {'Slurm sbatch --version':<38}  {spread([t * 1000 for t in theirs], '.1f')}")
        print()

        # ---- 1. squeue, first: before this run adds to what Slurm holds
        print(f"squeue with pending (held) jobs, {args.samples} calls each, ms:", flush=True)
        listings = {"Phalanx": _phalanx_squeue(shims, args.samples)}
        if peer is not None:
            listings["Slurm"], failed = _slurm_squeue(peer, args.samples, args.settle)
            if failed:
                print(f"  ({failed} Slurm sbatch -H calls failed; its counts are lower by that)")
        for side, found in listings.items():
            for (label, pending), times in found.items():
                shown = [t * 1000 for t in times]
                print(f"  {side:<8} {label:<16} {pending:>7,} pending  {spread(shown, '.1f')}")
        print()

        # ---- 2. serial sbatch
        rates: dict[tuple[str, str], list[float]] = {}
        for i in range(args.repeat):
            for how in ("run", "held"):
                held = how == "held"
                rates.setdefault(("Phalanx", how), []).append(
                    _phalanx_sbatch(shims, args.calls, held)
                )
                if peer is not None:
                    rates.setdefault(("Slurm", how), []).append(
                        _slurm_sbatch(peer, args.calls, held)
                    )
            print(f"  sbatch run {i + 1}/{args.repeat} done", flush=True)
        print()
        print(f"serial sbatch {shlex.join(SBATCH)}, {args.calls} calls a run, jobs/s:")
        for (side, how), values in rates.items():
            flag = "-H, held" if how == "held" else "released"
            print(f"  {side + ' ' + flag:<26}  {spread(values, ',.1f')}")
    print()

    # ---- ratios and verdicts
    live = peer is not None
    if not live:
        print(NO_SLURM + " (targets below are Slurm's figures quoted in ../shared/slurm)")
    else:
        print(
            "ratio Phalanx / Slurm (median / median; > 1 is faster for sbatch, slower for squeue):"
        )
        for how in ("run", "held"):
            ours_r = statistics.median(rates[("Phalanx", how)])
            theirs_r = statistics.median(rates[("Slurm", how)])
            print(f"  {'sbatch ' + how:<32}  {ours_r / theirs_r:6.2f}x")
        for key in listings["Phalanx"]:
            ours_s = statistics.median(listings["Phalanx"][key])
            theirs_s = statistics.median(listings["Slurm"][key])
            print(f"  {key[0] + f', {key[1]:,} pending':<32}  {ours_s / theirs_s:6.2f}x")
    print()
    for how in ("run", "held"):
        ours_r = statistics.median(rates[("Phalanx", how)])
        theirs_r = statistics.median(rates[("Slurm", how)]) if live else QUOTED[how]
        _judge(f"sbatch ({how}) jobs/s", ours_r, theirs_r, live, True, ",.1f")
    for (label, pending), times in listings["Phalanx"].items():
        ours_s = statistics.median(times) * 1000
        theirs_s = (
            statistics.median(listings["Slurm"][(label, pending)]) if live else QUOTED[pending]
        ) * 1000
        _judge(f"{label} at {pending:,} pending, ms", ours_s, theirs_s, live, False, ".1f")
    return 0


if __name__ == "__main__":
    sys.exit(main())
