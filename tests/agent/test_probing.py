"""Probes against real sockets and processes: httpGet's status range and headers, tcpSocket,
exec's exit status and timeout, and the kubelet's failure messages."""

from __future__ import annotations

import asyncio
import http.server
import os
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from phalanx.agent.containers import Backoff, Container
from phalanx.agent.probing import USER_AGENT, probe
from phalanx.agent.tasks import TaskRunner
from phalanx.protocol.agent import ProbeSpec, TaskSpec

SEEN: list[dict[str, str]] = []


class Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        SEEN.append(dict(self.headers))
        code = int(self.path.strip("/") or 200)
        self.send_response(code)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture(scope="module")
def server() -> Iterator[int]:
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield httpd.server_address[1]
    httpd.shutdown()
    httpd.server_close()


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def container(tmp_path: Path) -> Container:
    spec = TaskSpec(argv=["true"], cwd=str(tmp_path), env={"PATH": os.defpath, "X": "7"},
                    stdout="/dev/null", rank=0)  # fmt: skip
    return Container(spec, Backoff())


def run(spec: ProbeSpec, tmp_path: Path, runner: TaskRunner | None = None) -> tuple[bool, str]:
    """One probe on a loop that also plays the agent's reaper (as SIGCHLD would)."""
    tasks = runner or TaskRunner()

    async def reaper() -> None:
        while True:
            tasks.reap()
            await asyncio.sleep(0.01)

    async def go() -> tuple[bool, str]:
        reaping = asyncio.create_task(reaper())
        try:
            async with httpx.AsyncClient(trust_env=False) as http:
                return await probe(
                    spec, container(tmp_path), address="127.0.0.1", http=http, runner=tasks
                )
        finally:
            reaping.cancel()

    return asyncio.run(go())


@pytest.mark.parametrize(("path", "passed"), [("/200", True), ("/302", True), ("/399", True),
                                               ("/404", False), ("/500", False)])  # fmt: skip
def test_http_get_passes_for_2xx_and_3xx(
    server: int, tmp_path: Path, path: str, passed: bool
) -> None:
    ok, why = run(ProbeSpec(kind="httpGet", port=server, path=path), tmp_path)
    assert ok is passed
    if not passed:
        assert why == f"HTTP probe failed with statuscode: {path[1:]}"


def test_http_get_sends_kube_probe_agent_and_the_given_headers(
    server: int, tmp_path: Path
) -> None:
    SEEN.clear()
    spec = ProbeSpec(kind="httpGet", port=server, headers=[["X-Probe", "yes"]])
    assert run(spec, tmp_path) == (True, "")
    assert SEEN[-1]["User-Agent"] == USER_AGENT and SEEN[-1]["X-Probe"] == "yes"


def test_refused_connections_fail_with_the_kubelets_words(tmp_path: Path) -> None:
    port = closed_port()
    ok, why = run(ProbeSpec(kind="tcpSocket", port=port), tmp_path)
    assert not ok and why == f"dial tcp 127.0.0.1:{port}: connect: connection refused"
    ok, why = run(ProbeSpec(kind="httpGet", port=port), tmp_path)
    assert not ok
    assert why == (
        f'Get "http://127.0.0.1:{port}/": dial tcp 127.0.0.1:{port}: connect: connection refused'
    )


def test_tcp_socket_passes_when_a_connection_opens(server: int, tmp_path: Path) -> None:
    assert run(ProbeSpec(kind="tcpSocket", port=server), tmp_path) == (True, "")


def test_exec_runs_in_the_containers_environment(tmp_path: Path) -> None:
    runner = TaskRunner()
    spec = ProbeSpec(kind="exec", command=["sh", "-c", 'test "$X" = 7 && test -d .'])
    assert run(spec, tmp_path, runner) == (True, "")
    ok, why = run(ProbeSpec(kind="exec", command=["sh", "-c", "exit 4"]), tmp_path, runner)
    assert not ok and "exited with 4" in why
    started = time.monotonic()
    slow = ProbeSpec(kind="exec", command=["sleep", "5"], timeout_s=0.3)
    ok, why = run(slow, tmp_path, runner)
    assert not ok and "timed out after 0.3s" in why and time.monotonic() - started < 3
    deadline = time.monotonic() + 5
    while runner._probes and time.monotonic() < deadline:
        runner.reap()
        time.sleep(0.01)
    assert not runner._probes
