"""The stdlib caller: both transports, errors as values or ``ApiError``, unreachable
controllers named, and an import that stays light."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from fake_controller import TOKEN, FakeController, Served, serve

from phalanx.client.address import ControllerAddress
from phalanx.client.wirecall import ApiError, ControllerUnreachable, WireCaller, api_error


@pytest.fixture
def served(tmp_path: Path) -> Iterator[Served]:
    with serve(FakeController(), tmp_path) as running:
        yield running


def over_socket(served: Served) -> WireCaller:
    return WireCaller(ControllerAddress(socket_path=str(served.socket_path)))


def over_tcp(served: Served, token: str | None = TOKEN) -> WireCaller:
    return WireCaller(ControllerAddress(url=served.url, token=token))


def test_ping_over_the_socket_needs_no_token(served: Served) -> None:
    assert over_socket(served).call("GET", "/v1/ping") == (
        200,
        {"ok": True, "controller_id": "fake-1"},
    )


def test_tcp_sends_the_bearer_token(served: Served) -> None:
    assert over_tcp(served).call_ok("GET", "/v1/ping")["ok"] is True
    status, body = over_tcp(served, token=None).call("GET", "/v1/ping")
    assert status == 401
    assert "token" in body["error"]


def test_a_trailing_slash_in_the_url_is_harmless(served: Served) -> None:
    wire = WireCaller(ControllerAddress(url=served.url + "/", token=TOKEN))
    assert wire.call("GET", "/v1/ping")[0] == 200


def test_post_and_query(served: Served) -> None:
    wire = over_socket(served)
    status, body = wire.call("POST", "/v1/jobs", body={"command": ["true"], "array": "0-2"})
    assert status == 201
    assert body == {"job_ids": [[100, 101, 102]]}
    listed = wire.call_ok("GET", "/v1/jobs", query={"all": False, "ids": "101,102", "user": None})
    assert [job["job_id"] for job in listed["jobs"]] == [101, 102]


def test_an_error_status_is_returned_by_call_and_raised_by_call_ok(served: Served) -> None:
    wire = over_socket(served)
    assert wire.call("GET", "/v1/jobs/7") == (404, {"error": "no job 7", "field": None})
    with pytest.raises(ApiError) as caught:
        wire.call_ok("POST", "/v1/jobs", body={"command": ["x"], "partition": "nope"})
    assert (caught.value.status, caught.value.field) == (400, "partition")
    assert str(caught.value) == "no partition 'nope'"  # the message names the field


def test_a_validation_error_names_the_field(served: Served) -> None:
    with pytest.raises(ApiError) as caught:
        over_socket(served).call_ok(
            "POST", "/v1/jobs", body={"command": ["x"], "gpus_per_task": -1}
        )
    assert caught.value.status == 422
    assert caught.value.field == "gpus_per_task"
    assert str(caught.value).startswith("gpus_per_task: ")


def test_a_missing_socket_is_unreachable_and_named(tmp_path: Path) -> None:
    path = tmp_path / "controller.sock"
    with pytest.raises(ControllerUnreachable) as caught:
        WireCaller(ControllerAddress(socket_path=str(path))).call("GET", "/v1/ping")
    assert str(path) in str(caught.value)
    assert "No such file" in str(caught.value)


def test_a_closed_port_is_unreachable_and_named() -> None:
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{probe.getsockname()[1]}"
    with pytest.raises(ControllerUnreachable) as caught:
        WireCaller(ControllerAddress(url=url)).call("GET", "/v1/ping")
    assert url in str(caught.value)


def test_a_url_that_is_not_http_is_refused_at_once() -> None:
    with pytest.raises(ControllerUnreachable, match="ftp://x"):
        WireCaller(ControllerAddress(url="ftp://x"))


@pytest.mark.parametrize(
    ("body", "message", "field"),
    [
        ({"error": "no job 3", "field": None}, "no job 3", None),
        ({"error": "too long", "field": "time"}, "too long", "time"),
        (
            {
                "detail": [
                    {"loc": ["body", "jobs", 0, "nodes"], "msg": "bad", "type": "x"},
                    {"loc": ["query", "all"], "msg": "not a bool", "type": "y"},
                ]
            },
            "bad; all: not a bool",
            "jobs.0.nodes",
        ),
        ({"detail": "Method Not Allowed"}, "Method Not Allowed", None),
        ("Internal Server Error", "Internal Server Error", None),
        (None, "HTTP 507 Insufficient Storage", None),
    ],
)
def test_api_error_renders_every_error_shape(body: object, message: str, field: str | None) -> None:
    error = api_error(507, body)
    assert (error.status, error.message, error.field) == (507, message, field)


def test_a_field_the_message_already_names_is_not_named_twice() -> None:
    body = {
        "error": "time: invalid time specification 'x'",
        "field": "time",
        "detail": [{"loc": ["body", "time"], "msg": "invalid time specification 'x'"}],
    }
    assert str(api_error(422, body)) == "time: invalid time specification 'x'"
    assert str(api_error(422, {"error": "field 'mem': bad size", "field": "mem"})) == (
        "field 'mem': bad size"
    )
    assert str(api_error(400, {"error": "bad size", "field": "mem"})) == "mem: bad size"


def test_importing_the_fast_path_stays_light() -> None:
    probe = (
        "import sys\n"
        "import phalanx.client.wirecall\n"
        "heavy = [m for m in ('httpx', 'pydantic', 'numpy', 'phalanx.api', 'phalanx.client.client')"
        " if m in sys.modules]\n"
        "print('HEAVY', heavy)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, check=True
    )
    assert "HEAVY []" in done.stdout


def test_an_answer_cut_short_is_no_answer() -> None:
    from phalanx.client.unixhttp import Broken, _parse

    whole = b'HTTP/1.1 201 Created\r\ncontent-length: 17\r\n\r\n{"job_ids":[[1]]}'
    assert _parse(whole) == (201, b'{"job_ids":[[1]]}')
    for cut in (whole[:-5], whole.split(b"\r\n\r\n")[0] + b"\r\n\r\n"):
        with pytest.raises(Broken, match="before the whole answer"):
            _parse(cut)
    chunked = b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n4\r\nabcd\r\n0\r\n\r\n"
    assert _parse(chunked) == (200, b"abcd")
    with pytest.raises(Broken):
        _parse(chunked[:-7])
