"""``/v1/ping``, ``/metrics`` and the OpenAPI document: no token needed."""

from __future__ import annotations

from routes_scene import Api


def test_ping_needs_no_token(api: Api) -> None:
    r = api.client.get("/v1/ping")
    assert r.status_code == 200
    assert r.json() == {"ok": True, "controller_id": api.controller.id, "role": "leader"}


def _metric(text: str, name: str) -> float:
    for line in text.splitlines():
        if line.startswith(name + " "):
            return float(line.split()[1])
    raise AssertionError(f"{name} not in /metrics")


def test_metrics(api: Api) -> None:
    api.submit(gpus_per_task=8, nodes="2")
    api.submit(gpus_per_task=1)
    r = api.client.get("/metrics")
    assert r.status_code == 200
    assert r.headers["content-type"].startswith("text/plain")
    text = r.text
    assert 'phalanx_pending_jobs{reason="Resources"} 1.0' in text
    assert 'phalanx_pending_jobs{reason="Priority"} 0.0' in text
    assert _metric(text, "phalanx_running_jobs") == 1.0
    assert _metric(text, "phalanx_eta_sched") == 1.0  # nothing booked yet
    assert _metric(text, "phalanx_theta_overhead") == 0.0
    assert _metric(text, "phalanx_gpus_allocated") == 16.0
    assert _metric(text, "phalanx_gpus_total") == 16.0
    assert _metric(text, "phalanx_submissions_total") == 2.0
    assert "phalanx_scheduling_pass_seconds_bucket" in text


def test_openapi_lists_the_job_routes(api: Api) -> None:
    r = api.client.get("/openapi.json")
    assert r.status_code == 200
    paths = r.json()["paths"]
    assert "/v1/jobs" in paths
    assert {"get", "post"} <= set(paths["/v1/jobs"])
    assert "delete" in paths["/v1/jobs/{job_id}"]


# Clients generated from the OpenAPI document name calls by these ids (FastAPI derives them
# from the handler's name and the path): moving a route between routers must keep them.
OPERATIONS = {
    ("GET", "/metrics"): "prometheus_metrics_get",
    ("GET", "/v1/accounting"): "accounting_v1_accounting_get",
    ("GET", "/v1/associations"): "associations_v1_associations_get",
    ("POST", "/v1/associations"): "change_associations_v1_associations_post",
    ("POST", "/v1/agents/register"): "register_v1_agents_register_post",
    ("GET", "/v1/agents/{node}/commands"): "commands_v1_agents__node__commands_get",
    ("POST", "/v1/agents/{node}/reports"): "reports_v1_agents__node__reports_post",
    ("POST", "/v1/agents/{node}/faults"): "fault_v1_agents__node__faults_post",
    ("GET", "/v1/fairshare"): "fairshare_v1_fairshare_get",
    ("GET", "/v1/jobs"): "jobs_v1_jobs_get",
    ("POST", "/v1/jobs"): "submit_v1_jobs_post",
    ("POST", "/v1/jobs/batch"): "submit_batch_v1_jobs_batch_post",
    ("GET", "/v1/jobs/table"): "jobs_table_v1_jobs_table_get",
    ("POST", "/v1/jobs/test"): "will_run_v1_jobs_test_post",
    ("DELETE", "/v1/jobs/{job_id}"): "cancel_v1_jobs__job_id__delete",
    ("GET", "/v1/jobs/{job_id}"): "job_v1_jobs__job_id__get",
    ("PATCH", "/v1/jobs/{job_id}"): "update_v1_jobs__job_id__patch",
    ("POST", "/v1/jobs/{job_id}/hold"): "hold_v1_jobs__job_id__hold_post",
    ("POST", "/v1/jobs/{job_id}/release"): "release_v1_jobs__job_id__release_post",
    ("POST", "/v1/jobs/{job_id}/requeue"): "requeue_v1_jobs__job_id__requeue_post",
    ("POST", "/v1/jobs/{job_id}/signal"): "signal_v1_jobs__job_id__signal_post",
    ("POST", "/v1/jobs/{job_id}/steps"): "start_step_v1_jobs__job_id__steps_post",
    ("DELETE", "/v1/jobs/{job_id}/steps/{step_no}"): (
        "kill_step_v1_jobs__job_id__steps__step_no__delete"
    ),
    ("GET", "/v1/jobs/{job_id}/steps/{step_no}"): "step_v1_jobs__job_id__steps__step_no__get",
    ("GET", "/v1/nodes"): "nodes_v1_nodes_get",
    ("PATCH", "/v1/nodes"): "update_nodes_v1_nodes_patch",
    ("GET", "/v1/partitions"): "partitions_v1_partitions_get",
    ("GET", "/v1/ping"): "ping_v1_ping_get",
    ("GET", "/v1/priority"): "priority_v1_priority_get",
    ("GET", "/v1/steps"): "running_steps_v1_steps_get",
}


def test_every_route_keeps_its_operation_id(api: Api) -> None:
    paths = api.client.get("/openapi.json").json()["paths"]
    found = {
        (method.upper(), path): op["operationId"]
        for path, methods in paths.items()
        for method, op in methods.items()
    }
    assert found == OPERATIONS


def test_the_job_table_is_matched_before_a_job_id(api: Api) -> None:
    # ``/v1/jobs/table`` would otherwise be ``/v1/jobs/{job_id}`` with a bad id (422).
    assert api.client.get("/v1/jobs/table").status_code == 401
    r = api.client.post("/v1/jobs/test", json={"command": ["true"]})
    assert r.status_code == 401
