"""The agent's transport to several controllers: past a dead one, to where a standby says
the leader is, and straight there afterwards."""

from __future__ import annotations

import asyncio

import httpx

from phalanx.agent.failover import FailoverTransport


def test_the_agents_transport_goes_to_the_leader() -> None:
    seen: list[str] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(str(request.url.host))
        if request.url.host == "dead":
            raise httpx.ConnectError("refused", request=request)
        if request.url.host == "standby":
            return httpx.Response(503, json={"error": "standby", "leader": "http://leader:1"})
        return httpx.Response(200, json={"ok": True})

    transport = FailoverTransport(
        ["http://dead:1", "http://standby:1"], inner=httpx.MockTransport(handler)
    )

    async def calls() -> None:
        async with httpx.AsyncClient(transport=transport, base_url="http://dead:1") as http:
            first = await http.post("/v1/agents/register", json={"node": "n1"})
            assert first.status_code == 200 and seen == ["dead", "standby", "leader"]
            assert transport.current == "http://leader:1"
            await http.get("/v1/ping")
            assert seen[-1] == "leader"  # straight to the one that answered

    asyncio.run(calls())


def test_when_every_controller_stands_by_the_last_answer_is_returned() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(503, json={"error": "standby", "leader": None})

    transport = FailoverTransport(["http://a:1", "http://b:1"], inner=httpx.MockTransport(handler))

    async def call() -> int:
        async with httpx.AsyncClient(transport=transport, base_url="http://a:1") as http:
            return (await http.get("/v1/agents/n1/commands")).status_code

    assert asyncio.run(call()) == 503
    assert transport.current == "http://a:1"
