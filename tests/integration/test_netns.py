"""Agents on other hosts: each agent in its own network namespace (``ip netns``), joined to the
controller over TCP through a veth pair with its node's own credential. A cut link and a
flapping one: nothing runs twice, nothing is lost.

Needs root and ``ip`` (iproute2); skipped with the reason otherwise.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from live_env import env
from netns_env import NEEDS_NETNS, hosts, netns_cluster, until

pytestmark = NEEDS_NETNS


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def test_a_node_cut_off_stops_its_job_before_it_runs_elsewhere(
    tmp_path: Path, workdir: Path
) -> None:
    starts = workdir / "starts"
    with hosts(2) as nodes, netns_cluster(tmp_path, nodes) as cluster:
        [job_id] = cluster.submit(
            command=["sh", "-c", f'echo "$SLURMD_NODENAME $$" >> {starts}; exec sleep 600'],
            gpus_per_task=8,
            workdir=str(workdir),
            environment=env(),
            output="/dev/null",
        )
        [job] = cluster.wait([job_id], ("RUNNING",), final=False)
        first = next(h for h in nodes if h.node == job["nodelist"])
        until("the task started", lambda: starts.exists() and starts.read_text())
        [(node, pid)] = [line.split() for line in starts.read_text().splitlines()]
        assert node == first.node and _alive(int(pid))
        first.cut()
        # The job runs again on the other node, and by then its first run is gone.
        until("the job restarted", lambda: len(starts.read_text().splitlines()) == 2)
        second = starts.read_text().splitlines()[1].split()
        assert second[0] != first.node
        assert not _alive(int(pid)), "the cut-off node still runs the job"
        job = cluster.job(job_id)
        assert (job["state"], job["restarts"]) == ("RUNNING", 1)
        nodes = {n["name"]: n for n in cluster.call("GET", "/v1/nodes")}
        assert nodes[first.node]["state"] == "down"
        # The link comes back: the agent registers again, its lost run is not run again.
        first.heal()
        until(
            "the node is back",
            lambda: (
                next(n for n in cluster.call("GET", "/v1/nodes") if n["name"] == first.node)[
                    "state"
                ]
                == "idle"
            ),
        )
        time.sleep(1)
        assert len(starts.read_text().splitlines()) == 2
        assert cluster.job(job_id)["restarts"] == 1
        assert _alive(int(second[1]))
        cluster.call("DELETE", f"/v1/jobs/{job_id}")
        cluster.wait([job_id])


def test_a_flapping_link_loses_nothing_and_runs_nothing_twice(
    tmp_path: Path, workdir: Path
) -> None:
    done = workdir / "done"
    with hosts(2) as nodes, netns_cluster(tmp_path, nodes) as cluster:
        ids: list[int] = []
        for _ in range(12):
            ids += cluster.submit(
                command=["sh", "-c", f"sleep 1; echo $SLURM_JOB_ID >> {done}"],
                gpus_per_task=4,
                workdir=str(workdir),
                environment=env(),
                output="/dev/null",
            )
        # Both links go down and up again, each cut shorter than the agents' lease.
        for _ in range(6):
            for host in nodes:
                host.cut()
            time.sleep(0.7)
            for host in nodes:
                host.heal()
            time.sleep(0.7)
        jobs = cluster.wait(ids, timeout=90)
        assert [j["state"] for j in jobs] == ["COMPLETED"] * len(ids)
        assert all(j["restarts"] == 0 for j in jobs)
        lines = done.read_text().split()
        assert sorted(int(x) for x in lines) == sorted(ids)  # each ran exactly once
        assert {n["state"] for n in cluster.call("GET", "/v1/nodes")} == {"idle"}
