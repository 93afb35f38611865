"""Job steps over HTTP (``srun`` in an allocation): the request reaches the agents as the
step's tasks; ownership, state and size are checked before anything starts."""

from __future__ import annotations

from routes_scene import ROOT, USER, Api


def _running(api: Api, **fields: object) -> tuple[int, str]:
    """A running job of ``nobody`` on one node, agents everywhere: its id and node."""
    api.agents()
    [job] = api.submit(gpus_per_task=8, **fields)
    alloc = api.controller.job(job).alloc
    assert alloc is not None
    node = api.controller.cluster.nodes[alloc.nodes[0]].name
    api.commands(node)  # the batch launch, taken
    return job, node


def test_a_step_starts_on_the_jobs_node_as_asked(api: Api) -> None:
    job, node = _running(api)
    body = {
        "command": ["/bin/hostname", "-s"],
        "ntasks": 2,
        "environment": {"STEP_VAR": "x"},
        "workdir": "/tmp",
    }
    r = api.client.post(f"/v1/jobs/{job}/steps", json=body, headers=USER)
    assert r.status_code == 201, r.text
    info = r.json()
    assert (info["job_id"], info["step_id"], info["state"]) == (job, 0, "RUNNING")
    assert (info["tasks"], info["nodes"], info["name"]) == (2, [node], "hostname")
    [launch] = api.commands(node)
    assert launch["kind"] == "launch" and launch["job_id"] == job
    assert [t["argv"] for t in launch["tasks"]] == [["/bin/hostname", "-s"]] * 2
    assert {t["cwd"] for t in launch["tasks"]} == {"/tmp"}
    assert all(t["env"]["STEP_VAR"] == "x" for t in launch["tasks"])

    shown = api.client.get(f"/v1/jobs/{job}/steps/0", headers=USER)
    assert shown.status_code == 200 and shown.json() == info
    listed = api.client.get("/v1/steps", params={"ids": str(job)}, headers=USER)
    assert listed.json() == {"steps": [info]}
    assert api.client.get("/v1/steps", params={"ids": "999"}, headers=USER).json() == {"steps": []}


def test_a_step_without_options_takes_the_jobs_environment_and_directory(api: Api) -> None:
    job, node = _running(api, environment={"JOB_VAR": "j"}, workdir="/var")
    r = api.client.post(f"/v1/jobs/{job}/steps", json={"command": ["true"]}, headers=USER)
    assert r.status_code == 201, r.text
    [launch] = api.commands(node)
    assert {t["cwd"] for t in launch["tasks"]} == {"/var"}
    assert all(t["env"]["JOB_VAR"] == "j" for t in launch["tasks"])


def test_steps_are_refused_with_the_reason(api: Api) -> None:
    job, _ = _running(api)
    r = api.client.post(f"/v1/jobs/{job}/steps", json={"command": ["true"]}, headers=ROOT)
    assert r.status_code == 201  # an administrator may
    theirs = api.submit(headers=ROOT, gpus_per_task=1)[0]
    r = api.client.post(f"/v1/jobs/{theirs}/steps", json={"command": ["true"]}, headers=USER)
    assert r.status_code == 403
    [held] = api.submit(hold=True)
    r = api.client.post(f"/v1/jobs/{held}/steps", json={"command": ["true"]}, headers=USER)
    assert r.status_code == 409 and "PENDING" in r.json()["error"]
    r = api.client.post(
        f"/v1/jobs/{job}/steps", json={"command": ["true"], "nodes": 2}, headers=USER
    )
    assert r.status_code == 422 and r.json()["field"] == "nodes"
    r = api.client.post(f"/v1/jobs/{job}/steps", json={"command": []}, headers=USER)
    assert r.status_code == 422 and r.json()["field"] == "command"
    assert api.client.get(f"/v1/jobs/{job}/steps/7", headers=USER).status_code == 404
    assert api.client.delete(f"/v1/jobs/{job}/steps/7", headers=USER).status_code == 404


def test_killing_a_step_tells_its_node(api: Api) -> None:
    job, node = _running(api)
    api.client.post(f"/v1/jobs/{job}/steps", json={"command": ["sleep", "9"]}, headers=USER)
    api.commands(node)
    r = api.client.delete(f"/v1/jobs/{job}/steps/0", headers=USER)
    assert r.status_code == 200 and r.json()["step_id"] == 0
    kinds = [c["kind"] for c in api.commands(node)]
    assert kinds == ["kill"]
