"""The service router's overhead: a replica called directly and through the router, open loop.

Three processes: the replica (a small aiohttp handler answering ``ok``) with a static stand-in
for the Kubernetes API beside it (one Service on 127.77.254.1, one EndpointSlice naming the
replica; the router lists and watches it as it would the controller's), the router
(``python -m phalanx.router``, as ``phalanx up`` starts it), and this process, which sends
``--rate`` requests per second for ``--seconds`` seconds, open loop (each request leaves at its
scheduled time whether or not earlier ones have been answered; latency is measured from that
time, so a stall is counted, not hidden), over a keep-alive connection pool. Runs alternate
direct / through ``--runs`` times; the figures quoted are the medians over runs of each run's
p50 and p99. Target: the router adds <= 2 ms to the p50. Then a scale-out: one run through
the router during which a second replica joins the endpoints (p50/p99 before, during, after).

    .venv/bin/python bench/router_overhead.py [--rate 500] [--seconds 10] [--runs 5]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

TARGET_MS = 2.0
CLUSTER_IP = "127.77.254.1"


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket() as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


# -- the replica and the API stand-in (a child process) ----------------------------------


def _slice(name: str, port: int) -> dict[str, Any]:
    return {
        "apiVersion": "discovery.k8s.io/v1",
        "kind": "EndpointSlice",
        "metadata": {
            "name": name,
            "namespace": "default",
            "resourceVersion": "1",
            "labels": {"kubernetes.io/service-name": "bench"},
        },
        "addressType": "IPv4",
        "endpoints": [{"addresses": ["127.0.0.1"], "conditions": {"ready": True}}],
        "ports": [{"name": "http", "port": port, "protocol": "TCP"}],
    }


async def serve(replica_port: int, api_port: int, service_port: int) -> None:
    """The replica and the API stand-in; ``POST /scale?port=P`` starts a second replica on
    port P and adds its slice to the watch, as a scale-out would."""
    from aiohttp import web

    async def replica(request: web.Request) -> web.Response:
        return web.Response(text="ok\n")

    service = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "bench", "namespace": "default", "resourceVersion": "1"},
        "spec": {
            "clusterIP": CLUSTER_IP,
            "selector": {"app": "bench"},
            "ports": [{"name": "http", "port": service_port, "protocol": "TCP"}],
        },
    }
    watchers: list[asyncio.Queue[dict[str, Any]]] = []

    def collection(item: dict[str, Any], queues: list[asyncio.Queue[dict[str, Any]]]) -> Any:
        async def handle(request: web.Request) -> web.StreamResponse:
            if request.query.get("watch") != "true":
                return web.json_response({"items": [item], "metadata": {"resourceVersion": "1"}})
            response = web.StreamResponse()
            await response.prepare(request)
            queue: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
            queues.append(queue)
            with contextlib.suppress(ConnectionError):  # the router has gone
                while True:
                    event = await queue.get()
                    await response.write(json.dumps(event).encode() + b"\n")
            return response

        return handle

    async def scale(request: web.Request) -> web.Response:
        port = int(request.query["port"])
        replica_app = web.Application()
        replica_app.router.add_get("/", replica)
        runner = web.AppRunner(replica_app, access_log=None)
        await runner.setup()
        await web.TCPSite(runner, "127.0.0.1", port).start()
        for queue in watchers:
            queue.put_nowait({"type": "ADDED", "object": _slice("bench-2", port)})
        return web.Response(text="ok\n")

    app = web.Application()
    app.router.add_get("/", replica)
    api = web.Application()
    api.router.add_get("/api/v1/services", collection(service, []))
    api.router.add_get(
        "/apis/discovery.k8s.io/v1/endpointslices",
        collection(_slice("bench-1", replica_port), watchers),
    )
    api.router.add_post("/scale", scale)
    for one, port in ((app, replica_port), (api, api_port)):
        runner = web.AppRunner(one, access_log=None)
        await runner.setup()
        await web.TCPSite(runner, "127.0.0.1", port).start()
    await asyncio.Event().wait()


# -- the load ------------------------------------------------------------------------------


async def _post(session: Any, url: str) -> object:
    return await session.post(url)


async def load(
    url: str, rate: float, seconds: float, at: tuple[float, str] | None = None
) -> tuple[list[float], int, list[tuple[float, float]]]:
    """Latencies (ms) of the requests answered 200, the count of the others, and (seconds
    into the run, latency) of each answered one. ``at``: (seconds, URL) to POST to then."""
    import aiohttp

    post_at = at
    latencies: list[float] = []
    timed: list[tuple[float, float]] = []
    failed = 0
    start = time.perf_counter()
    connector = aiohttp.TCPConnector(limit=0, keepalive_timeout=30)
    async with aiohttp.ClientSession(connector=connector) as session:

        async def one(sent: float) -> None:
            nonlocal failed
            try:
                async with session.get(url) as r:
                    await r.read()
                    ok = r.status == 200
            except aiohttp.ClientError:
                ok = False
            if ok:
                latencies.append((time.perf_counter() - sent) * 1000)
                timed.append((sent - start, latencies[-1]))
            else:
                failed += 1

        for _ in range(20):  # open the pool's connections first
            await one(time.perf_counter())
        latencies.clear()
        timed.clear()
        tasks: list[asyncio.Task[object]] = []
        start = time.perf_counter() + 0.05
        n = int(rate * seconds)
        for i in range(n):
            due = start + i / rate
            if post_at is not None and due - start >= post_at[0]:
                tasks.append(asyncio.create_task(_post(session, post_at[1])))
                post_at = None
            delay = due - time.perf_counter()
            if delay > 0:
                await asyncio.sleep(delay)
            tasks.append(asyncio.create_task(one(due)))
        for done in await asyncio.gather(*tasks):
            if isinstance(done, aiohttp.ClientResponse):
                done.release()
    return latencies, failed, timed


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rate", type=float, default=500.0, help="requests per second")
    p.add_argument("--seconds", type=float, default=10.0, help="per run")
    p.add_argument("--runs", type=int, default=5, help="runs of each, alternating")
    p.add_argument(
        "--no-scale-out", action="store_true", help="skip the scale-out run (1 -> 2 replicas)"
    )
    p.add_argument("--serve", nargs=3, type=int, help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.serve:
        import uvloop

        uvloop.run(serve(*args.serve))
        return 0
    print("#", " ".join([os.path.relpath(sys.executable), *sys.argv]))
    print(f"# load average at start {os.getloadavg()[0]:.1f}")
    replica_port, api_port, service_port = free_port(), free_port(), free_port(CLUSTER_IP)
    env = dict(os.environ)
    procs: list[subprocess.Popen[bytes]] = []
    with tempfile.TemporaryDirectory() as tmp:
        token = Path(tmp) / "token"
        token.write_text("bench\n")
        try:
            procs.append(
                subprocess.Popen(
                    [
                        sys.executable,
                        __file__,
                        "--serve",
                        str(replica_port),
                        str(api_port),
                        str(service_port),
                    ],
                    env=env,
                )
            )
            time.sleep(1.0)
            admin = free_port()
            procs.append(
                subprocess.Popen(
                    [
                        sys.executable,
                        "-m",
                        "phalanx.router",
                        "--server",
                        f"http://127.0.0.1:{api_port}",
                        "--token-file",
                        str(token),
                        "--admin-port",
                        str(admin),
                    ],
                    env=env,
                )
            )
            _wait_listening(CLUSTER_IP, service_port)
            verdict = _measure(args, replica_port, service_port, admin, procs[1].pid)
            if not args.no_scale_out:
                _scale_out(args, service_port, api_port, admin)
            return verdict
        finally:
            for proc in procs:
                proc.terminate()
            for proc in procs:
                proc.wait(10)


def _wait_listening(host: str, port: int) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        with socket.socket() as s:
            if s.connect_ex((host, port)) == 0:
                return
        time.sleep(0.1)
    raise SystemExit(f"the router did not listen on {host}:{port} within 30 s")


def _cpu_s(pid: int) -> float:
    """User + system CPU seconds of process ``pid`` so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _measure(
    args: argparse.Namespace, replica_port: int, service_port: int, admin: int, router: int
) -> int:
    import uvloop

    urls = {
        "direct": f"http://127.0.0.1:{replica_port}/",
        "through": f"http://{CLUSTER_IP}:{service_port}/",
    }
    results: dict[str, list[tuple[float, float]]] = {"direct": [], "through": []}
    cpu: list[float] = []
    for run in range(1, args.runs + 1):
        for name, url in urls.items():
            before = _cpu_s(router)
            latencies, failed, _ = uvloop.run(load(url, args.rate, args.seconds))
            if name == "through":
                cpu.append((_cpu_s(router) - before) * 1000 / max(1, len(latencies) + failed))
            p50, p99 = pct(latencies, 0.50), pct(latencies, 0.99)
            results[name].append((p50, p99))
            print(
                f"run {run} {name:8s} {len(latencies)} ok, {failed} failed;"
                f" p50 {p50:.2f} ms p99 {p99:.2f} ms"
            )
    import urllib.request

    with urllib.request.urlopen(f"http://127.0.0.1:{admin}/services/default/bench") as r:
        snapshot = json.loads(r.read())
    print(f"router's own count: {snapshot['requests_total']} requests")
    med = {
        name: (statistics.median(p for p, _ in runs), statistics.median(q for _, q in runs))
        for name, runs in results.items()
    }
    added = med["through"][0] - med["direct"][0]
    print(
        f"medians over {args.runs} runs at {args.rate:g} requests/s: direct p50"
        f" {med['direct'][0]:.2f} ms p99 {med['direct'][1]:.2f} ms; through the router p50"
        f" {med['through'][0]:.2f} ms p99 {med['through'][1]:.2f} ms"
    )
    print(
        f"router CPU per request (user + system, median of runs): {statistics.median(cpu):.2f} ms;"
        f" load average at the end {os.getloadavg()[0]:.1f}"
    )
    verdict = "PASS" if added <= TARGET_MS else "FAIL"
    print(f"{verdict}  router adds {added:.2f} ms to the p50 (target <= {TARGET_MS:g} ms)")
    return 0


def _scale_out(args: argparse.Namespace, service_port: int, api_port: int, admin: int) -> None:
    """One run through the router of twice ``--seconds``: one replica, then (at half time)
    a second one is added to the Service's endpoints, as a scale-out does. p50/p99 before,
    in the 2 s after the change, and after."""
    import urllib.request

    import uvloop

    half = args.seconds
    scale = f"http://127.0.0.1:{api_port}/scale?port={free_port()}"
    url = f"http://{CLUSTER_IP}:{service_port}/"
    _, failed, timed = uvloop.run(load(url, args.rate, 2 * half, at=(half, scale)))
    phases = {
        "before": [ms for t, ms in timed if t < half],
        "during": [ms for t, ms in timed if half <= t < half + 2],
        "after": [ms for t, ms in timed if t >= half + 2],
    }
    with urllib.request.urlopen(f"http://127.0.0.1:{admin}/services/default/bench") as r:
        ready = json.loads(r.read())["ready_endpoints"]
    cells = "; ".join(
        f"{name} p50 {pct(v, 0.5):.2f} ms p99 {pct(v, 0.99):.2f} ms ({len(v)})"
        for name, v in phases.items()
        if v
    )
    print(
        f"scale-out 1 -> {ready} replicas at {half:g} s, through the router: {cells};"
        f" {failed} failed"
    )


if __name__ == "__main__":
    sys.exit(main())
