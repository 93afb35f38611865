"""A fake Kubernetes API for the router's tests: lists and watches of Services and
EndpointSlices, served over plain HTTP from memory; ``put``/``remove`` send watch events."""

from __future__ import annotations

import asyncio
import json
import socket
from typing import Any

from aiohttp import web

PATHS = {
    "services": "/api/v1/services",
    "endpointslices": "/apis/discovery.k8s.io/v1/endpointslices",
}


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket() as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


def service(name: str, ip: str, port: int, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "clusterIP": ip,
            "selector": {"app": name},
            "ports": [{"name": "http", "port": port, "protocol": "TCP"}],
            **spec,
        },
    }


def endpoint_slice(service_name: str, ports: list[int], ready: bool = True) -> dict[str, Any]:
    """One slice per port here (as when pods name the port differently)."""
    return {
        "apiVersion": "discovery.k8s.io/v1",
        "kind": "EndpointSlice",
        "metadata": {
            "name": f"{service_name}-{'-'.join(map(str, ports)) or 'none'}",
            "namespace": "default",
            "labels": {"kubernetes.io/service-name": service_name},
        },
        "addressType": "IPv4",
        "endpoints": [
            {
                "addresses": ["127.0.0.1"],
                "conditions": {"ready": ready},
                "targetRef": {"kind": "Pod", "uid": f"pod-{p}"},
            }
            for p in ports[:1]
        ],
        "ports": [{"name": "http", "port": p, "protocol": "TCP"} for p in ports[:1]],
    }


class FakeApi:
    def __init__(self) -> None:
        self.objects: dict[str, dict[str, dict[str, Any]]] = {k: {} for k in PATHS}
        self.queues: dict[str, list[asyncio.Queue[dict[str, Any]]]] = {k: [] for k in PATHS}
        self.rv = 1
        self.expire: set[str] = set()
        """Answer the next watch of these 410 Gone (its resourceVersion is too old)."""
        self.lists = 0
        self.runner: web.AppRunner | None = None
        self.url = ""

    async def start(self) -> str:
        app = web.Application()
        for plural, path in PATHS.items():
            app.router.add_get(path, self._handler(plural))
        self.runner = web.AppRunner(app, access_log=None)
        await self.runner.setup()
        port = free_port()
        await web.TCPSite(self.runner, "127.0.0.1", port).start()
        self.url = f"http://127.0.0.1:{port}"
        return self.url

    def end_watches(self) -> None:
        """End every open watch (the server's timeout would): watchers resume."""
        for queues in self.queues.values():
            for q in queues:
                q.put_nowait({})

    async def stop(self) -> None:
        for queues in self.queues.values():
            for q in queues:
                q.put_nowait({})
        if self.runner is not None:
            await self.runner.cleanup()

    def put(self, plural: str, obj: dict[str, Any]) -> None:
        self.rv += 1
        obj["metadata"]["resourceVersion"] = str(self.rv)
        name = obj["metadata"]["name"]
        kind = "MODIFIED" if name in self.objects[plural] else "ADDED"
        self.objects[plural][name] = obj
        for q in self.queues[plural]:
            q.put_nowait({"type": kind, "object": obj})

    def remove(self, plural: str, name: str) -> None:
        self.rv += 1
        obj = self.objects[plural].pop(name)
        for q in self.queues[plural]:
            q.put_nowait({"type": "DELETED", "object": obj})

    def _handler(self, plural: str) -> Any:
        async def handle(request: web.Request) -> web.StreamResponse:
            assert request.headers["Authorization"] == "Bearer t0ken"
            if request.query.get("watch") != "true":
                self.lists += 1
                return web.json_response(
                    {
                        "items": list(self.objects[plural].values()),
                        "metadata": {"resourceVersion": str(self.rv)},
                    }
                )
            if plural in self.expire:
                self.expire.discard(plural)
                return web.json_response({"kind": "Status", "code": 410}, status=410)
            queue: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
            self.queues[plural].append(queue)
            response = web.StreamResponse()
            await response.prepare(request)
            try:
                while True:
                    event = await queue.get()
                    if not event:
                        break
                    await response.write(json.dumps(event).encode() + b"\n")
            finally:
                self.queues[plural].remove(queue)
            return response

        return handle
