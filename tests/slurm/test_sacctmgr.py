"""``sacctmgr show assoc|qos`` against the reference Slurm 22.05 (``sacctmgr_reference.txt``,
captured with the account tree, associations and QOS that ``CONFIG`` sets up here): every
line, byte for byte, for the default columns, ``tree``, ``-P``, ``-p``, ``-n``, ``format=``
with and without ``%N`` widths, and ``where``."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from slurm_cluster import YAML, run

from phalanx.server.localcluster import LocalCluster
from phalanx.slurm import sacctmgr

CONFIG = (
    YAML
    + """accounts:
  - {name: research, parent: root}
  - {name: teama, shares: 2}
  - {name: teamb, parent: teama}
associations:
  - {account: research, user: root}
  - {account: teama, GrpTRES: "gres/gpu=16", GrpJobs: 8, MaxJobs: 4, MaxSubmitJobs: 10}
  - {account: teama, user: alice, MaxJobs: 2, GrpTRES: "cpu=8,gres/gpu=4"}
  - {account: teamb, user: root}
qos:
  - {name: gpu16, priority: 10, GrpTRES: "gres/gpu=16", MaxTRESPerUser: "gres/gpu=8",
     MaxJobsPerUser: 3, MaxSubmitJobsPerUser: 5}
"""
)


def captures() -> list[tuple[str, list[str], int]]:
    """(arguments, output lines, exit status) of each capture."""
    text = (Path(__file__).parent / "sacctmgr_reference.txt").read_text()
    out = []
    for block in text.split("$ sacctmgr ")[1:]:
        command, _, rest = block.partition("\n")
        body, _, rc = rest.rpartition("--- rc=")
        out.append((command, body.splitlines(), int(rc.strip())))
    return out


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    local = LocalCluster(tmp_path_factory.mktemp("sacctmgr"), CONFIG).start()
    try:
        yield local
    finally:
        local.stop()


@pytest.mark.parametrize(("command", "lines", "rc"), captures(), ids=lambda v: str(v)[:40])
def test_against_reference(cluster: LocalCluster, command: str, lines: list[str], rc: int) -> None:
    out, err, got_rc = run(sacctmgr.main, command.split(), cluster.state_dir)
    assert (got_rc, err) == (rc, "")
    assert out.splitlines() == lines


def test_bad_entity_and_field_are_refused_as_slurm_refuses_them(cluster: LocalCluster) -> None:
    out, err, rc = run(sacctmgr.main, ["show", "nosuch"], cluster.state_dir)
    assert (out, rc) == ("", 1)
    assert err.startswith("No valid entity in list command\n")
    out, err, rc = run(sacctmgr.main, ["show", "assoc", "format=bogus"], cluster.state_dir)
    assert (out, err, rc) == ("", "Unknown field 'bogus'\n", 1)


def changes() -> list[tuple[str, list[str], int]]:
    text = (Path(__file__).parent / "sacctmgr_changes_reference.txt").read_text()
    out = []
    for block in text.split("$ sacctmgr ")[1:]:
        command, _, rest = block.partition("\n")
        body, _, rc = rest.rpartition("--- rc=")
        out.append((command, body.splitlines(), int(rc.strip())))
    return out


def test_changes_print_what_slurm_prints_and_take_effect(cluster: LocalCluster) -> None:
    """The reference's sequence of add, modify and delete, in order (each depends on the
    ones before), then the association it made is gone again."""
    for command, lines, rc in changes():
        out, err, got_rc = run(sacctmgr.main, command.split(), cluster.state_dir)
        assert got_rc == rc, (command, out, err)
        assert (out + err).splitlines() == lines, command
        if command.startswith("-i modify user bob set GrpTRES"):
            shown, _, _ = run(
                sacctmgr.main,
                ["-P", "-n", "show", "assoc", "user=bob", "format=account,user,grptres,maxjobs"],
                cluster.state_dir,
            )
            assert shown == "teamc|bob|gres/gpu=2|3\n"
    shown, _, _ = run(
        sacctmgr.main, ["-P", "-n", "show", "assoc", "account=teamc"], cluster.state_dir
    )
    assert shown == ""
