"""The door of a controller that does not lead: 503 naming the leader for every call, a
ping that says the role, and everything served once it leads."""

from __future__ import annotations

import warnings

from fastapi import FastAPI

from phalanx.api.gate import Gate

with warnings.catch_warnings():
    # As in routes_scene: starlette's TestClient on httpx warns on import (errors here).
    warnings.filterwarnings("ignore", "Using `httpx` with `starlette.testclient`")
    from fastapi.testclient import TestClient


def _gate() -> Gate:
    app = FastAPI()

    @app.get("/v1/ping")
    async def ping() -> dict[str, object]:
        return {"ok": True, "role": "leader"}

    @app.post("/v1/jobs")
    async def submit() -> dict[str, object]:
        return {"job_ids": [[1]]}

    return Gate(app, "c2")


def test_a_standby_answers_503_with_the_leader_until_it_leads() -> None:
    gate = _gate()
    gate.role, gate.leader = "standby", "http://ctl1:6817"
    client = TestClient(gate)
    r = client.post("/v1/jobs", json={})
    assert r.status_code == 503 and r.headers["retry-after"] == "1"
    assert r.json()["leader"] == "http://ctl1:6817"
    assert "standby" in r.json()["error"] and "http://ctl1:6817" in r.json()["error"]
    ping = client.get("/v1/ping")
    assert ping.status_code == 503
    assert ping.json() == {
        "ok": False,
        "controller_id": "c2",
        "role": "standby",
        "leader": "http://ctl1:6817",
    }
    gate.lead()
    assert client.post("/v1/jobs", json={}).json() == {"job_ids": [[1]]}
    assert client.get("/v1/ping").json()["role"] == "leader"
    gate.close()  # deposed: the door shuts again
    assert client.get("/v1/ping").json()["role"] == "deposed"
    assert client.post("/v1/jobs", json={}).status_code == 503


def test_a_leader_whose_lead_is_not_confirmed_lately_answers_nothing() -> None:
    import time

    gate = _gate()
    gate.lead()
    client = TestClient(gate)
    gate.lease_until = time.monotonic() + 60
    assert client.post("/v1/jobs", json={}).status_code == 200
    gate.lease_until = time.monotonic() - 0.1  # its last check is too old: deposed, maybe
    r = client.post("/v1/jobs", json={})
    assert r.status_code == 503 and "not confirmed" in r.json()["error"]
    assert client.get("/v1/ping").json()["role"] == "unconfirmed"
