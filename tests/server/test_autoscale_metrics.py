"""The live MetricsSource: the router's /services answer parsed, polled over HTTP, stale
answers ignored, CPU from the agents' reports."""

from __future__ import annotations

import asyncio
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from phalanx.kube.autoscalers import ServiceLoad
from phalanx.server.autoscalemetrics import CPU_WINDOW, RouterMetrics, parse_services

ANSWER = {
    "at": 1767225600.1,
    "services": [
        {
            "namespace": "default",
            "name": "web",
            "in_flight": 3,
            "held": 0,
            "requests_per_second": 41.5,
            "average_concurrency": 2.5,
            "window_seconds": 2,
            "latency_p50_seconds": 0.004,
            "latency_p99_seconds": 0.02,
            "latency_window_seconds": 10,
        },
        {
            "namespace": "ml",
            "name": "echo-predictor",
            "in_flight": 1,
            "held": 1,
            "requests_per_second": 0.5,
            "average_concurrency": 0.2,
        },
        {"namespace": "bad"},
        "junk",
    ],
}


def test_parse_services() -> None:
    loads = parse_services(ANSWER)
    assert loads[("default", "web")] == ServiceLoad(2.5, 41.5, 0, 2, 0.004, 0.02, 10)
    # Held demand shows in full even when the window's average is below it.
    assert loads[("ml", "echo-predictor")] == ServiceLoad(1.0, 0.5, 1)
    assert len(loads) == 2
    assert parse_services("nonsense") == {}


class _Router(BaseHTTPRequestHandler):
    asked: list[str] = []

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        type(self).asked.append(self.path)
        body = json.dumps(ANSWER).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


def test_polls_the_router_and_forgets_a_stale_answer(tmp_path: Path) -> None:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Router)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    now = [1_000_000]
    metrics = RouterMetrics(
        lambda: now[0], tmp_path, cpu=lambda ns, pod: 250 if pod == "a" else None
    )
    try:
        assert metrics.service_load("default", "web") is None  # no router yet
        asyncio.run(metrics.refresh())  # no router.port: nothing
        assert metrics.service_load("default", "web") is None
        (tmp_path / "router.port").write_text(f"{server.server_address[1]}\n")

        async def refresh() -> None:
            await metrics.refresh()
            await metrics.close()

        asyncio.run(refresh())
        assert _Router.asked == ["/services?window=2"]
        assert metrics.service_load("default", "web") == ServiceLoad(
            2.5, 41.5, 0, 2, 0.004, 0.02, 10
        )
        assert metrics.service_load("default", "idle") == ServiceLoad(0.0, 0.0, 0)
        now[0] += 11_000
        assert metrics.service_load("default", "web") is None
    finally:
        server.shutdown()
        server.server_close()
    sample = metrics.pod_cpu("default", "a")
    assert sample is not None and (sample.value, sample.at, sample.window) == (
        250,
        now[0],
        CPU_WINDOW,
    )
    assert metrics.pod_cpu("default", "b") is None
