"""The live cluster end to end: controller and two agents as processes, real tasks."""

from __future__ import annotations

import http.client
import itertools
import json
import socket
import sys
import time
from pathlib import Path

from live_env import env

from phalanx.client.wirecall import ApiError
from phalanx.server.localcluster import LocalCluster

PY = sys.executable


def test_a_two_node_gang_gets_slurm_and_torch_variables(
    cluster: LocalCluster, workdir: Path
) -> None:
    code = (
        "import os; v = os.environ; print(*(v.get(k, '-') for k in ("
        "'SLURM_JOB_ID', 'SLURM_PROCID', 'SLURM_LOCALID', 'SLURM_NODEID', 'SLURM_NTASKS', "
        "'SLURM_JOB_NUM_NODES', 'SLURM_JOB_NODELIST', 'CUDA_VISIBLE_DEVICES', 'WORLD_SIZE', "
        "'RANK', 'LOCAL_RANK', 'MASTER_ADDR', 'MASTER_PORT', 'SLURMD_NODENAME')))"
    )
    [job_id] = cluster.submit(
        command=[PY, "-c", code],
        nodes="2",
        ntasks_per_node=2,
        gpus_per_task=2,
        workdir=str(workdir),
        output="out-%j-%t.txt",
        environment=env(),
        name="gang",
    )
    [job] = cluster.wait([job_id])
    assert job["state"] == "COMPLETED", job
    assert job["nodelist"] == "node[1-2]"
    rows = sorted((workdir / f"out-{job_id}-{rank}.txt").read_text().split() for rank in range(4))
    port = str(15000 + job_id % 10000)
    for rank, row in enumerate(rows):
        (
            jid,
            procid,
            localid,
            nodeid,
            ntasks,
            nnodes,
            nodelist,
            gpus,
            world,
            r,
            lr,
            addr,
            mport,
            host,
        ) = row
        assert (jid, procid, ntasks, nnodes, nodelist, world) == (
            str(job_id),
            str(rank),
            "4",
            "2",
            "node[1-2]",
            "4",
        )
        assert (localid, lr, r) == (str(rank % 2), str(rank % 2), str(rank))
        assert nodeid == str(rank // 2) and host == f"node{rank // 2 + 1}"
        assert len(gpus.split(",")) == 4 and addr == "127.0.0.1" and mport == port


def test_exit_codes_and_signals_are_recorded(cluster: LocalCluster, workdir: Path) -> None:
    [fail] = cluster.submit(command=["sh", "-c", "exit 3"], workdir=str(workdir), environment=env())
    [killed] = cluster.submit(
        command=["sh", "-c", "kill -9 $$"], workdir=str(workdir), environment=env()
    )
    a, b = cluster.wait([fail, killed])
    assert (a["state"], a["exit_code"], a["signal"]) == ("FAILED", 3, 0)
    assert (b["state"], b["signal"]) == ("FAILED", 9)


def test_a_job_past_its_time_limit_ends_as_timeout(cluster: LocalCluster, workdir: Path) -> None:
    [job_id] = cluster.submit(
        command=["sleep", "60"], time="0:02", workdir=str(workdir), environment=env()
    )
    [job] = cluster.wait([job_id], timeout=30)
    assert job["state"] == "TIMEOUT"
    assert job["signal"] == 15  # SIGTERM at the limit ended it, before the kill wait


def test_an_array_with_a_throttle_runs_one_task_at_a_time(
    cluster: LocalCluster, workdir: Path
) -> None:
    ids = cluster.submit(
        command=["sh", "-c", "echo $SLURM_ARRAY_JOB_ID $SLURM_ARRAY_TASK_ID; sleep 0.3"],
        array="0-3%1",
        workdir=str(workdir),
        environment=env(),
    )
    assert len(ids) == 4
    jobs = cluster.wait(ids, timeout=30)
    assert [j["state"] for j in jobs] == ["COMPLETED"] * 4
    spans = sorted((j["start"], j["end"]) for j in jobs)
    for (_, end), (start, _) in itertools.pairwise(spans):
        assert start >= end  # the %1 throttle: never two at once
    for task, job_id in enumerate(ids):
        text = (workdir / f"slurm-{ids[0]}_{task}.out").read_text().split()
        assert text == [str(ids[0]), str(task)], job_id


def test_dependencies_wait_for_their_job(cluster: LocalCluster, workdir: Path) -> None:
    [first] = cluster.submit(command=["sleep", "1"], workdir=str(workdir), environment=env())
    [second] = cluster.submit(
        command=["true"], dependency=f"afterok:{first}", workdir=str(workdir), environment=env()
    )
    assert cluster.job(second)["reason"] == "Dependency"
    a, b = cluster.wait([first, second])
    assert b["state"] == "COMPLETED" and b["start"] >= a["end"]


def test_a_higher_qos_preempts_and_the_victim_is_requeued(
    cluster: LocalCluster, workdir: Path
) -> None:
    [victim] = cluster.submit(
        command=["sleep", "120"],
        nodes="2",
        gpus_per_task=8,
        workdir=str(workdir),
        environment=env(),
    )
    cluster.wait([victim], ("RUNNING",), final=False)
    [urgent] = cluster.submit(
        command=["true"], gpus_per_task=8, qos="high", workdir=str(workdir), environment=env()
    )
    [done] = cluster.wait([urgent], timeout=60)
    assert done["state"] == "COMPLETED"
    again = cluster.wait([victim], ("RUNNING",), final=False, timeout=30)[0]
    assert again["restarts"] == 1 and again["state"] == "RUNNING"
    assert cluster.call("DELETE", f"/v1/jobs/{victim}")["cancelled"] == [victim]
    assert cluster.wait([victim])[0]["state"] == "CANCELLED"


def test_cancel_ends_a_running_job(cluster: LocalCluster, workdir: Path) -> None:
    [job_id] = cluster.submit(command=["sleep", "60"], workdir=str(workdir), environment=env())
    cluster.wait([job_id], ("RUNNING",), final=False)
    cluster.call("DELETE", f"/v1/jobs/{job_id}")
    [job] = cluster.wait([job_id])
    assert job["state"] == "CANCELLED"
    assert any(r["job_id"] == job_id for r in cluster.call("GET", "/v1/accounting"))


def test_bad_requests_are_refused_with_the_field_named(cluster: LocalCluster) -> None:
    cases = [
        ({"command": ["true"], "time": "soon"}, "time"),
        ({"command": ["true"], "partition": "nope"}, "partition"),
        ({"command": ["true"], "gpus_per_task": 9}, "resources"),
        ({"command": []}, "command"),
        ({"command": ["true"], "mem": "lots"}, "mem"),
        ({"command": ["true"], "array": "5-1"}, "array"),
    ]
    for body, field in cases:
        try:
            cluster.call("POST", "/v1/jobs", body=body)
        except ApiError as exc:
            assert exc.status == 422 and exc.field is not None and field in exc.field, (body, exc)
        else:
            raise AssertionError(f"{body} was accepted")
    status, _ = cluster.caller.call("POST", "/v1/jobs", body="not json at all")
    assert status == 422
    assert cluster.call("GET", "/v1/ping")["ok"]  # still answering


def _tcp(
    cluster: LocalCluster, method: str, path: str, token: str | None, body: object = None
) -> tuple[int, object]:
    port = int((cluster.state_dir / "controller.port").read_text())
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    headers = {"Content-Type": "application/json"}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    conn.request(method, path, body=json.dumps(body) if body is not None else None, headers=headers)
    try:
        resp = conn.getresponse()
        return resp.status, json.loads(resp.read() or b"null")
    finally:
        conn.close()


def test_users_over_tcp_need_a_token_and_act_only_on_their_jobs(cluster: LocalCluster) -> None:
    assert _tcp(cluster, "GET", "/v1/jobs", None)[0] == 401
    assert _tcp(cluster, "GET", "/v1/jobs", "wrong")[0] == 401
    # root's job (over the socket) cannot be cancelled by nobody ...
    [mine] = cluster.submit(command=["sleep", "30"], workdir="/tmp", environment=env())
    status, answer = _tcp(cluster, "DELETE", f"/v1/jobs/{mine}", "tok-nobody")
    assert status == 403 and "root" in str(answer)
    # ... nobody's job runs as nobody, and root (an administrator) may cancel it.
    status, answer = _tcp(
        cluster,
        "POST",
        "/v1/jobs",
        "tok-nobody",
        {
            "command": ["sh", "-c", "id -u > /tmp/phalanx-test-uid-$SLURM_JOB_ID"],
            "workdir": "/tmp",
            "output": "/dev/null",
            "environment": env(),
        },
    )
    assert status == 201
    theirs = answer["job_ids"][0][0]  # type: ignore[index]
    [job] = cluster.wait([theirs])
    assert job["user"] == "nobody" and job["state"] == "COMPLETED"
    uid = Path(f"/tmp/phalanx-test-uid-{theirs}")
    assert uid.read_text().strip() == str(__import__("pwd").getpwnam("nobody").pw_uid)
    uid.unlink()
    cluster.call("DELETE", f"/v1/jobs/{mine}")
    assert cluster.wait([mine])[0]["state"] == "CANCELLED"


def test_agents_endpoints_are_for_administrators(cluster: LocalCluster) -> None:
    status, _ = _tcp(
        cluster,
        "POST",
        "/v1/agents/register",
        "tok-nobody",
        {"node": "node1", "boot_id": "x", "cpus": 1, "memory_mb": 1, "gpus": 0},
    )
    assert status == 403


def test_metrics_in_prometheus_format(cluster: LocalCluster) -> None:
    sock = socket.socket(socket.AF_UNIX)
    sock.connect(str(cluster.socket))
    sock.sendall(b"GET /metrics HTTP/1.0\r\n\r\n")
    data = b""
    while chunk := sock.recv(65536):
        data += chunk
    sock.close()
    text = data.decode()
    for name in (
        'phalanx_pending_jobs{reason="Priority"}',
        "phalanx_running_jobs",
        "phalanx_gpus_allocated",
        "phalanx_eta_sched",
        "phalanx_theta_overhead",
        "phalanx_scheduling_pass_seconds_bucket",
        "phalanx_submissions_total",
    ):
        assert f"\n{name}" in text, name
    line = next(x for x in text.splitlines() if x.startswith("phalanx_eta_sched "))
    eta = float(line.split()[1])
    assert 0 < eta <= 1


def test_names_paths_and_commands_are_data_never_shell(
    cluster: LocalCluster, workdir: Path
) -> None:
    [job_id] = cluster.submit(
        command=["echo", "$(touch pwned)", ";", "`id`"],
        name="$(touch pwned2)",
        output="weird; $HOME %x.out",
        workdir=str(workdir),
        environment=env(),
    )
    [job] = cluster.wait([job_id])
    assert job["state"] == "COMPLETED" and job["name"] == "$(touch pwned2)"
    out = workdir / "weird; $HOME $(touch pwned2).out"
    assert out.read_text() == "$(touch pwned) ; `id`\n"
    assert not (workdir / "pwned").exists() and not (workdir / "pwned2").exists()


def test_hold_release_requeue_and_update_a_job(cluster: LocalCluster, workdir: Path) -> None:
    [held] = cluster.submit(command=["true"], hold=True, workdir=str(workdir), environment=env())
    job = cluster.job(held)
    assert (job["state"], job["reason"]) == ("PENDING", "JobHeldUser")
    cluster.call("POST", f"/v1/jobs/{held}/release")
    assert cluster.wait([held])[0]["state"] == "COMPLETED"
    # Requeue a finished job: the same id runs again, its restart count goes up.
    assert cluster.call("POST", f"/v1/jobs/{held}/requeue")["changed"] == [held]
    again = cluster.wait([held])[0]
    assert (again["state"], again["restarts"]) == ("COMPLETED", 1)
    # A running one: killed and back to PENDING, then it runs again.
    [running] = cluster.submit(
        command=["sleep", "60"], time="10:00", workdir=str(workdir), environment=env()
    )
    cluster.wait([running], ("RUNNING",), final=False)
    cluster.call("PATCH", f"/v1/jobs/{running}", body={"time": "0:03"})  # lower: allowed
    assert cluster.job(running)["time_limit_ms"] == 3000
    assert cluster.wait([running], timeout=30)[0]["state"] == "TIMEOUT"
    [other] = cluster.submit(command=["sleep", "60"], workdir=str(workdir), environment=env())
    cluster.wait([other], ("RUNNING",), final=False)
    cluster.call("POST", f"/v1/jobs/{other}/requeue")
    deadline = time.monotonic() + 30
    while (job := cluster.job(other))["restarts"] == 0 and time.monotonic() < deadline:
        time.sleep(0.05)
    job = cluster.wait([other], ("RUNNING",), final=False, timeout=30)[0]
    assert (job["state"], job["restarts"]) == ("RUNNING", 1)
    cluster.call("DELETE", f"/v1/jobs/{other}")
    # Only administrators set priorities; nobody's token is not root's.
    status, answer = _tcp(cluster, "PATCH", f"/v1/jobs/{other}", "tok-nobody", {"priority": 5})
    assert status in (403, 404) or "administrator" in str(answer)
    assert cluster.call("GET", "/v1/fairshare")[0]["account"] == "root"


def test_a_batch_job_runs_its_script_once_and_steps_over_the_allocation(
    cluster: LocalCluster, workdir: Path
) -> None:
    script = f'echo "$SLURM_NTASKS $SLURM_PROCID $SLURMD_NODENAME" >> {workdir}/batch.txt; sleep 30'
    [job_id] = cluster.submit(
        command=["sh", "-c", script],
        batch=True,
        nodes="2",
        ntasks_per_node=2,
        gpus_per_task=1,
        workdir=str(workdir),
        environment=env(),
    )
    cluster.wait([job_id], ("RUNNING",), final=False)
    code = (
        "import os, sys; v = os.environ; sys.stdout.write(' '.join(v[k] for k in ("
        "'SLURM_STEP_ID', 'SLURM_PROCID', 'SLURM_LOCALID', 'SLURM_NODEID', 'SLURM_NTASKS', "
        "'SLURMD_NODENAME', 'SLURM_STEP_NODELIST')) + '\\n')"
    )
    step = cluster.call(
        "POST",
        f"/v1/jobs/{job_id}/steps",
        body={"command": [sys.executable, "-c", code], "output": "step-%j.%s-%t.out"},
    )
    assert (step["step_id"], step["tasks"], step["state"]) == (0, 4, "RUNNING")
    done = cluster.call("GET", f"/v1/jobs/{job_id}/steps/0", query={"wait": 30})
    assert (done["state"], done["exit_code"]) == ("COMPLETED", 0)
    rows = sorted((workdir / f"step-{job_id}.%s-{t}.out").read_text().split() for t in range(4))
    assert rows == [
        ["0", "0", "0", "0", "4", "node1", "node[1-2]"],
        ["0", "1", "1", "0", "4", "node1", "node[1-2]"],
        ["0", "2", "0", "1", "4", "node2", "node[1-2]"],
        ["0", "3", "1", "1", "4", "node2", "node[1-2]"],
    ]
    # A failing step of two tasks (one per node, as srun -n 2 spreads them); the job goes on.
    failing = cluster.call(
        "POST",
        f"/v1/jobs/{job_id}/steps",
        body={
            "command": ["sh", "-c", "exit $((SLURM_PROCID + 4))"],
            "ntasks": 2,
            "output": "/dev/null",
        },
    )
    assert failing["step_id"] == 1 and failing["nodes"] == ["node1", "node2"]
    done = cluster.call("GET", f"/v1/jobs/{job_id}/steps/1", query={"wait": 30})
    assert (done["state"], done["exit_code"]) == ("FAILED", 5)
    assert (workdir / "batch.txt").read_text().split() == ["4", "0", "node1"]  # once
    # Cancelling the job ends a step still running.
    cluster.call("POST", f"/v1/jobs/{job_id}/steps", body={"command": ["sleep", "60"]})
    cluster.call("DELETE", f"/v1/jobs/{job_id}")
    done = cluster.call("GET", f"/v1/jobs/{job_id}/steps/2", query={"wait": 30})
    assert done["state"] in ("CANCELLED", "FAILED") and done["signal"] == 9
    assert cluster.wait([job_id])[0]["state"] == "CANCELLED"
