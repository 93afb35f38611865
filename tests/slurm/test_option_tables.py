"""Every option of every Slurm command's table parses (never "unrecognized option"), the
commands act on every option they call implemented, and the doc is the tables'."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from phalanx.slurm import optiondoc, sacct, sinfo, sprio, squeue, sshare
from phalanx.slurm.commandline import (
    FLAG,
    IMPLEMENTED,
    OPTIONAL,
    REFUSED,
    CommandLineError,
    Option,
    OptionTable,
    Usage,
    parse_args,
)
from phalanx.slurm.jobtable import PHALANX_OWN, SALLOC, SBATCH, SRUN

DOC = Path(__file__).parents[2] / "docs" / "slurm-options.md"

# A value each option takes that its command accepts; "1" for the others.
SAMPLES = {
    "Format": "JobID",
    "accounts": "a",
    "clusters": "all",
    "constraints": "f",
    "delimiter": ",",
    "endtime": "now",
    "format": "%i",
    "gid": "0",
    "jobs": "1",
    "name": "x",
    "nodelist": "n[1-2]",
    "nodes": "n1",
    "partition": "gpu",
    "partitions": "gpu",
    "qos": "normal",
    "sort": "-i",
    "starttime": "now-1hours",
    "state": "PD",
    "states": "idle",
    "timelimit-max": "10",
    "timelimit-min": "1",
    "uid": "root",
    "units": "G",
    "user": "root",
    "users": "root",
}
QUERY_FORMATS = {"sacct": "JobID", "sshare": "Account"}
QUERY_STATES = {"squeue": "PD"}


def spellings(table: OptionTable) -> list[tuple[OptionTable, Option, list[str]]]:
    """Every way to write every option of ``table``: each long name and each letter, with a
    value where it takes one."""
    out = []
    for option in table.options.values():
        value = SAMPLES.get(option.name, "1")
        if option.name == "format":
            value = QUERY_FORMATS.get(table.prog, value)
        if option.name == "states":
            value = QUERY_STATES.get(table.prog, value)
        for name in (option.name, *option.aliases):
            if option.kind == FLAG:
                out.append((table, option, [f"--{name}"]))
            elif option.kind == OPTIONAL:
                out += [(table, option, [f"--{name}"]), (table, option, [f"--{name}={value}"])]
            else:
                out += [
                    (table, option, [f"--{name}={value}"]),
                    (table, option, [f"--{name}", value]),
                ]
        for letter in option.short:
            out.append(
                (table, option, [f"-{letter}"] if option.kind == FLAG else [f"-{letter}{value}"])
            )
    return out


CASES = [case for table in optiondoc.TABLES for case in spellings(table)]


@pytest.mark.parametrize(
    ("table", "option", "argv"),
    CASES,
    ids=[f"{table.prog} {' '.join(argv)}" for table, _, argv in CASES],
)
def test_every_option_parses(table: OptionTable, option: Option, argv: list[str]) -> None:
    if option.status == REFUSED:
        with pytest.raises(CommandLineError) as caught:
            parse_args(argv, table)
        assert caught.value.lines == [f"{table.prog}: error: --{option.name}: {option.note}"]
        return
    found, rest = parse_args(argv, table)
    assert rest == []
    assert [name for name, _ in found.pairs] == [option.name]


SLURM = [
    line.split()
    for line in (Path(__file__).parent / "slurm_22_05_options.txt").read_text().splitlines()
    if not line.startswith("#")
]
"""Slurm 22.05.8's own option tables, as its sources have them: command, name, takes, letter."""
TABLES = {table.prog: table for table in optiondoc.TABLES}


@pytest.mark.parametrize("prog", sorted(TABLES))
def test_a_table_has_every_option_slurm_has_and_no_other(prog: str) -> None:
    """... but Phalanx's own (``PHALANX_OWN``), each documented as such."""
    table = TABLES[prog]
    theirs = {name: (kind, letter) for cmd, name, kind, letter in SLURM if cmd == prog}
    assert set(theirs) == set(table.names) - PHALANX_OWN
    assert not PHALANX_OWN & set(theirs)
    for name in PHALANX_OWN & set(table.names):
        assert "Phalanx's own" in table.options[name].note
    for name, (kind, letter) in theirs.items():
        option = table.options[table.long_name(name, f"--{name}")]
        assert option.kind == kind, name
        assert letter == "-" or letter in table.shorts, name


def test_every_table_is_sorted_out_and_every_no_op_says_why() -> None:
    for table in optiondoc.TABLES:
        assert {"help", "usage", "version"} <= set(table.options), table.prog
        for option in table.options.values():
            assert option.status in ("implemented", "ignored", "refused")
            assert option.status == IMPLEMENTED or option.note, (table.prog, option.name)


QUERY: dict[str, tuple[Any, Callable[[list[str]], object]]] = {
    "sacct": (sacct, lambda argv: sacct._parse(argv, 1_800_000_000_000)),
    "squeue": (squeue, squeue._parse),
    "sinfo": (sinfo, sinfo._parse),
    "sprio": (sprio, sprio._parse),
    "sshare": (sshare, sshare._parse),
}


@pytest.mark.parametrize("prog", sorted(QUERY))
def test_a_query_command_acts_on_every_option_it_calls_implemented(prog: str) -> None:
    module, _ = QUERY[prog]
    table = next(t for t in optiondoc.TABLES if t.prog == prog)
    implemented = {n for n, o in table.options.items() if o.status == IMPLEMENTED}
    assert implemented - {"verbose"} == set(module._HANDLERS)


QUERY_CASES = [
    (table.prog, argv)
    for table in optiondoc.TABLES
    if table.prog in QUERY
    for _, option, argv in spellings(table)
    if option.status != REFUSED
]


@pytest.mark.parametrize(
    ("prog", "argv"), QUERY_CASES, ids=[f"{p} {' '.join(a)}" for p, a in QUERY_CASES]
)
def test_a_query_command_takes_every_option_with_a_good_value(prog: str, argv: list[str]) -> None:
    table = next(t for t in optiondoc.TABLES if t.prog == prog)
    [(name, _)] = parse_args(argv, table)[0].pairs
    try:
        QUERY[prog][1](argv)
    except Usage as exc:  # what --help, --usage, --version and -e print instead of running
        assert exc.status == 0
        assert name in ("help", "usage", "version", "helpformat")


@pytest.mark.parametrize("table", [SBATCH, SRUN, SALLOC], ids=lambda t: t.prog)
def test_the_job_commands_read_in_posix_order_and_exit_255(table: OptionTable) -> None:
    assert parse_args(["-N2", "job.sh", "-N", "3"], table)[1] == ["job.sh", "-N", "3"]
    with pytest.raises(CommandLineError) as caught:
        parse_args(["--foo"], table)
    assert caught.value.status == 255


def test_the_doc_is_the_tables() -> None:
    assert DOC.read_text() == optiondoc.render(), (
        "docs/slurm-options.md is stale: python -m phalanx.slurm.optiondoc > docs/slurm-options.md"
    )
