"""What ``scontrol hold|release|requeue`` and ``scancel --signal`` do over HTTP: the owner
or an administrator changes a job; the answer lists the jobs changed."""

from __future__ import annotations

from routes_scene import ROOT, USER, Api


def test_hold_and_release(api: Api) -> None:
    api.submit(gpus_per_task=8, nodes="2")  # the cluster is full: the next one waits
    [job] = api.submit(gpus_per_task=1)
    r = api.client.post(f"/v1/jobs/{job}/hold", headers=USER)
    assert r.status_code == 200 and r.json() == {"changed": [job]}
    api.run()
    assert api.client.get(f"/v1/jobs/{job}", headers=USER).json()["reason"] == "JobHeldUser"
    r = api.client.post(f"/v1/jobs/{job}/release", headers=USER)
    assert r.status_code == 200 and r.json() == {"changed": [job]}
    api.run()
    assert api.client.get(f"/v1/jobs/{job}", headers=USER).json()["reason"] != "JobHeldUser"


def test_another_users_job_is_not_changed(api: Api) -> None:
    [theirs] = api.submit(headers=ROOT, hold=True)
    for action in ("hold", "release", "requeue"):
        r = api.client.post(f"/v1/jobs/{theirs}/{action}", headers=USER)
        assert r.status_code == 403, action
        assert "root" in r.json()["error"]
    r = api.client.post(f"/v1/jobs/{theirs}/signal", json={"signal": 10}, headers=USER)
    assert r.status_code == 403
    assert api.client.post("/v1/jobs/999/hold", headers=USER).status_code == 404


def test_requeue_of_a_running_job_puts_it_back_in_the_queue(api: Api) -> None:
    [job] = api.submit(gpus_per_task=1)
    assert api.state(job) == "RUNNING"
    r = api.client.post(f"/v1/jobs/{job}/requeue", headers=USER)
    assert r.status_code == 200 and r.json() == {"changed": [job]}
    assert type(api.journal.events[-1]).__name__ == "Requeue"  # journaled before answered
    r = api.client.post(f"/v1/jobs/{job}/requeue", headers=ROOT)
    assert r.status_code == 200
    [held] = api.submit(hold=True)
    r = api.client.post(f"/v1/jobs/{held}/requeue", headers=USER)  # not running: nothing
    assert r.status_code == 200 and r.json() == {"changed": []}


def test_a_signal_reaches_running_jobs_only(api: Api) -> None:
    api.agents()
    [running] = api.submit(gpus_per_task=1)
    [held] = api.submit(hold=True)
    node = api.controller.cluster.nodes[api.controller.job(running).alloc.nodes[0]].name  # type: ignore[union-attr]
    api.commands(node)
    body = {"signal": 10, "target": "all"}
    r = api.client.post(f"/v1/jobs/{running}/signal", json=body, headers=USER)
    assert r.status_code == 200 and r.json() == {"changed": [running]}
    [sent] = [c for c in api.commands(node) if c["kind"] == "signal"]
    assert (sent["job_id"], sent["signal"]) == (running, 10)
    r = api.client.post(f"/v1/jobs/{held}/signal", json=body, headers=USER)
    assert r.status_code == 200 and r.json() == {"changed": []}
    r = api.client.post(f"/v1/jobs/{running}/signal", json={"signal": 0}, headers=USER)
    assert r.status_code == 422 and r.json()["field"] == "signal"
