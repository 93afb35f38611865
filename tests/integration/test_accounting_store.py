"""Accounting in the state store: ``sacct`` reads ended jobs with no controller running,
from SQLite or PostgreSQL, as Slurm's sacct reads slurmdbd; even after a kill -9 (each
job's record is stored as it ends, not at a clean stop)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from live_env import env

from phalanx.server.localcluster import LocalCluster, cluster_yaml


def _sacct(args: list[str], environ: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "phalanx.slurm.sacct", *args],
        capture_output=True,
        text=True,
        env=environ,
        timeout=60,
        check=False,
    )


def test_sacct_reads_ended_jobs_from_the_store_without_a_controller(
    tmp_path: Path, workdir: Path, db_url: str
) -> None:
    environ = dict(os.environ, PHALANX_DB=db_url, PHALANX_STATE_DIR=str(tmp_path / "state"))
    environ.pop("PHALANX_URL", None)
    with LocalCluster(tmp_path / "state", cluster_yaml(1, 8), env=environ) as cluster:
        ids = [
            cluster.submit(
                command=["sh", "-c", f"exit {code}"],
                workdir=str(workdir),
                environment=env(),
                output="/dev/null",
            )[0]
            for code in (0, 3)
        ]
        cluster.wait(ids, ("COMPLETED", "FAILED"))
        [running] = cluster.submit(
            command=["sleep", "60"], workdir=str(workdir), environment=env(), output="/dev/null"
        )
        cluster.wait([running], ("RUNNING",), final=False)
        online = _sacct(["-X", "-n", "-P", "-a", "-o", "JobID,State,ExitCode"], environ)
        cluster.kill_controller()
        offline = _sacct(["-X", "-n", "-P", "-a", "-o", "JobID,State,ExitCode"], environ)
    assert online.returncode == 0, online.stderr
    assert offline.returncode == 0, offline.stderr
    ended = f"{ids[0]}|COMPLETED|0:0\n{ids[1]}|FAILED|3:0\n"
    assert online.stdout == ended + f"{running}|RUNNING|0:0\n"
    # The running job is the controller's to know: only ended jobs are in accounting.
    assert offline.stdout == ended
    one = _sacct(["-X", "-n", "-P", "-j", str(ids[1]), "-o", "JobID,State"], environ)
    assert (one.returncode, one.stdout) == (0, f"{ids[1]}|FAILED\n")


def test_sacct_with_neither_a_controller_nor_a_store_says_so(tmp_path: Path) -> None:
    environ = dict(os.environ, PHALANX_STATE_DIR=str(tmp_path / "nothing"))
    environ.pop("PHALANX_URL", None)
    environ.pop("PHALANX_DB", None)
    got = _sacct([], environ)
    assert got.returncode == 1
    assert "no state database" in got.stderr and "Traceback" not in got.stderr
