"""The real Slurm started by ``../shared/slurm/start_slurm.sh``, driven by its own commands.

The live benchmarks measure the same thing on Slurm, when it runs here, with the methods of
``../shared/slurm/bench/*.py`` (``sbatch``, ``squeue`` polling, ``scontrol release``, the
``jobcomp`` file), and print the ratio. ``SlurmPeer.find()`` answers the peer, or the reason
there is none: then the benchmarks print ``Slurm: not running here, no ratio``.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from collections.abc import Sequence
from pathlib import Path

__all__ = ["NO_SLURM", "SlurmPeer"]

NO_SLURM = "Slurm: not running here, no ratio"
DEFAULT_BASE = Path("/tmp/slurm-ref")


class SlurmPeer:
    """A running slurmctld that answers ``scontrol ping``, and its files under ``base``."""

    def __init__(self, base: Path) -> None:
        self.base = base
        self.env = dict(os.environ, SLURM_CONF=str(base / "etc" / "slurm.conf"))
        self.work = base / "bench" / "work_phalanx"
        self.work.mkdir(parents=True, exist_ok=True)

    @classmethod
    def find(cls) -> tuple[SlurmPeer | None, str]:
        """The peer, or None and why not. ``SLURM_CONF`` names its config when set (the
        base is two folders above it); the default is ``/tmp/slurm-ref``."""
        conf = os.environ.get("SLURM_CONF")
        base = Path(conf).resolve().parents[1] if conf else DEFAULT_BASE
        if shutil.which("sbatch") is None:
            return None, "no sbatch on PATH"
        if not (base / "etc" / "slurm.conf").exists():
            return None, f"no {base}/etc/slurm.conf"
        peer = cls(base)
        if "UP" not in peer.run("scontrol", "ping").stdout:
            return None, "scontrol ping does not say UP"
        return peer, "Slurm " + peer.run("sinfo", "--version").stdout.strip()

    # ------------------------------------------------------------------ commands
    def run(self, *argv: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            list(argv), capture_output=True, text=True, env=self.env, cwd=self.work, check=False
        )

    def sbatch(self, *options: str) -> int:
        """One ``sbatch --parsable`` run; the job id."""
        out = self.run("sbatch", "--parsable", *options)
        if out.returncode != 0:
            raise RuntimeError(f"sbatch failed: {out.stderr.strip()}")
        return int(out.stdout.strip().split(";")[0])

    def sbatch_held(self, count: int, submitters: int = 4) -> int:
        """``count`` held ``sbatch --wrap=true`` from ``submitters`` parallel shell loops, as
        ``../shared/slurm/bench/held.py`` submits; how many failed."""
        per = [count // submitters + (i < count % submitters) for i in range(submitters)]
        loop = (
            "for i in $(seq {}); do "
            "sbatch -H -o /dev/null --wrap=true >/dev/null || echo FAIL; done"
        )
        procs = [
            subprocess.Popen(
                ["bash", "-c", loop.format(k)],
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                text=True,
                env=self.env,
                cwd=self.work,
            )
            for k in per
            if k
        ]
        return sum(p.communicate()[0].count("FAIL") for p in procs)

    def state(self, job_id: int) -> str:
        """``squeue -h -j ID -o %T``: empty once the job has left the queue."""
        return self.run("squeue", "-h", "-j", str(job_id), "-o", "%T").stdout.strip()

    def queued(self) -> list[int]:
        return [int(i) for i in self.run("squeue", "-h", "-o", "%i").stdout.split()]

    def cancel_all(self) -> None:
        """``scancel`` every queued job (this Slurm exists for benchmarks only)."""
        ids = [str(i) for i in self.queued()]
        for k in range(0, len(ids), 500):
            self.run("scancel", *ids[k : k + 500])

    def release(self, ids: Sequence[int]) -> None:
        for k in range(0, len(ids), 200):
            self.run("scontrol", "release", ",".join(str(i) for i in ids[k : k + 200]))

    def wait_idle(self, timeout: float = 300.0) -> None:
        """No job queued and no node completing, as ``../shared/slurm/bench`` waits."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if not self.queued() and "comp" not in self.run("sinfo", "-h", "-o", "%t").stdout:
                return
            time.sleep(0.2)
        raise TimeoutError(f"Slurm is still busy after {timeout:g} s")

    # ------------------------------------------------------------------ files
    def completions(self) -> int:
        """Lines of the jobcomp file: one per job that ended."""
        try:
            with open(self.base / "log" / "jobcomp.txt", "rb") as f:
                return f.read().count(b"\n")
        except FileNotFoundError:
            return 0

    def slurmctld_pid(self) -> int:
        return int((self.base / "run" / "slurmctld.pid").read_text())
