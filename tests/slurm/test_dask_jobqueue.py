"""dask-jobqueue's ``SLURMCluster`` on a real Phalanx, through the Slurm shims.

dask-jobqueue writes a batch script, runs ``sbatch`` on it once per worker job, and
``scancel``s the jobs when the cluster scales down or closes (it never polls ``squeue``):
see ``/work/shared/slurm/clients/calls.log``. The worker job runs
``python -m distributed.cli.dask_worker tcp://127.0.0.1:PORT ...`` straight from the script.
"""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from phalanx.server.localcluster import LocalCluster

dask_jobqueue = pytest.importorskip("dask_jobqueue")
distributed = pytest.importorskip("distributed")

# Generous on a 2-core machine: each worker is a Python process that imports distributed.
WORKERS_UP_S = 120.0
JOBS_END_S = 60.0
_ENDED = frozenset({"CANCELLED", "COMPLETED", "FAILED", "TIMEOUT", "NODE_FAIL"})


def _jobs(phalanx: LocalCluster) -> list[dict[str, Any]]:
    jobs: list[dict[str, Any]] = phalanx.call("GET", "/v1/jobs", query={"all": True})["jobs"]
    return jobs


def test_slurmcluster_runs_two_workers_and_cancels_them(
    phalanx: LocalCluster, slurm_env: Path
) -> None:
    import dask.array as da

    logs = slurm_env / "dask_logs"
    with dask_jobqueue.SLURMCluster(
        cores=1,
        processes=1,
        memory="1GB",
        queue="gpu",
        walltime="00:10:00",
        job_extra_directives=["--gres=gpu:1"],
        log_directory=str(logs),
        local_directory=str(slurm_env / "scratch"),
        interface="lo",
        scheduler_options={"dashboard_address": ":0"},
    ) as cluster:
        script = cluster.job_script()
        assert "#SBATCH -p gpu" in script and "distributed.cli.dask_worker" in script
        cluster.scale(jobs=2)
        with distributed.Client(cluster) as client:
            try:
                client.wait_for_workers(2, timeout=WORKERS_UP_S)
            except TimeoutError:
                raise AssertionError(_diagnosis(phalanx, logs)) from None
            assert client.submit(sum, range(100)).result() == 4950
            assert int(da.arange(1000, chunks=100).sum().compute()) == 499500
            job_ids = sorted(int(job.job_id) for job in cluster.workers.values())
            seen = client.run(lambda: os.environ.get("SLURM_JOB_ID"))
            assert sorted(int(i) for i in seen.values()) == job_ids
            gpus = client.run(lambda: os.environ.get("CUDA_VISIBLE_DEVICES"))
            assert all(g is not None and len(g.split(",")) == 1 for g in gpus.values()), gpus
        assert len(job_ids) == 2
        assert len(_job_processes(job_ids, slurm_env)) >= 2
        jobs = [phalanx.job(i) for i in job_ids]
        assert [(j["state"], j["name"], j["partition"]) for j in jobs] == [
            ("RUNNING", "dask-worker", "gpu")
        ] * 2, jobs
        assert [(j["gpus"], j["cpus"], j["mem_mb"], j["time_limit_ms"]) for j in jobs] == [
            (1, 1, 954, 600_000)
        ] * 2, jobs
    # Closing the cluster ran ``scancel`` on both worker jobs.
    jobs = phalanx.wait(job_ids, ("CANCELLED",), timeout=JOBS_END_S)
    assert [j["state"] for j in jobs] == ["CANCELLED", "CANCELLED"], jobs
    left = [j for j in _jobs(phalanx) if j["state"] not in _ENDED]
    assert left == [], left
    _wait_gone(job_ids, slurm_env)
    done = subprocess.run(
        ["sacct", "-X", "-n", "-P", "-o", "JobID,JobName,State", "-j", ",".join(map(str, job_ids))],
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
    )
    assert [line.split("|")[:2] for line in done.stdout.splitlines()] == [
        [str(i), "dask-worker"] for i in job_ids
    ], done.stdout
    assert all(line.split("|")[2].startswith("CANCELLED") for line in done.stdout.splitlines())


def _job_processes(job_ids: list[int], submit_dir: Path) -> list[str]:
    """The pids of the jobs' processes (the nanny and its worker), found by environment."""
    mark = f"SLURM_SUBMIT_DIR={submit_dir}".encode()
    wanted = {f"SLURM_JOB_ID={i}".encode() for i in job_ids}
    found = []
    for environ in Path("/proc").glob("[0-9]*/environ"):
        try:
            entries = set(environ.read_bytes().split(b"\0"))
        except OSError:
            continue  # ended meanwhile, or not ours to read
        if mark in entries and entries & wanted:
            found.append(environ.parent.name)
    return found


def _wait_gone(job_ids: list[int], submit_dir: Path) -> None:
    deadline = time.monotonic() + JOBS_END_S
    while (alive := _job_processes(job_ids, submit_dir)) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert alive == [], f"processes of the worker jobs still running: {alive}"


def _diagnosis(phalanx: LocalCluster, logs: Path) -> str:
    lines = [f"{j['job_id']} {j['state']} {j.get('reason')}" for j in _jobs(phalanx)]
    for path in sorted(logs.glob("*")):
        lines.append(f"--- {path.name}\n{path.read_text(errors='replace')[-2000:]}")
    lines.append(phalanx.log_tail("controller", 40))
    return "\n".join(lines)
