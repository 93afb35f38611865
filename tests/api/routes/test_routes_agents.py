"""The agent protocol over HTTP: administrators only, fenced incarnations told why."""

from __future__ import annotations

import pytest
from routes_scene import CMD, ROOT, USER, Api


def test_agent_endpoints_need_an_administrator(api: Api) -> None:
    hello = {"node": "gpu001", "boot_id": "b1", "cpus": 64, "memory_mb": 1024, "gpus": 8}
    reports = {"boot_id": "b1", "reports": []}
    calls = [
        ("POST", "/v1/agents/register", hello),
        ("GET", "/v1/agents/gpu001/commands?wait=0&boot_id=b1&epoch=1", None),
        ("POST", "/v1/agents/gpu001/reports", reports),
    ]
    for method, path, body in calls:
        r = api.client.request(method, path, json=body, headers=USER)
        assert r.status_code == 403, path
        assert "administrator" in r.json()["error"]
        assert api.client.request(method, path, json=body).status_code == 401
    assert not api.controller.agent_registered("gpu001")


def test_agent_protocol_as_root(api: Api) -> None:
    hello = {"node": "gpu001", "boot_id": "b1", "cpus": 64, "memory_mb": 1024, "gpus": 8}
    r = api.client.post("/v1/agents/register", json=hello, headers=ROOT)
    assert r.status_code == 200
    welcome = r.json()
    assert welcome["controller_id"] == api.controller.id and welcome["node"] == "gpu001"
    assert welcome["heartbeat_s"] > 0 and welcome["acked"] == [] and welcome["epoch"] == 1
    assert api.controller.agent_registered("gpu001")
    r = api.client.post("/v1/agents/register", json={**hello, "node": "gpu002"}, headers=ROOT)
    assert r.status_code == 200
    [job] = api.submit(gpus_per_task=8)
    node = api.controller.cluster.nodes[api.controller.job(job).alloc.nodes[0]].name  # type: ignore[union-attr]
    mine = {"wait": 0, "boot_id": "b1", "epoch": 1}
    r = api.client.get(f"/v1/agents/{node}/commands", params=mine, headers=ROOT)
    assert r.status_code == 200
    [launch] = r.json()["commands"]
    assert (launch["kind"], launch["job_id"], launch["run"], launch["epoch"]) == (
        "launch",
        job,
        1,
        1,
    )
    assert launch["tasks"][0]["argv"] == CMD
    unknown = {**hello, "node": "gpu999"}
    assert api.client.post("/v1/agents/register", json=unknown, headers=ROOT).status_code == 404


@pytest.mark.parametrize(
    "change",
    [
        {"boot_id": ""},
        {"boot_id": "has space"},
        {"node": ""},
        {"epoch": -1},
        {"epoch": 2**63},
        {"cpus": -2},
    ],
)
def test_a_malformed_registration_is_refused(api: Api, change: dict[str, object]) -> None:
    hello = {"node": "gpu001", "boot_id": "b1", "cpus": 64, "memory_mb": 1024, "gpus": 8}
    r = api.client.post("/v1/agents/register", json={**hello, **change}, headers=ROOT)
    assert r.status_code == 422
    assert not api.controller.agent_registered("gpu001")


def test_only_the_registered_incarnation_gets_commands_others_are_told_why(api: Api) -> None:
    hello = {"node": "gpu001", "boot_id": "b1", "cpus": 64, "memory_mb": 1024, "gpus": 8}
    assert api.client.post("/v1/agents/register", json=hello, headers=ROOT).status_code == 200
    second = api.client.post("/v1/agents/register", json={**hello, "boot_id": "b2"}, headers=ROOT)
    assert second.status_code == 409
    assert (second.json()["reason"], second.json()["epoch"]) == ("held", 1)
    stranger = {"wait": 0, "boot_id": "b2", "epoch": 1}
    r = api.client.get("/v1/agents/gpu001/commands", params=stranger, headers=ROOT)
    assert r.status_code == 409 and r.json()["reason"] == "fenced"
    body = {"boot_id": "b9", "epoch": 0, "reports": []}
    r = api.client.post("/v1/agents/gpu001/reports", json=body, headers=ROOT)
    assert r.status_code == 409 and r.json()["reason"] == "unregistered"


def test_the_heartbeat_never_outlasts_the_agents_lease() -> None:
    from phalanx.api.routes.agents import HEARTBEAT_S, heartbeat_s

    assert heartbeat_s(30.0) == HEARTBEAT_S  # the default --dead-after 60: a 30 s lease
    assert heartbeat_s(1.5) == 1.5  # --dead-after 3: inventories every 0.5 s renew it
    assert heartbeat_s(0.0) == HEARTBEAT_S  # no lease: agents never fence themselves


def test_a_poll_counted_in_another_controllers_numbering_loses_no_command(api: Api) -> None:
    """An agent's loops race a controller restart: a poll built before the new controller's
    welcome carries the old one's ``after`` (say 57). Taken here it would acknowledge, and
    drop, the launches this controller numbered 1..57 since: those jobs would stay RUNNING
    with no process, and no inventory would ever miss them (the CI failure of session 20)."""
    hello = {"node": "gpu001", "boot_id": "b1", "cpus": 64, "memory_mb": 1024, "gpus": 8}
    for node in ("gpu001", "gpu002"):
        r = api.client.post("/v1/agents/register", json={**hello, "node": node}, headers=ROOT)
        assert r.status_code == 200
    [job] = api.submit(gpus_per_task=8)
    node = api.controller.cluster.nodes[api.controller.job(job).alloc.nodes[0]].name  # type: ignore[union-attr]
    stale = {"wait": 0, "boot_id": "b1", "epoch": 1, "after": 57, "controller_id": "before"}
    r = api.client.get(f"/v1/agents/{node}/commands", params=stale, headers=ROOT)
    assert r.status_code == 200
    assert r.json() == {"controller_id": api.controller.id, "epoch": 1, "commands": []}
    # An inventory counted in the old numbering does not call the launch lost either.
    inventory = {
        "boot_id": "b1", "epoch": 1, "reports": [], "inventory": True, "after": 57,
        "controller_id": "before",
    }  # fmt: skip
    r = api.client.post(f"/v1/agents/{node}/reports", json=inventory, headers=ROOT)
    assert r.status_code == 200
    assert api.controller.job(job).state.name == "RUNNING"
    current = {**stale, "after": 0, "controller_id": api.controller.id}
    r = api.client.get(f"/v1/agents/{node}/commands", params=current, headers=ROOT)
    [launch] = r.json()["commands"]
    assert (launch["kind"], launch["job_id"]) == ("launch", job)
    # In this controller's numbering the same inventory finds the run missing: lost.
    r = api.client.post(
        f"/v1/agents/{node}/reports",
        json={**inventory, "after": launch["seq"], "controller_id": api.controller.id},
        headers=ROOT,
    )
    assert r.status_code == 200
    assert api.controller.job(job).state.name != "RUNNING" or api.controller.job(job).restarts
