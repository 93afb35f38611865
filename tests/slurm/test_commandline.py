"""The one getopt_long parser every Slurm command reads its options with."""

from __future__ import annotations

import pytest

from phalanx.slurm.commandline import (
    IGNORED,
    OPTIONAL,
    REFUSED,
    VALUE,
    CommandLineError,
    Option,
    OptionTable,
    Usage,
    clusters_reached,
    parse_args,
)

TABLE = OptionTable(
    "sinfo",
    (
        Option("noheader", "h"),
        Option("name", "n", VALUE),
        Option("jobs", "j", OPTIONAL),
        Option("nodes", "", VALUE),
        Option("clusters", "M", VALUE, aliases=("cluster",)),
        Option("accounts", "AU", VALUE),
        Option("local", "", status=IGNORED, note="one cluster"),
        Option("weights", "w", status=REFUSED, note="not published"),
    ),
)


def test_options_and_words_come_back_in_gnu_order() -> None:
    found, rest = parse_args(["-h", "x", "--name=a", "-jx", "--na", "b"], TABLE)
    assert rest == ["x"]
    assert found.pairs == [("noheader", ""), ("name", "a"), ("jobs", "x"), ("name", "b")]
    assert found.get("name") == "b"


def test_aliases_second_letters_and_prefixes_of_one_option() -> None:
    found, _ = parse_args(["--cluster", "a", "--clu=b", "-U", "x", "-Ay"], TABLE)
    assert found.pairs == [
        ("clusters", "a"),
        ("clusters", "b"),
        ("accounts", "x"),
        ("accounts", "y"),
    ]


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["-z"], "sinfo: invalid option -- 'z'"),
        (["--bogus"], "sinfo: unrecognized option '--bogus'"),
        (["--n"], "sinfo: option '--n' is ambiguous"),
        (["--name"], "sinfo: option '--name' requires an argument"),
        (["--noheader=1"], "sinfo: option '--noheader' doesn't allow an argument"),
    ],
)
def test_a_bad_option_is_refused_in_getopts_words(argv: list[str], message: str) -> None:
    with pytest.raises(CommandLineError) as caught:
        parse_args(argv, TABLE)
    assert caught.value.lines == [message, 'Try "sinfo --help" for more information']
    assert caught.value.status == 1


def test_an_ignored_option_is_taken_and_a_refused_one_says_why() -> None:
    assert parse_args(["--local"], TABLE)[0].pairs == [("local", "")]
    with pytest.raises(CommandLineError) as caught:
        parse_args(["-w"], TABLE)
    assert caught.value.lines == ["sinfo: error: --weights: not published"]


def test_clusters_all_or_naming_this_one_reach_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PHALANX_CLUSTER", "here")
    assert clusters_reached("all") and clusters_reached("ALL") and clusters_reached("-1")
    assert clusters_reached("other,here")
    assert not clusters_reached("other")


def test_help_and_version_text_exit_zero() -> None:
    assert Usage("Usage: sinfo [OPTIONS]").status == 0
    assert Usage("slurm 22.05.8").status == 0
    assert Usage("sinfo: error: bad").status == 1
