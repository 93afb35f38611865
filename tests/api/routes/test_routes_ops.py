"""``/v1/ping``, ``/metrics`` and the OpenAPI document: no token needed."""

from __future__ import annotations

from routes_scene import Api


def test_ping_needs_no_token(api: Api) -> None:
    r = api.client.get("/v1/ping")
    assert r.status_code == 200
    assert r.json() == {"ok": True, "controller_id": api.controller.id}


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
