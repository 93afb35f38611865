"""The typed client: every endpoint over the socket and over TCP, errors as ``ApiError``."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from fake_controller import TOKEN, USER, FakeController, Served, serve

import phalanx.client
from phalanx.api.wire import JobRequest
from phalanx.client import ApiError, Client, ControllerUnreachable
from phalanx.client.address import ControllerAddress


@pytest.fixture
def served(tmp_path: Path) -> Iterator[Served]:
    with serve(FakeController(), tmp_path) as running:
        yield running


@pytest.fixture(params=["socket", "tcp"])
def client(request: pytest.FixtureRequest, served: Served) -> Iterator[Client]:
    if request.param == "socket":
        address = ControllerAddress(socket_path=str(served.socket_path))
    else:
        address = ControllerAddress(url=served.url, token=TOKEN)
    with Client(address) as opened:
        yield opened


def test_the_public_surface() -> None:
    assert sorted(phalanx.client.__all__) == [
        "ApiError",
        "Client",
        "ControllerAddress",
        "ControllerUnreachable",
        "WireCaller",
        "find_controller",
    ]
    with pytest.raises(AttributeError):
        _ = phalanx.client.Nothing  # type: ignore[attr-defined]


def test_ping(client: Client) -> None:
    assert client.ping() == "fake-1"


def test_submit_and_read_back(client: Client, served: Served) -> None:
    [job_id] = client.submit(JobRequest(command=["python", "train.py"], nodes="2", name="t"))
    job = client.job(job_id)
    assert (job.name, job.user, job.nodes_requested, job.state) == ("t", USER, 2, "PENDING")
    assert served.fake.requests[-1].command == ["python", "train.py"]


def test_submit_many_keeps_the_order(client: Client) -> None:
    ids = client.submit_many([JobRequest(command=["a"]), JobRequest(command=["b"], array="0-1")])
    assert ids == [[100], [101, 102]]
    assert [j.name for j in client.jobs(ids=[101, 102])] == ["b", "b"]


def test_job_filters(client: Client, served: Served) -> None:
    served.fake.add_job(job_id=1, user="bob", partition="debug", state="RUNNING", start=1)
    served.fake.add_job(job_id=2, state="COMPLETED", start=1, end=2)
    served.fake.add_job(job_id=3)
    assert [j.job_id for j in client.jobs()] == [1, 3]
    assert [j.job_id for j in client.jobs(all=True)] == [1, 2, 3]
    assert [j.job_id for j in client.jobs(states=["RUNNING"])] == [1]
    assert [j.job_id for j in client.jobs(user="bob")] == [1]
    assert [j.job_id for j in client.jobs(partition="gpu", all=True)] == [2, 3]


def test_cancel(client: Client, served: Served) -> None:
    [job_id] = client.submit(JobRequest(command=["sleep", "60"]))
    assert client.cancel(job_id) == [job_id]
    assert client.job(job_id).state == "CANCELLED"
    served.fake.add_job(job_id=50, user="bob")
    with pytest.raises(ApiError) as caught:
        client.cancel(50)
    assert caught.value.status == 403


def test_cluster_views(client: Client, served: Served) -> None:
    assert [n.name for n in client.nodes()] == ["n1", "n2"]
    assert [p.name for p in client.partitions()] == ["gpu", "debug"]
    served.fake.add_job(job_id=7, state="FAILED", start=1_000, end=5_000, exit_code=3)
    served.fake.add_job(job_id=8, state="COMPLETED", start=1_000, end=9_000, user="bob")
    assert [r.job_id for r in client.accounting()] == [7, 8]
    assert [r.job_id for r in client.accounting(user="bob")] == [8]
    assert [r.job_id for r in client.accounting(since=6_000)] == [8]
    assert [r.job_id for r in client.accounting(until=6_000, ids=[7, 8])] == [7]
    assert client.accounting(ids=[7])[0].exit_code == 3


def test_errors_carry_status_message_and_field(client: Client, served: Served) -> None:
    with pytest.raises(ApiError) as missing:
        client.job(999)
    assert (missing.value.status, missing.value.message) == (404, "no job 999")
    with pytest.raises(ApiError) as invalid:
        client.submit(JobRequest(command=["x"], partition="nope"))
    assert (invalid.value.status, invalid.value.field) == (400, "partition")
    served.fake.store_full = True
    with pytest.raises(ApiError) as full:
        client.submit(JobRequest(command=["x"]))
    assert full.value.status == 507
    assert "submissions refused" in str(full.value)


def test_a_wrong_token_is_refused(served: Served) -> None:
    with (
        Client(ControllerAddress(url=served.url, token="wrong")) as client,
        pytest.raises(ApiError) as caught,
    ):
        client.ping()
    assert caught.value.status == 401


def test_an_absent_controller_is_unreachable(tmp_path: Path) -> None:
    path = tmp_path / "controller.sock"
    with (
        Client(ControllerAddress(socket_path=str(path))) as client,
        pytest.raises(ControllerUnreachable) as caught,
    ):
        client.ping()
    assert str(path) in str(caught.value)


def test_the_address_comes_from_the_environment(
    served: Served, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("PHALANX_URL", raising=False)
    monkeypatch.setenv("PHALANX_STATE_DIR", str(served.state_dir))
    with Client() as client:
        assert client.ping() == "fake-1"
    monkeypatch.setenv("PHALANX_URL", served.url)
    monkeypatch.setenv("PHALANX_TOKEN", TOKEN)
    with Client() as client:
        assert client.ping() == "fake-1"
