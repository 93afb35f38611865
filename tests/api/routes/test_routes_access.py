"""Who is asking: callers without a known token are refused before anything is done."""

from __future__ import annotations

import pwd
from typing import Any

import pytest
from routes_scene import CMD, Api
from starlette.requests import Request

from phalanx.api.routes.access import Access, Unauthorized


@pytest.mark.parametrize(
    "headers",
    [
        {},
        {"Authorization": "Bearer wrong"},
        {"Authorization": "Bearer "},
        {"Authorization": "Basic t-alice"},
        {"Authorization": "t-alice"},
    ],
)
def test_unknown_callers_are_refused(api: Api, headers: dict[str, str]) -> None:
    for method, path in [("GET", "/v1/jobs"), ("POST", "/v1/jobs"), ("GET", "/v1/nodes")]:
        r = api.client.request(method, path, headers=headers, json={"command": CMD})
        assert r.status_code == 401
        assert "token" in r.json()["error"]
    assert api.journal.events == []


def _request(peer: tuple[int, int, int] | None = None, auth: str = "") -> Request:
    headers = [(b"authorization", auth.encode())] if auth else []
    scope: dict[str, Any] = {"type": "http", "headers": headers}
    if peer is not None:
        scope["phalanx.peer"] = peer  # (pid, uid, gid), as phalanx.api.peer puts it
    return Request(scope)


def test_socket_peers_are_known_by_uid_administrators_by_uid_or_name() -> None:
    access = Access(owner_uid=4242, admins=frozenset({"nobody"}))
    root = access.caller(_request((1, 0, 0)))
    assert (root.uid, root.name, root.admin) == (0, "root", True)
    owner = access.caller(_request((1, 4242, 4242)))
    assert (owner.uid, owner.admin) == (4242, True)
    named = access.caller(_request((1, pwd.getpwnam("nobody").pw_uid, 0)))
    assert (named.name, named.admin) == ("nobody", True)
    unknown = Access().caller(_request((1, 987_654, 0)))  # no passwd entry: the uid as name
    assert (unknown.uid, unknown.name, unknown.admin) == (987_654, "987654", False)


def test_tcp_callers_are_known_by_token_and_a_peer_needs_none() -> None:
    access = Access(tokens={"t1": "nobody", "t2": "ghost"}, admins=frozenset({"ghost"}))
    who = access.caller(_request(auth="Bearer t1"))
    assert (who.name, who.uid, who.admin) == ("nobody", pwd.getpwnam("nobody").pw_uid, False)
    ghost = access.caller(_request(auth="bearer t2"))  # the scheme in any case
    assert (ghost.name, ghost.uid, ghost.admin) == ("ghost", -1, True)
    with pytest.raises(Unauthorized):
        access.caller(_request(auth="Bearer t3"))
    assert access.caller(_request((1, 0, 0), auth="Bearer nope")).name == "root"


def test_an_agents_own_credential_acts_for_its_node_only(api: Api) -> None:
    api.client.app.state.access.agent_tokens["t-node1"] = "gpu001"  # type: ignore[attr-defined]
    node1 = {"Authorization": "Bearer t-node1"}
    hello = {"node": "gpu001", "boot_id": "b1", "cpus": 64, "memory_mb": 1024, "gpus": 8}
    r = api.client.post("/v1/agents/register", json=hello, headers=node1)
    assert r.status_code == 200, r.text
    epoch = r.json()["epoch"]
    assert r.json()["lease_s"] == api.controller.agent_lease_s > 0
    # Another node's agent protocol: refused, and nothing registered for it.
    r = api.client.post("/v1/agents/register", json={**hello, "node": "gpu002"}, headers=node1)
    assert r.status_code == 403 and "gpu002" in r.json()["error"]
    assert not api.controller.agent_registered("gpu002")
    params = {"boot_id": "b1", "epoch": epoch, "wait": 0}
    assert (
        api.client.get("/v1/agents/gpu002/commands", params=params, headers=node1).status_code
        == 403
    )
    assert (
        api.client.get("/v1/agents/gpu001/commands", params=params, headers=node1).status_code
        == 200
    )
    # Nor is it a user: no jobs, no node changes.
    assert api.client.get("/v1/jobs", headers=node1).status_code == 403
    r = api.client.post("/v1/jobs", json={"command": CMD}, headers=node1)
    assert r.status_code == 403 and api.controller.engine.jobs == {}
    drain = {"nodes": ["gpu001"], "state": "drain", "reason": "x"}
    assert api.client.patch("/v1/nodes", json=drain, headers=node1).status_code == 403
