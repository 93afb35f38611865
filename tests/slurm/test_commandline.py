"""The query commands' command line: getopt with Slurm's words for a bad option."""

from __future__ import annotations

import pytest

from phalanx.slurm.commandline import Usage, read_options


def test_options_and_words_come_back_in_gnu_order() -> None:
    pairs, rest = read_options("squeue", ["-h", "x", "--name=a"], "h", ["name="])
    assert (pairs, rest) == ([("-h", ""), ("--name", "a")], ["x"])


@pytest.mark.parametrize(("argv", "shown"), [(["-z"], "-z"), (["--bogus"], "--bogus")])
def test_an_unknown_option_is_refused_as_slurm_words_it(argv: list[str], shown: str) -> None:
    with pytest.raises(Usage) as caught:
        read_options("sinfo", argv, "h", ["name="])
    assert str(caught.value) == (
        f"sinfo: unrecognized option '{shown}'\nTry \"sinfo --help\" for more information"
    )
    assert caught.value.status == 1


def test_help_and_version_text_exit_zero() -> None:
    assert Usage("Usage: sinfo [OPTIONS]").status == 0
    assert Usage("slurm 22.05.8").status == 0
