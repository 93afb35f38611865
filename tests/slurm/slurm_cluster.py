"""The reference cluster of ``/work/shared/slurm/reference`` as a LocalCluster, and the jobs
its captures were taken with, so the Slurm commands can be compared with Slurm's output.

Sixteen nodes ``n[01-16]`` (8 H100s, 64 CPUs, 500G each) in one default partition ``gpu``.
``reference_jobs`` submits what ``out/01..10`` submitted and returns the Phalanx job id of each
reference id, so a normalizer can print Phalanx's ids as the reference's.
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from phalanx.server.localcluster import LocalCluster

REFERENCE = Path("/work/shared/slurm/reference/out")

YAML = """name: refcluster
nodes:
  - names: n[01-16]
    gpus: 8
    gpu_model: h100
    cpus: 64
    memory: 500G
partitions:
  - name: gpu
    nodes: ALL
    default: true
"""


def env() -> dict[str, str]:
    return {"PATH": os.environ.get("PATH", "/usr/bin:/bin")}


def reference(name: str) -> tuple[str, str, list[str], str, int]:
    """A capture: its command, stdout lines, stderr and exit status."""
    text = (REFERENCE / name).read_text()
    command = text.splitlines()[0].removeprefix("$ ")
    out = text.split("--- stdout ---\n", 1)[1].split("--- stderr ---\n", 1)[0]
    err = text.split("--- stderr ---\n", 1)[1].split("--- rc=", 1)[0]
    rc = int(text.rsplit("--- rc=", 1)[1].strip())
    return command, out, out.splitlines(), err, rc


def start(state: Path) -> LocalCluster:
    return LocalCluster(state, YAML).start()


def submit(cluster: LocalCluster, workdir: Path, **request: Any) -> list[int]:
    body = {"workdir": str(workdir), "environment": env(), **request}
    return cluster.submit(**body)


def reference_jobs(cluster: LocalCluster, workdir: Path) -> dict[int, int]:
    """``out/01``-``out/10``: Phalanx id -> reference id (array tasks map to the array)."""
    sleep = lambda s: ["sleep", str(s)]  # noqa: E731
    ids: dict[int, int] = {}
    [a] = submit(
        cluster,
        workdir,
        command=sleep(600),
        name="filler",
        nodes="15",
        exclusive=True,
        time="10:00",
    )
    ids[a] = 1
    cluster.wait([a], ("RUNNING",), final=True)
    [b] = submit(cluster, workdir, command=sleep(300), name="wrap")
    ids[b] = 2
    [c] = submit(cluster, workdir, command=sleep(300), name="wrap")
    ids[c] = 3
    [d] = submit(
        cluster,
        workdir,
        command=sleep(300),
        name="train_llm",
        gpus_per_task=4,
        cpus_per_task=8,
        mem="64G",
        time="1-00:00:00",
    )
    ids[d] = 4
    [e] = submit(
        cluster,
        workdir,
        command=sleep(60),
        name="bigjob",
        nodes="4",
        gpus_per_task=8,
        time="2:00:00",
    )
    ids[e] = 5
    [f] = submit(cluster, workdir, command=sleep(60), name="small", gpus_per_task=4, time="30:00")
    ids[f] = 6
    [g] = submit(cluster, workdir, command=["true"], name="heldjob", hold=True)
    ids[g] = 7
    [h] = submit(cluster, workdir, command=["true"], name="depjob", dependency=f"afterok:{b}")
    ids[h] = 8
    tasks = submit(cluster, workdir, command=sleep(300), name="arr", array="0-9%2")
    for t in tasks:
        ids[t] = 9
    [j] = submit(
        cluster, workdir, command=["true"], name="later", begin=int(time.time() * 1000) + 3_600_000
    )
    ids[j] = 10
    return ids


def reference_scene(cluster: LocalCluster, workdir: Path) -> tuple[dict[int, int], int]:
    """``reference_jobs`` plus a ``wrap`` job that failed (exit 3, reference id 34), once
    the reference's running jobs run: the id map and the failed job's id."""
    ids = reference_jobs(cluster, workdir)
    [failed] = submit(cluster, workdir, command=["sh", "-c", "exit 3"], name="wrap")
    ids[failed] = 34
    cluster.wait([failed])
    running = [i for i, ref in ids.items() if ref in (1, 2, 3, 4, 6)]
    cluster.wait(running, ("RUNNING",), final=False)
    return ids, failed


def run(main: Callable[[list[str]], int], argv: list[str], state: Path) -> tuple[str, str, int]:
    """``main(argv)`` in this process, talking to the cluster at ``state``: stdout, stderr
    and the exit status."""
    import contextlib
    import io

    out, err = io.StringIO(), io.StringIO()
    saved = {k: os.environ.get(k) for k in ("PHALANX_STATE_DIR", "PHALANX_URL")}
    os.environ["PHALANX_STATE_DIR"] = str(state)
    os.environ.pop("PHALANX_URL", None)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            rc = main(argv)
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
    return out.getvalue(), err.getvalue(), rc


NODES = re.compile(r"\bn(\[[\d,-]+\]|\d\d)")


def normalize_nodes(text: str) -> str:
    return NODES.sub("NODES", text)


def map_ids(line: str, ids: Mapping[int, int]) -> str:
    """The leading job id of ``line`` (``12``, ``12_3``, ``12_[3-5]``) as the reference's."""
    m = re.match(r"(\s*)(\d+)", line)
    if m is None:
        return line
    mapped = ids.get(int(m.group(2)), int(m.group(2)))
    return f"{m.group(1)}{mapped}{line[m.end() :]}"


def wait_until(check: Callable[[], bool], timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError("condition not met in time")
        time.sleep(0.05)


def pending_jobs(cluster: LocalCluster, count: int, workdir: Path) -> list[int]:
    """``count`` held jobs, submitted in one batch."""
    body = {
        "jobs": [
            {"command": ["true"], "hold": True, "workdir": str(workdir), "name": f"p{i}"}
            for i in range(count)
        ]
    }
    answer = cluster.call("POST", "/v1/jobs/batch", body=body)
    return [i for ids in answer["job_ids"] for i in ids]
