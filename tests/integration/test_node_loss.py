"""An agent that stops answering: its node goes down, its jobs are requeued elsewhere."""

from __future__ import annotations

import contextlib
import os
import signal
import time
from pathlib import Path

from live_env import env

from phalanx.server.localcluster import LocalCluster, cluster_yaml


def test_a_silent_agent_takes_its_node_down_and_its_job_is_requeued(
    tmp_path: Path, workdir: Path
) -> None:
    pids = workdir / "pids"
    state = tmp_path / "state"
    with LocalCluster(state, cluster_yaml(2, 8), extra_args=("--dead-after", "4")) as cluster:
        [job_id] = cluster.submit(
            command=["sh", "-c", f"echo $$ >> {pids}; echo $SLURMD_NODENAME; sleep 60"],
            gpus_per_task=8,
            workdir=str(workdir),
            environment=env(),
            output="o-%j.txt",
        )
        [job] = cluster.wait([job_id], ("RUNNING",), final=False)
        first = job["nodelist"]
        cluster.agents[first].send_signal(signal.SIGKILL)
        cluster.agents[first].wait()
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            job = cluster.job(job_id)
            if job["restarts"] == 1 and job["state"] == "RUNNING":
                break
            time.sleep(0.1)
        assert (job["restarts"], job["state"]) == (1, "RUNNING"), job
        assert job["nodelist"] != first
        nodes = {n["name"]: n for n in cluster.call("GET", "/v1/nodes")}
        assert nodes[first]["state"] == "down" and not nodes[first]["agent"]
        # The agent comes back: the node is up again.
        cluster.start_agent(first)
        cluster.wait_agents()
        assert {n["state"] for n in cluster.call("GET", "/v1/nodes")} <= {"idle", "allocated"}
        cluster.call("DELETE", f"/v1/jobs/{job_id}")
        cluster.wait([job_id])
    for pid in pids.read_text().split():  # the task the dead agent left behind
        with contextlib.suppress(ProcessLookupError):
            os.kill(int(pid), signal.SIGKILL)
