"""The router end to end in one process: a fake API, real backends on loopback ports, real
listeners on 127.77.x.y addresses (on Linux all of 127/8 is on ``lo``)."""

from __future__ import annotations

import asyncio
import io
import json
from collections import Counter
from collections.abc import Awaitable, Callable
from typing import Any

import aiohttp
from aiohttp import web
from fake_api import FakeApi, endpoint_slice, free_port, service

from phalanx.router.server import Router

IP = "127.77.250.1"


class Backend:
    """An HTTP server that counts its requests; ``/slow`` streams three chunks."""

    def __init__(self, hits: Counter[int], keepalive: float = 75.0) -> None:
        self.hits = hits
        self.keepalive = keepalive
        self.port = free_port()
        self.runner: web.AppRunner | None = None

    async def start(self) -> None:
        async def handle(request: web.Request) -> web.StreamResponse:
            self.hits[self.port] += 1
            if request.path == "/slow":
                response = web.StreamResponse()
                await response.prepare(request)
                for i in range(3):
                    await response.write(f"chunk{i}\n".encode())
                    await asyncio.sleep(0.2)
                await response.write_eof()
                return response
            if request.path == "/big":
                return web.Response(body=b"x" * 200_000)
            if request.path == "/empty":
                return web.Response(status=204)
            if request.path == "/close":
                return web.Response(text="bye", headers={"Connection": "close"})
            body = await request.read()
            if request.path == "/length":
                return web.json_response({"length": len(body), "method": request.method})
            return web.json_response(
                {"port": self.port, "method": request.method, "body": body.decode()}
            )

        app = web.Application(client_max_size=8 << 20)
        app.router.add_route("*", "/{tail:.*}", handle)
        self.runner = web.AppRunner(app, access_log=None, keepalive_timeout=self.keepalive)
        await self.runner.setup()
        await web.TCPSite(self.runner, "127.0.0.1", self.port).start()

    async def stop(self) -> None:
        if self.runner is not None:
            await self.runner.cleanup()
            self.runner = None


Client = aiohttp.ClientSession
Scenario = Callable[[FakeApi, Router, Client, str], Awaitable[None]]


def run(scenario: Scenario, hold_timeout: float = 5.0) -> None:
    async def main() -> None:
        api = FakeApi()
        await api.start()
        port = free_port(IP)
        api.put("services", service("web", IP, port))
        router = Router(server=api.url, token="t0ken", ssl_context=None, hold_timeout=hold_timeout)
        admin = await router.start()
        try:
            async with aiohttp.ClientSession() as client:
                await scenario(api, router, client, f"http://{IP}:{port}|{admin}")
        finally:
            await router.stop()
            await api.stop()

    asyncio.run(main())


async def until(check: Callable[[], bool], timeout: float = 5.0) -> None:
    deadline = asyncio.get_running_loop().time() + timeout
    while not check():
        assert asyncio.get_running_loop().time() < deadline, "timed out"
        await asyncio.sleep(0.01)


def test_requests_reach_both_endpoints_and_a_dead_one_gets_none_after_refusing() -> None:
    async def scenario(
        api: FakeApi, router: Router, client: aiohttp.ClientSession, at: str
    ) -> None:
        url = at.split("|")[0]
        hits: Counter[int] = Counter()
        backends = [Backend(hits), Backend(hits)]
        for b in backends:
            await b.start()
            api.put("endpointslices", endpoint_slice("web", [b.port]))
        await until(lambda: len(router.table.pools[("default", "web", "http")].endpoints) == 2)
        for _ in range(20):
            async with client.get(url + "/x") as r:
                assert r.status == 200
        assert hits[backends[0].port] == 10 and hits[backends[1].port] == 10
        async with client.post(url + "/echo", data=b"hello") as r:
            assert (await r.json())["body"] == "hello"
        dead = backends[0]
        await dead.stop()  # refuses connections from now on; the API does not know yet
        hits.clear()
        for _ in range(20):
            async with client.get(url + "/x") as r:
                assert r.status == 200  # retried on the other
                assert (await r.json())["port"] == backends[1].port
        assert hits[dead.port] == 0 and hits[backends[1].port] == 20
        pool = router.table.pools[("default", "web", "http")]
        down = next(e for e in pool.endpoints if e.port == dead.port)
        assert down.refusals == 1  # tried once, then skipped
        await backends[1].stop()

    run(scenario)


def test_with_no_endpoint_a_request_is_held_until_one_is_ready() -> None:
    async def scenario(
        api: FakeApi, router: Router, client: aiohttp.ClientSession, at: str
    ) -> None:
        url, admin = at.split("|")
        hits: Counter[int] = Counter()
        backend = Backend(hits)
        await backend.start()
        pending = asyncio.create_task(client.get(url + "/first"))
        stats = router.table.stats[("default", "web")]
        await until(lambda: stats.held == 1)
        async with client.get(f"http://127.0.0.1:{admin}/services/default/web") as r:
            snap = await r.json()
        assert snap["held"] == 1 and snap["in_flight"] == 1 and snap["ready_endpoints"] == 0
        api.put("endpointslices", endpoint_slice("web", [backend.port]))
        response = await asyncio.wait_for(pending, 5.0)
        assert response.status == 200
        response.release()
        assert stats.held == 0 and hits[backend.port] == 1
        async with client.get(f"http://127.0.0.1:{admin}/metrics") as r:
            text = await r.text()
        assert (
            'phalanx_router_requests_total{namespace="default",service="web",code="200"} 1' in text
        )
        async with client.get(f"http://127.0.0.1:{admin}/services?window=5") as r:
            body = json.loads(await r.text())
        assert body["services"][0]["requests_total"] == 1
        assert body["services"][0]["window_seconds"] == 5
        async with client.get(f"http://127.0.0.1:{admin}/services?window=0") as r:
            assert r.status == 400
        await backend.stop()

    run(scenario)


def test_a_hold_times_out_with_503() -> None:
    async def scenario(
        api: FakeApi, router: Router, client: aiohttp.ClientSession, at: str
    ) -> None:
        async with client.get(at.split("|")[0] + "/x") as r:
            assert r.status == 503
            assert "no ready endpoint for service default/web" in await r.text()

    run(scenario, hold_timeout=0.3)


def test_responses_stream_through() -> None:
    async def scenario(
        api: FakeApi, router: Router, client: aiohttp.ClientSession, at: str
    ) -> None:
        hits: Counter[int] = Counter()
        backend = Backend(hits)
        await backend.start()
        api.put("endpointslices", endpoint_slice("web", [backend.port]))
        await until(lambda: router.table.pools[("default", "web", "http")].ready_count(0) == 1)
        loop = asyncio.get_running_loop()
        t0 = loop.time()
        async with client.get(at.split("|")[0] + "/slow") as r:
            first = await r.content.readline()
            first_at = loop.time() - t0
            rest = await r.content.read()
        assert first == b"chunk0\n" and rest == b"chunk1\nchunk2\n"
        assert first_at < 0.3  # the first chunk came before the last was written (0.4 s)
        await backend.stop()

    run(scenario)


def test_listeners_follow_the_services() -> None:
    async def scenario(
        api: FakeApi, router: Router, client: aiohttp.ClientSession, at: str
    ) -> None:
        port = free_port("127.77.250.2")
        node_port = free_port()
        extra: dict[str, Any] = {"type": "NodePort"}
        svc = service("other", "127.77.250.2", port, **extra)
        svc["spec"]["ports"][0]["nodePort"] = node_port
        api.put("services", svc)
        await until(lambda: ("127.77.250.2", port) in router.sites)
        assert ("0.0.0.0", node_port) in router.sites
        async with client.get(f"http://127.0.0.1:{node_port}/") as r:
            assert r.status == 503 or r.status == 200  # served (held, then no endpoint)
        api.remove("services", "other")
        await until(lambda: ("127.77.250.2", port) not in router.sites)
        assert ("0.0.0.0", node_port) not in router.sites

    run(scenario, hold_timeout=0.1)


def test_bodies_heads_and_connections_the_endpoint_closes() -> None:
    async def scenario(
        api: FakeApi, router: Router, client: aiohttp.ClientSession, at: str
    ) -> None:
        url = at.split("|")[0]
        hits: Counter[int] = Counter()
        backend = Backend(hits, keepalive=0.1)  # closes idle connections quickly
        await backend.start()
        api.put("endpointslices", endpoint_slice("web", [backend.port]))
        await until(lambda: router.table.pools[("default", "web", "http")].ready_count(0) == 1)
        async with client.get(url + "/big") as r:  # over the one-piece limit: streamed
            assert r.status == 200 and len(await r.read()) == 200_000
        async with client.head(url + "/big") as r:
            assert r.status == 200 and r.headers["Content-Length"] == "200000"
        async with client.get(url + "/empty") as r:
            assert r.status == 204 and await r.read() == b""
        for _ in range(3):  # the endpoint closes each connection: a new one each time
            async with client.get(url + "/close") as r:
                assert await r.text() == "bye"

        async def chunks() -> Any:
            for _ in range(32):
                yield b"y" * 65536

        async with client.post(url + "/length", data=chunks()) as r:  # chunked, streamed on
            assert (await r.json())["length"] == 32 * 65536
        async with client.put(
            url + "/length", data=io.BytesIO(b"z" * 3_000_000)
        ) as r:  # over 1 MiB
            assert (await r.json()) == {"length": 3_000_000, "method": "PUT"}
        await asyncio.sleep(0.3)  # the endpoint has closed the router's idle connections
        for _ in range(5):
            async with client.get(url + "/x") as r:
                assert r.status == 200
        stats = router.table.stats[("default", "web")]
        assert stats.by_code.get(502, 0) == 0 and stats.in_flight == 0
        await backend.stop()

    run(scenario)


def test_a_watch_that_ends_resumes_and_one_too_old_lists_again() -> None:
    async def scenario(api: FakeApi, router: Router, client: Client, at: str) -> None:
        lists = api.lists
        pools = router.table.pools
        old = {id(q) for qs in api.queues.values() for q in qs}
        api.end_watches()  # resumed from the last resourceVersion: no new list

        def resumed() -> bool:
            now = [id(q) for qs in api.queues.values() for q in qs]
            return len(now) == 2 and not old & set(now)

        await until(resumed)
        api.put("endpointslices", endpoint_slice("web", [1111]))
        await until(lambda: len(pools[("default", "web", "http")].endpoints) == 1)
        assert api.lists == lists
        # a slice the watch never told of (as if its event fell out of the window): only a
        # new list can show it
        api.objects["endpointslices"]["web-2222"] = endpoint_slice("web", [2222])
        api.expire.add("endpointslices")
        api.end_watches()
        await until(lambda: len(pools[("default", "web", "http")].endpoints) == 2)
        assert api.lists > lists

    run(scenario)
