"""Several controllers (``PHALANX_URL=URL1,URL2``): a call goes to the one that leads -- past
one that is down, and where a standby's 503 says the leader is -- and a request that may
have reached a controller is sent again only where that cannot do it twice. (The agent's
transport: ``tests/agent/test_agent_failover.py``.)"""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from phalanx.client.address import ControllerAddress, find_controller
from phalanx.client.client import Client
from phalanx.client.wirecall import ControllerUnreachable, WireCaller


class _Controller(ThreadingHTTPServer):
    """A controller that leads (``leader`` None) or stands by naming ``leader``."""

    daemon_threads = True

    def __init__(self, leader: str | None = None, *, hang_up: bool = False) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.leader = leader
        self.hang_up = hang_up
        self.requests: list[tuple[str, str]] = []

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"


class _Handler(BaseHTTPRequestHandler):
    server: _Controller

    def log_message(self, *args: object) -> None:
        pass

    def _answer(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        self.rfile.read(length)
        self.server.requests.append((self.command, self.path))
        if self.server.hang_up:  # took the request, died before answering
            self.connection.shutdown(socket.SHUT_RDWR)
            return
        if self.server.leader is None:
            status, body = 200, {"ok": True, "controller_id": "c1", "role": "leader"}
        else:
            status, body = 503, {"error": "standby", "leader": self.server.leader or None}
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    do_GET = _answer
    do_POST = _answer


@pytest.fixture
def controllers() -> Iterator[list[_Controller]]:
    made: list[_Controller] = []
    yield made
    for server in made:
        server.shutdown()
        server.server_close()


def _start(made: list[_Controller], server: _Controller) -> _Controller:
    threading.Thread(target=server.serve_forever, daemon=True).start()
    made.append(server)
    return server


def _closed_port() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{s.getsockname()[1]}"


def test_phalanx_url_takes_a_comma_list() -> None:
    found = find_controller({"PHALANX_URL": "http://a:6817/, http://b:6817", "HOME": "/x"})
    assert found.urls == ["http://a:6817", "http://b:6817"]


def test_a_call_goes_past_a_dead_controller_and_a_standby_to_the_leader(
    controllers: list[_Controller],
) -> None:
    leader = _start(controllers, _Controller())
    standby = _start(controllers, _Controller(leader=leader.url))
    wire = WireCaller(ControllerAddress(url=f"{_closed_port()},{standby.url}"), timeout=5)
    assert wire.call("GET", "/v1/ping") == (
        200,
        {"ok": True, "controller_id": "c1", "role": "leader"},
    )
    assert wire.leader == leader.url  # named by the standby, not in the list
    assert leader.requests == [("GET", "/v1/ping")]


def test_with_no_leader_the_error_names_every_controller(controllers: list[_Controller]) -> None:
    standby = _start(controllers, _Controller(leader=""))
    dead = _closed_port()
    wire = WireCaller(ControllerAddress(url=f"{dead},{standby.url}"), timeout=0.5)
    with pytest.raises(ControllerUnreachable) as err:
        wire.call("GET", "/v1/jobs")
    assert dead in str(err.value) and standby.url in str(err.value)


def test_a_submission_that_may_have_gone_through_is_not_sent_again_without_a_key(
    controllers: list[_Controller],
) -> None:
    dying = _start(controllers, _Controller(hang_up=True))
    other = _start(controllers, _Controller())
    wire = WireCaller(ControllerAddress(url=f"{dying.url},{other.url}"), timeout=5)
    with pytest.raises(ControllerUnreachable):
        wire.call("POST", "/v1/jobs", body={"command": ["true"]})
    assert other.requests == []
    # With an idempotency key the controller that takes over knows it: sent again.
    status, _ = wire.call("POST", "/v1/jobs", body={"command": ["true"]}, idempotency_key="k1")
    assert status == 200 and other.requests == [("POST", "/v1/jobs")]


def test_the_typed_client_follows_the_leader_too(controllers: list[_Controller]) -> None:
    leader = _start(controllers, _Controller())
    standby = _start(controllers, _Controller(leader=leader.url))
    with Client(ControllerAddress(url=f"{_closed_port()},{standby.url}"), timeout=5) as client:
        assert client.ping() == "c1"
    assert leader.requests == [("GET", "/v1/ping")]
