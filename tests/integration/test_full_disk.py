"""A full disk: submissions are refused with a clear error,
the controller keeps answering, the database stays sound, and nothing acknowledged is lost."""

from __future__ import annotations

import os
import sqlite3
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from live_env import env

from phalanx.client.wirecall import ApiError
from phalanx.server.localcluster import LocalCluster, cluster_yaml


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    mount = tmp_path / "disk"
    mount.mkdir()
    if os.geteuid() != 0:
        pytest.skip("mounting a small tmpfs needs root")
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(mount)],
        capture_output=True,
        check=False,
    )
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.decode().strip()}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def _fill(path: Path) -> None:
    """Take every free byte of the file system (bar a few KB of rounding)."""
    # Unbuffered: the write that finds the disk full raises here, not at close.
    with open(path, "wb", buffering=0) as f:
        try:
            while True:
                f.write(b"\0" * 65536)
        except OSError:
            pass
    assert os.statvfs(path.parent).f_bavail * os.statvfs(path.parent).f_frsize < 70_000


def test_a_full_disk_refuses_submissions_and_corrupts_nothing(
    small_disk: Path, workdir: Path
) -> None:
    state = small_disk / "state"
    padding = "x" * 4000  # bigger requests fill the journal sooner
    request = {
        "command": ["true"],
        "workdir": str(workdir),
        "output": "/dev/null",
        "environment": {**env(), "PAD": padding},
    }
    with LocalCluster(state, cluster_yaml(1, 8)) as cluster:
        acknowledged = [cluster.submit(**request)[0] for _ in range(3)]
        _fill(small_disk / "filler")
        refused = None
        for _ in range(200):
            try:
                acknowledged.append(cluster.submit(**request)[0])
            except ApiError as exc:
                refused = exc
                break
        assert refused is not None, "the disk never filled"
        assert refused.status == 507
        assert "submissions refused" in str(refused) and "state.db" in str(refused)
        assert cluster.call("GET", "/v1/ping")["ok"]
        check = sqlite3.connect(str(state / "state.db"))
        assert check.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        check.close()

        (small_disk / "filler").unlink()
        acknowledged.append(cluster.submit(**request)[0])  # room again: accepted
        cluster.wait(acknowledged, timeout=60)

        # Nothing acknowledged is lost, across a restart too.
        cluster.kill_controller()
        cluster.start_controller()
        jobs = cluster.wait(acknowledged, timeout=60)
        assert [j["state"] for j in jobs] == ["COMPLETED"] * len(acknowledged)
