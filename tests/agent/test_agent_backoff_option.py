"""``--restart-backoff``: the kubelet's 10 s by default, ``PHALANX_RESTART_BACKOFF`` when set,
and a clear usage error (status 2) for anything but a positive number."""

from __future__ import annotations

import pytest

from phalanx.agent.__main__ import RESTART_BACKOFF_ENV, parse_args


def test_default_env_and_flag(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(RESTART_BACKOFF_ENV, raising=False)
    assert parse_args(["--socket", "/s"]).restart_backoff == 10.0
    monkeypatch.setenv(RESTART_BACKOFF_ENV, "0.5")
    assert parse_args(["--socket", "/s"]).restart_backoff == 0.5
    assert parse_args(["--socket", "/s", "--restart-backoff", "2"]).restart_backoff == 2.0


@pytest.mark.parametrize("value", ["0", "-1", "soon"])
def test_bad_values_are_usage_errors(value: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as stopped:
        parse_args(["--socket", "/s", "--restart-backoff", value])
    assert stopped.value.code == 2
    assert "--restart-backoff" in capsys.readouterr().err
