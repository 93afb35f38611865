"""A leader and a standby on one PostgreSQL store, agents and clients given both: the leader
is killed (kill -9) with jobs running and submissions coming, the standby takes over within
5 s, the jobs run once each, a submission retried with its key is not doubled; a leader
that loses its database session is deposed, steps down and comes back as a standby."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest

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
    ha.start(0)  # back, behind the new leader
    ha.wait_role(0, "standby")
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
