"""Nodes that check their own health: real agents with the fake ``pynvml`` (tests/agent/
fakenvml) and a health program, drained by the controller as Slurm's health checks do."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

from live_env import env
from netns_env import until

from phalanx.server.localcluster import LocalCluster, cluster_yaml

FAKE = Path(__file__).parents[1] / "agent" / "fakenvml"


def _nodes(cluster: LocalCluster) -> dict[str, dict[str, Any]]:
    return {n["name"]: n for n in cluster.call("GET", "/v1/nodes")}


def test_a_fatal_xid_requeues_at_once_and_the_health_program_drains(
    tmp_path: Path, workdir: Path
) -> None:
    gpus = tmp_path / "nvml"
    gpus.mkdir()
    for node in ("node1", "node2"):
        (gpus / f"{node}.json").write_text(json.dumps({"gpus": [{}] * 8, "xids": []}))
    check = tmp_path / "check.sh"
    # As an administrator's script: drain the node named in a flag file.
    flag = f'{tmp_path}/"$SLURMD_NODENAME".bad'
    check.write_text(f'#!/bin/sh\n[ -e {flag} ] && echo "DRAIN scratch full"\nexit 0\n')
    check.chmod(0o755)
    config = cluster_yaml(2, 8) + (
        f"health_check:\n  program: {check}\n  interval: 1\n  gpu_interval: 1\n"
    )
    agents_env = dict(
        os.environ,
        FAKE_NVML_DIR=str(gpus),
        PYTHONPATH=os.pathsep.join([str(FAKE), os.environ.get("PYTHONPATH", "")]),
    )
    with LocalCluster(tmp_path / "state", config, env=agents_env) as cluster:
        [job_id] = cluster.submit(
            command=["sleep", "600"], gpus_per_task=8, workdir=str(workdir), environment=env()
        )
        [job] = cluster.wait([job_id], ("RUNNING",), final=False)
        first = job["nodelist"]
        other = "node2" if first == "node1" else "node1"
        # Xid 79 (fallen off the bus) on the job's node: requeued at once, the node drained.
        state = json.loads((gpus / f"{first}.json").read_text())
        state["xids"].append([3, 79])
        (gpus / f"{first}.json").write_text(json.dumps(state))
        job = until(
            "the job restarted elsewhere",
            lambda: (j := cluster.job(job_id))["restarts"] == 1 and j["state"] == "RUNNING" and j,
        )
        assert job["nodelist"] == other
        node = _nodes(cluster)[first]
        assert (node["state"], node["reason"], node["reason_user"]) == (
            "drained",
            "Xid 79 on GPU 3",
            "healthcheck",
        )
        # The health program finds the other node's scratch full: drained, the job goes on.
        (tmp_path / f"{other}.bad").touch()
        node = until(
            "the health program drained the node",
            lambda: (n := _nodes(cluster)[other])["state"] == "draining" and n,
        )
        assert node["reason"] == "scratch full"
        assert cluster.job(job_id)["state"] == "RUNNING"
        # An administrator resumes the first node: its fault is gone, it stays in service.
        cluster.call("PATCH", "/v1/nodes", body={"nodes": [first], "state": "resume"})
        time.sleep(2.5)  # two more probes
        assert _nodes(cluster)[first]["state"] == "idle"
        cluster.call("DELETE", f"/v1/jobs/{job_id}")
        cluster.wait([job_id])
    for name in ("controller", "agent-node1", "agent-node2"):
        assert "Traceback" not in cluster.log_tail(name, 200)
