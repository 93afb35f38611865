"""Finding the controller: PHALANX_URL and a token over TCP, else the state dir's socket."""

from __future__ import annotations

from pathlib import Path

import pytest

from phalanx.client.address import ControllerAddress, Tries, find_controller, state_dir


def test_the_socket_in_the_state_dir_by_default(tmp_path: Path) -> None:
    found = find_controller({"PHALANX_STATE_DIR": str(tmp_path), "PHALANX_TOKEN": "ignored"})
    assert found == ControllerAddress(socket_path=str(tmp_path / "controller.sock"))
    assert found.describe() == f"unix socket {tmp_path / 'controller.sock'}"


def test_the_state_dir_defaults_under_home() -> None:
    assert state_dir({"HOME": "/home/ann"}) == Path("/home/ann/.local/state/phalanx")
    assert find_controller({"HOME": "/home/ann"}).socket_path == (
        "/home/ann/.local/state/phalanx/controller.sock"
    )


def test_a_url_takes_the_token_from_the_environment_first(tmp_path: Path) -> None:
    (tmp_path / "token").write_text("from-file\n")
    env = {
        "PHALANX_STATE_DIR": str(tmp_path),
        "PHALANX_URL": "http://127.0.0.1:6817/",
        "PHALANX_TOKEN": "from-env",
    }
    assert find_controller(env) == ControllerAddress(url="http://127.0.0.1:6817", token="from-env")
    del env["PHALANX_TOKEN"]
    assert find_controller(env).token == "from-file"


def test_a_url_without_any_token_goes_without(tmp_path: Path) -> None:
    env = {"PHALANX_STATE_DIR": str(tmp_path), "PHALANX_URL": "http://h:1"}
    found = find_controller(env)
    assert found.token is None
    assert found.describe() == "http://h:1"


def test_an_unreadable_token_file_is_no_token(tmp_path: Path) -> None:
    (tmp_path / "token").mkdir()  # reading a directory fails like a file without permission
    env = {"PHALANX_STATE_DIR": str(tmp_path), "PHALANX_URL": "http://h:1"}
    assert find_controller(env).token is None


def test_an_address_is_a_url_or_a_socket() -> None:
    with pytest.raises(ValueError):
        ControllerAddress()
    with pytest.raises(ValueError):
        ControllerAddress(url="http://h:1", socket_path="/s")


def test_tries_go_to_the_last_leader_first_then_the_others_once_each() -> None:
    tries = Tries("http://b:1", ["http://a:1", "http://b:1", "http://c:1"])
    assert list(tries) == ["http://b:1", "http://a:1", "http://c:1"]


def test_a_standbys_hint_is_tried_next_unless_it_was_tried() -> None:
    tries = Tries(None, ["http://a:1", "http://b:1"])
    seen = [next(tries)]
    assert tries.follow("http://c:1/")  # a leader no URL named, trailing slash and all
    assert not tries.follow("http://a:1")  # already asked
    seen.extend(tries)
    assert seen == ["http://a:1", "http://c:1", "http://b:1"]
