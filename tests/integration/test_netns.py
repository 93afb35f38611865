"""Agents on other hosts: each agent in its own network namespace (``ip netns``), joined to the
controller over TCP through a veth pair with its node's own credential. A cut link and a
flapping one: nothing runs twice, nothing is lost.

Needs root and ``ip`` (iproute2); skipped with the reason otherwise.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from live_env import env

from phalanx.server.localcluster import LocalCluster, cluster_yaml

pytestmark = pytest.mark.skipif(
    os.geteuid() != 0 or shutil.which("ip") is None, reason="needs root and ip (iproute2)"
)

DEAD_AFTER_S = 4  # the agents' lease is half of it


@dataclass
class Host:
    """A node's agent in its own network namespace, at ``address``, reaching the
    controller at ``gateway`` through the veth ``link`` (the controller's end)."""

    node: str
    netns: str
    link: str
    address: str
    gateway: str
    agent: subprocess.Popen[bytes] | None = None

    def cut(self) -> None:
        _ip("link", "set", self.link, "down")

    def heal(self) -> None:
        _ip("link", "set", self.link, "up")


def _ip(*args: str, netns: str | None = None) -> None:
    prefix = ["ip", "netns", "exec", netns, "ip"] if netns else ["ip"]
    subprocess.run([*prefix, *args], check=True, capture_output=True)


@contextlib.contextmanager
def _hosts(count: int) -> Iterator[list[Host]]:
    tag = f"{os.getpid() % 100000}"
    hosts = []
    try:
        for i in range(1, count + 1):
            host = Host(
                f"node{i}",
                f"phx{tag}n{i}",
                f"phx{tag}h{i}",
                f"10.231.{i}.2",
                f"10.231.{i}.1",
            )
            hosts.append(host)
            peer = f"phx{tag}c{i}"
            _ip("netns", "add", host.netns)
            _ip("link", "add", host.link, "type", "veth", "peer", "name", peer)
            _ip("link", "set", peer, "netns", host.netns)
            _ip("addr", "add", f"{host.gateway}/24", "dev", host.link)
            _ip("link", "set", host.link, "up")
            _ip("addr", "add", f"{host.address}/24", "dev", peer, netns=host.netns)
            _ip("link", "set", peer, "up", netns=host.netns)
            _ip("link", "set", "lo", "up", netns=host.netns)
        yield hosts
    finally:
        for host in hosts:
            if host.agent is not None and host.agent.poll() is None:
                host.agent.terminate()  # an agent told to stop kills its tasks first
                try:
                    host.agent.wait(timeout=15)
                except subprocess.TimeoutExpired:
                    host.agent.kill()
                    host.agent.wait()
            with contextlib.suppress(subprocess.CalledProcessError):
                _ip("link", "del", host.link)
            with contextlib.suppress(subprocess.CalledProcessError):
                _ip("netns", "del", host.netns)


@contextlib.contextmanager
def _cluster(tmp_path: Path, hosts: list[Host]) -> Iterator[LocalCluster]:
    tokens = tmp_path / "agent-tokens"
    tokens.write_text("".join(f"{h.node} token-{h.node}\n" for h in hosts))
    cluster = LocalCluster(
        tmp_path / "state",
        cluster_yaml(len(hosts), 8),
        extra_args=(
            "--host",
            "0.0.0.0",
            "--agent-tokens",
            str(tokens),
            "--dead-after",
            str(DEAD_AFTER_S),
        ),
    )
    try:
        cluster.start_controller()
        port = int((cluster.state_dir / "controller.port").read_text())
        for host in hosts:
            secret = tmp_path / f"{host.node}.token"
            secret.write_text(f"token-{host.node}\n")
            argv = [
                *("ip", "netns", "exec", host.netns, sys.executable, "-m", "phalanx.agent"),
                *("--controller", f"http://{host.gateway}:{port}", "--node", host.node),
                *("--token-file", str(secret), "--address", host.address),
                *("--gpus", "8", "--gpu-model", "A100", "--cpus", "32", "--memory", "65536"),
            ]
            with open(cluster.logs / f"agent-{host.node}.log", "ab") as out:
                host.agent = subprocess.Popen(
                    argv, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT
                )
        _until(
            "the agents registered",
            lambda: all(n["agent"] for n in cluster.call("GET", "/v1/nodes")),
        )
        yield cluster
    finally:
        cluster.stop()
    for name in ("controller", *(f"agent-{h.node}" for h in hosts)):
        assert "Traceback" not in cluster.log_tail(name, 400), name


def _until(what: str, check: Any, timeout: float = 40.0) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = check()
        if found:
            return found
        time.sleep(0.1)
    raise AssertionError(f"{what}: not within {timeout} s")


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
    with _hosts(2) as hosts, _cluster(tmp_path, hosts) as cluster:
        [job_id] = cluster.submit(
            command=["sh", "-c", f'echo "$SLURMD_NODENAME $$" >> {starts}; exec sleep 600'],
            gpus_per_task=8,
            workdir=str(workdir),
            environment=env(),
            output="/dev/null",
        )
        [job] = cluster.wait([job_id], ("RUNNING",), final=False)
        first = next(h for h in hosts if h.node == job["nodelist"])
        _until("the task started", lambda: starts.exists() and starts.read_text())
        [(node, pid)] = [line.split() for line in starts.read_text().splitlines()]
        assert node == first.node and _alive(int(pid))
        first.cut()
        # The job runs again on the other node, and by then its first run is gone.
        _until("the job restarted", lambda: len(starts.read_text().splitlines()) == 2)
        second = starts.read_text().splitlines()[1].split()
        assert second[0] != first.node
        assert not _alive(int(pid)), "the cut-off node still runs the job"
        job = cluster.job(job_id)
        assert (job["state"], job["restarts"]) == ("RUNNING", 1)
        nodes = {n["name"]: n for n in cluster.call("GET", "/v1/nodes")}
        assert nodes[first.node]["state"] == "down"
        # The link comes back: the agent registers again, its lost run is not run again.
        first.heal()
        _until(
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
    with _hosts(2) as hosts, _cluster(tmp_path, hosts) as cluster:
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
            for host in hosts:
                host.cut()
            time.sleep(0.7)
            for host in hosts:
                host.heal()
            time.sleep(0.7)
        jobs = cluster.wait(ids, timeout=90)
        assert [j["state"] for j in jobs] == ["COMPLETED"] * len(ids)
        assert all(j["restarts"] == 0 for j in jobs)
        lines = done.read_text().split()
        assert sorted(int(x) for x in lines) == sorted(ids)  # each ran exactly once
        assert {n["state"] for n in cluster.call("GET", "/v1/nodes")} == {"idle"}
