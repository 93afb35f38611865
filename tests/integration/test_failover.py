"""A leader and a standby on one PostgreSQL store, agents and clients given both: the leader
is killed (kill -9) with jobs running and submissions coming, the standby takes over within
5 s, the jobs run once each, a submission retried with its key is not doubled; a leader
that loses its database session is deposed, steps down and comes back as a standby."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest

from phalanx.client.address import ControllerAddress
from phalanx.client.wirecall import WireCaller
from phalanx.server.hacluster import HACluster
from phalanx.server.localcluster import cluster_yaml
from phalanx.testing.postgres import TempPostgres

TAKEOVER_S = 5.0


@pytest.fixture
def ha(postgres: TempPostgres, tmp_path: Path) -> Iterator[HACluster]:
    tmp_path.chmod(0o755)
    with HACluster(tmp_path / "ha", postgres.new_database(), cluster_yaml(2, 0, cpus=4)) as ha:
        ha.start(0)
        ha.wait_role(0, "leader")
        ha.start(1)
        ha.wait_role(1, "standby")
        for node in ("node1", "node2"):
            ha.start_agent(node, "--gpus", "0", "--cpus", "4", "--memory", "65536")
        ha.wait_agents(2)
        yield ha
        for name in ("controller0", "controller1", "agent-node1", "agent-node2"):
            assert "Traceback" not in ha.tail(name, 400), ha.tail(name, 400)


def _job(out: Path, seconds: float) -> dict[str, object]:
    return {"command": ["bash", "-c", f"echo $SLURM_JOB_ID >> {out}; sleep {seconds}"]}


def _scontrol_ping(ha: HACluster) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PHALANX_URL=ha.url_list, PHALANX_TOKEN="ha-token")
    return subprocess.run(
        [sys.executable, "-m", "phalanx.slurm.scontrol", "ping"],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=False,
    )


def _wait_done(ha: HACluster, ids: list[int], timeout: float = 60.0) -> dict[int, str]:
    caller = ha.caller()
    deadline = time.monotonic() + timeout
    while True:
        jobs = caller.call_ok("GET", "/v1/jobs", query={"all": True})["jobs"]
        states = {j["job_id"]: j["state"] for j in jobs if j["job_id"] in ids}
        if len(states) == len(ids) and all(
            s not in ("PENDING", "RUNNING") for s in states.values()
        ):
            return states
        assert time.monotonic() < deadline, states
        time.sleep(0.2)


def test_the_standby_takes_over_from_a_killed_leader_and_nothing_runs_twice(
    ha: HACluster, tmp_path: Path
) -> None:
    out = tmp_path / "ran.txt"
    caller = ha.caller()
    ids = []
    for i in range(6):
        answer = caller.call("POST", "/v1/jobs", body=_job(out, 3), idempotency_key=f"k{i}")
        ids += answer[1]["job_ids"][0]
    time.sleep(1.0)
    running = [j for j in caller.call_ok("GET", "/v1/jobs")["jobs"] if j["state"] == "RUNNING"]
    assert running, "jobs should be running when the leader dies"
    ha.kill(0)
    took = ha.wait_role(1, "leader", timeout=30)
    assert took <= TAKEOVER_S, f"takeover took {took:.1f} s"
    # The same request again, across the failover: the ids it got, not new jobs.
    again = caller.call("POST", "/v1/jobs", body=_job(out, 3), idempotency_key="k0")
    assert again == (201, {"job_ids": [[ids[0]]]})
    ids += caller.call("POST", "/v1/jobs", body=_job(out, 0), idempotency_key="k6")[1]["job_ids"][0]
    # scontrol ping asks each controller, as Slurm's does its primary and backup.
    ping = _scontrol_ping(ha)
    assert ping.returncode == 0
    assert ping.stdout.splitlines()[:2] == [
        "Slurmctld(primary) at 127.0.0.1 is DOWN",
        "Slurmctld(backup) at 127.0.0.1 is UP",
    ]
    ha.start(0)  # back, behind the new leader
    ha.wait_role(0, "standby")
    assert _scontrol_ping(ha).stdout.splitlines() == [
        "Slurmctld(primary) at 127.0.0.1 is UP",
        "Slurmctld(backup) at 127.0.0.1 is UP",
    ]
    states = _wait_done(ha, ids)
    assert set(states.values()) == {"COMPLETED"}, states
    started = out.read_text().split()
    assert sorted(map(int, started)) == sorted(ids)  # each job ran, and once


def test_a_leader_that_loses_its_database_session_steps_down(ha: HACluster, tmp_path: Path) -> None:
    with psycopg.connect(ha.db_url, autocommit=True) as admin:
        sessions = admin.execute(
            "SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND granted AND objid = 7167"
        ).fetchall()
        assert len(sessions) == 1
        admin.execute("SELECT pg_terminate_backend(%s)", (sessions[0][0],))
    took = ha.wait_role(1, "leader", timeout=30)
    assert took <= TAKEOVER_S
    # The old leader noticed, stepped down and started again as a standby.
    ha.wait_role(0, "standby", timeout=30)
    assert "deposed" in ha.tail("controller0", 100)
    out = tmp_path / "ran.txt"
    ids = ha.caller().call_ok("POST", "/v1/jobs", body=_job(out, 0))["job_ids"][0]
    assert _wait_done(ha, ids) == {ids[0]: "COMPLETED"}
    assert out.read_text().split() == [str(ids[0])]


def test_phalanx_up_with_peers_starts_a_standby_whose_agents_follow_the_leader(
    postgres: TempPostgres, tmp_path: Path
) -> None:
    """Two machines as two state directories: `phalanx up --peers` on each, one node each."""
    import os
    import signal
    import socket
    import subprocess
    import sys

    tmp_path.chmod(0o755)
    db = postgres.new_database()
    config = tmp_path / "cluster.yaml"
    config.write_text(cluster_yaml(2, 0, cpus=4))
    tokens = tmp_path / "tokens"
    user = __import__("pwd").getpwuid(os.geteuid()).pw_name
    tokens.write_text(f"tok {user}\n")
    agent_tokens = tmp_path / "agent-tokens"  # the same file on every controller's host
    agent_tokens.write_text("node1 a1-secret\nnode2 a2-secret\n")
    ports = []
    for _ in range(2):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            ports.append(s.getsockname()[1])
    urls = [f"http://127.0.0.1:{p}" for p in ports]
    states = [tmp_path / "host1", tmp_path / "host2"]

    def phalanx(i: int, *args: str) -> subprocess.CompletedProcess[str]:
        env = dict(os.environ, PHALANX_STATE_DIR=str(states[i]), PHALANX_DB=db)
        env.pop("PHALANX_URL", None)
        return subprocess.run(
            [sys.executable, "-m", "phalanx", *args],
            capture_output=True,
            text=True,
            env=env,
            timeout=120,
            check=False,
        )

    def up(i: int) -> subprocess.CompletedProcess[str]:
        return phalanx(
            i, "up", "--detach", "--config", str(config), "--port", str(ports[i]),
            "--tokens", str(tokens), "--agent-tokens", str(agent_tokens),
            "--agents", f"node{i + 1}", "--no-command-server",
            "--peers", urls[1 - i],
        )  # fmt: skip

    try:
        first = up(0)
        assert first.returncode == 0, first.stderr
        assert "role    leader" in first.stdout
        second = up(1)
        assert second.returncode == 0, second.stderr
        assert "role    standby" in second.stdout
        leader = int((states[0] / "controller.pid").read_text())
        os.kill(leader, signal.SIGKILL)
        caller = WireCaller(ControllerAddress(url=",".join(urls), token="tok"), timeout=30)
        out = tmp_path / "ran.txt"
        job = {"command": ["bash", "-c", f"echo $SLURM_NODEID >> {out}"], "nodes": "2"}
        # A request in flight to a dying leader may or may not have gone through: sbatch's
        # key makes the retry safe.
        status, answer = caller.call("POST", "/v1/jobs", body=job, idempotency_key="j1")
        assert status == 201, answer
        ids = answer["job_ids"][0]
        deadline = time.monotonic() + 60
        while caller.call_ok("GET", f"/v1/jobs/{ids[0]}")["state"] != "COMPLETED":
            assert time.monotonic() < deadline, caller.call_ok("GET", f"/v1/jobs/{ids[0]}")
            time.sleep(0.2)
        # Both nodes ran their task: node1's agent followed the new leader.
        assert sorted(out.read_text().split()) == ["0", "1"]
        assert caller.leader == urls[1]
    finally:
        for i in (0, 1):
            phalanx(i, "down")
    from phalanx.server.statedir import StateDir

    assert StateDir(states[0]).live_agents() == {} == StateDir(states[1]).live_agents()


def test_the_controllers_come_back_when_their_database_restarts(tmp_path: Path) -> None:
    """The database itself crashes and comes back (a restart, a failover of PostgreSQL's own
    replicas): the controllers lose their sessions, start again, wait for it, and one leads;
    the job that ran through it ran once."""
    from phalanx.testing.postgres import pg_bin_dir

    bin_dir = pg_bin_dir()
    if bin_dir is None:
        pytest.skip("PostgreSQL is not installed")
    own = TempPostgres(bin_dir, durable=False).start()  # its own: this test crashes it
    tmp_path.chmod(0o755)
    try:
        with HACluster(tmp_path / "ha", own.new_database(), cluster_yaml(1, 0, cpus=4)) as ha:
            ha.start(0)
            ha.wait_role(0, "leader")
            ha.start(1)
            ha.wait_role(1, "standby")
            ha.start_agent("node1", "--gpus", "0", "--cpus", "4", "--memory", "65536")
            ha.wait_agents(1)
            out = tmp_path / "ran.txt"
            caller = ha.caller()
            first = caller.call_ok("POST", "/v1/jobs", body=_job(out, 6))["job_ids"][0]
            time.sleep(1.0)
            own.restart(down_s=2.0)
            deadline = time.monotonic() + 60
            while ha.leader() is None:
                assert time.monotonic() < deadline, ha.tail("controller0") + ha.tail("controller1")
                time.sleep(0.2)
            second = caller.call("POST", "/v1/jobs", body=_job(out, 0), idempotency_key="after")
            assert second[0] == 201, second
            ids = first + second[1]["job_ids"][0]
            assert set(_wait_done(ha, ids).values()) == {"COMPLETED"}
            assert sorted(map(int, out.read_text().split())) == sorted(ids)
            # The other one starts again too, once it sees its sessions gone, and stands by.
            deadline = time.monotonic() + 60
            while sorted(str(ha.role(i)) for i in (0, 1)) != ["leader", "standby"]:
                assert time.monotonic() < deadline, ha.tail("controller0") + ha.tail("controller1")
                time.sleep(0.2)
    finally:
        own.stop()
