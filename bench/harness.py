"""What the ``live_*`` benchmarks share: a live cluster in a temporary folder, spreads of
figures, and the memory of a process.

A live benchmark measures a whole Phalanx (controller and agents as processes, talking HTTP)
through its REST API, as a program would: ``fresh_cluster`` starts one in a new temporary
folder and stops it, and removes the folder, when the block ends.
"""

from __future__ import annotations

import contextlib
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import httpx

from phalanx.server.localcluster import LocalCluster, cluster_yaml

__all__ = [
    "ACTIVE",
    "fresh_cluster",
    "keepalive_client",
    "percentile",
    "python_cmd",
    "spread",
    "status_mb",
    "submit_batch",
    "verdict",
    "wait_idle",
]

ACTIVE = "PENDING,RUNNING,COMPLETING"
"""The states of a job that still has something to do."""


def python_cmd() -> str:
    """The interpreter as the reader would type it: relative when under the current folder."""
    rel = os.path.relpath(sys.executable)
    return sys.executable if rel.startswith("..") else rel


@contextlib.contextmanager
def fresh_cluster(
    nodes: int, gpus: int = 8, cpus: int = 64, *, db: str | None = None
) -> Iterator[tuple[LocalCluster, str]]:
    """A started cluster of ``nodes`` x (``gpus``, ``cpus``) and a folder its jobs may use as
    their working directory; both are gone when the block ends. ``db``: the state store's
    URL (default: SQLite in the state directory)."""
    with tempfile.TemporaryDirectory(prefix="phx-bench-") as tmp:
        root = Path(tmp)
        workdir = root / "work"
        workdir.mkdir()
        env = dict(os.environ)
        env.pop("PHALANX_DB", None)
        if db is not None:
            env["PHALANX_DB"] = db
        cluster = LocalCluster(
            root / "state", cluster_yaml(nodes=nodes, gpus=gpus, cpus=cpus), env=env
        )
        cluster.start()
        try:
            yield cluster, str(workdir)
        finally:
            _stop(cluster)


def _stop(cluster: LocalCluster) -> None:
    """The controller first (SIGTERM, then SIGKILL after 2 s), then the agents. A controller
    told to stop waits for the agents' long polls in flight (up to their 10-s heartbeat wait)
    before it exits; a benchmark of many runs would spend minutes on that. What it leaves
    unwritten does not matter: the folder is removed next."""
    controller = cluster.controller
    if controller is not None and controller.poll() is None:
        controller.terminate()
        try:
            controller.wait(2)
        except subprocess.TimeoutExpired:
            controller.kill()
            controller.wait()
    cluster.stop()


def keepalive_client(cluster: LocalCluster) -> httpx.Client:
    """One HTTP/1.1 connection kept open over the controller's Unix socket: what a program
    that submits many jobs would hold."""
    transport = httpx.HTTPTransport(uds=str(cluster.socket))
    return httpx.Client(transport=transport, base_url="http://phalanx", timeout=60)


def wait_idle(cluster: LocalCluster, timeout: float = 60.0) -> None:
    """Until no job is pending, running or completing (its epilog included)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not cluster.call("GET", "/v1/jobs", query={"state": ACTIVE})["jobs"]:
            return
        time.sleep(0.02)
    raise TimeoutError(f"the cluster is still busy after {timeout:g} s")


def status_mb(pid: int) -> dict[str, float]:
    """``VmRSS`` and ``VmHWM`` (peak RSS) of a live process, in MB (10^6 bytes)."""
    out: dict[str, float] = {}
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            key, _, rest = line.partition(":")
            if key in ("VmRSS", "VmHWM"):
                out[key] = int(rest.split()[0]) * 1024 / 1e6
    return out


def percentile(values: Sequence[float], q: float) -> float:
    """Linear interpolation between closest ranks (numpy's default)."""
    ordered = sorted(values)
    pos = (len(ordered) - 1) * q
    lo = math.floor(pos)
    hi = min(lo + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (pos - lo)


def spread(values: Sequence[float], fmt: str = ",.0f", unit: str = "") -> str:
    """``min A / median B / max C UNIT (n=N)``, or ``n/a`` for no values."""
    if not values:
        return "n/a"
    lo, mid, hi = min(values), statistics.median(values), max(values)
    tail = f" {unit}" if unit else ""
    return f"min {lo:{fmt}} / median {mid:{fmt}} / max {hi:{fmt}}{tail} (n={len(values)})"


def verdict(passed: bool, text: str) -> str:
    return f"{'PASS' if passed else 'FAIL'}  {text}"


def submit_batch(client: Any, jobs: list[dict[str, Any]]) -> list[int]:
    """POST /v1/jobs/batch on ``client`` (an httpx client); the first id of each request."""
    answer = client.post("/v1/jobs/batch", json={"jobs": jobs})
    answer.raise_for_status()
    return [ids[0] for ids in answer.json()["job_ids"]]
