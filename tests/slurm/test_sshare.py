"""``sshare`` against Slurm's output (``out/48``) on a live Phalanx whose account tree is the
reference's (``research`` under ``root``), with jobs of this user in both accounts.

Header, underline, column widths, the tree's order and indentation and the root row are
Slurm's exactly. User rows differ by design: Phalanx gives users no shares of their own
(Slurm's ``Fairshare=parent``), so RawShares says ``parent`` where the reference's user
associations have 1 share, and ``research`` is root's only child (NormShares 1, not 0.5)."""

from __future__ import annotations

import getpass
from collections.abc import Iterator
from pathlib import Path

import pytest
from slurm_cluster import YAML, reference, run, submit

from phalanx.server.localcluster import LocalCluster
from phalanx.slurm import sshare

CONFIG = YAML + "accounts:\n  - {name: research, parent: root}\n"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    state = tmp_path_factory.mktemp("sshare")
    work = state / "work"
    work.mkdir()
    work.chmod(0o755)
    local = LocalCluster(state, CONFIG).start()
    try:
        jobs = submit(local, work, command=["true"], name="a")
        jobs += submit(local, work, command=["true"], name="b", account="research")
        local.wait(jobs)
        yield local
    finally:
        local.stop()


def _sshare(cluster: LocalCluster, argv: list[str]) -> tuple[str, str, int]:
    return run(sshare.main, argv, cluster.state_dir)


def _columns(line: str) -> list[str]:
    """The fields of a row, cut where Slurm's columns are (20 10 10 11 11 13 10, + spaces)."""
    out, pos = [], 0
    for width in (20, 10, 10, 11, 11, 13, 10):
        out.append(line[pos : pos + width])
        pos += width + 1
    return out


def test_against_reference(cluster: LocalCluster) -> None:
    command, _out, lines, err, rc = reference("48_sshare.txt")
    got, got_err, got_rc = _sshare(cluster, command.split()[1:])
    assert (got_err, got_rc) == (err, rc)
    have = got.splitlines()
    assert have[:2] == lines[:2]
    assert len(have) == len(lines)
    assert all(len(x) == len(lines[0]) for x in have)
    # The root row: no shares, effective usage 1 by definition (no usage in either run).
    assert have[2] == lines[2]
    me = getpass.getuser()
    for mine, theirs in zip(have[3:], lines[3:], strict=True):
        a, b = _columns(mine), _columns(theirs)
        assert a[0] == b[0]  # account, indented by depth
        assert a[1].strip() == (me if b[1].strip() else "")
        assert a[2].strip() == ("parent" if b[1].strip() else b[2].strip())
        assert a[6].strip() == b[6].strip()  # FairShare: 1 on user rows, none on accounts


def test_parsable2_and_noheader(cluster: LocalCluster) -> None:
    got, _, rc = _sshare(cluster, ["-a", "-P"])
    assert rc == 0
    lines = got.splitlines()
    assert lines[0] == "Account|User|RawShares|NormShares|RawUsage|EffectvUsage|FairShare"
    assert lines[1] == "root|||0.000000|0|1.000000|"
    # No trailing separator: an account row ends in "|" only because its FairShare is empty.
    assert all(line.count("|") == 6 for line in lines)
    assert not lines[0].endswith("|")
    got, _, _ = _sshare(cluster, ["-a", "-P", "-h"])
    assert got.splitlines() == lines[1:]


def test_only_my_user_rows_without_all(cluster: LocalCluster) -> None:
    got, _, _ = _sshare(cluster, ["-P", "-u", "nobody"])
    assert [line.split("|")[1] for line in got.splitlines()[1:]] == ["", ""]
    got, _, _ = _sshare(cluster, ["-P"])
    assert {line.split("|")[1] for line in got.splitlines()[1:]} == {"", getpass.getuser()}


def test_long(cluster: LocalCluster) -> None:
    got, _, rc = _sshare(cluster, ["-a", "-l"])
    assert rc == 0
    assert got.split("\n", 1)[0].split() == [
        "Account",
        "User",
        "RawShares",
        "NormShares",
        "RawUsage",
        "NormUsage",
        "EffectvUsage",
        "FairShare",
        "LevelFS",
        "GrpTRESMins",
        "TRESRunMins",
    ]


def test_shim(cluster: LocalCluster, tmp_path: Path) -> None:
    import os
    import subprocess

    from phalanx.slurm.shims import write_shims

    write_shims(tmp_path)
    env = {"PATH": os.environ.get("PATH", ""), "PHALANX_STATE_DIR": str(cluster.state_dir)}
    done = subprocess.run(
        [str(tmp_path / "sshare"), "-a"], env=env, capture_output=True, text=True, check=False
    )
    assert done.returncode == 0
    assert done.stdout.splitlines()[:2] == reference("48_sshare.txt")[2][:2]


def test_users_only_drops_the_account_rows(cluster: LocalCluster) -> None:
    everything, _, _ = _sshare(cluster, ["-a", "-P", "-n"])
    wanted = [line for line in everything.splitlines() if line.split("|")[1]]
    assert wanted and len(wanted) < len(everything.splitlines())
    for argv in (["-a", "-U", "-P", "-n"], ["--all", "--Users", "--parsable2", "--noheader"]):
        out, err, rc = _sshare(cluster, argv)
        assert (out.splitlines(), err, rc) == (wanted, "", 0)


def test_format_clusters_and_no_ops(cluster: LocalCluster) -> None:
    out, err, rc = _sshare(cluster, ["-a", "-P", "-o", "acc,User,Eff", "-M", "all", "-m", "-v"])
    head, *rows = out.splitlines()
    assert (head, err, rc) == ("Account|User|EffectvUsage", "", 0)
    assert rows and all(len(row.split("|")) == 3 for row in rows)
    out, _, _ = _sshare(cluster, ["-a", "-o", "Account%8,User", "-n"])
    assert out.splitlines()[0] == f"{'root':<8} {'':>10} "
    _, err, rc = _sshare(cluster, ["-o", "Nope"])
    assert (err, rc) == ('sshare: error: Invalid field requested: "Nope"\n', 1)
    _, err, rc = _sshare(cluster, ["-M", "elsewhere"])
    assert rc == 1 and err.startswith("sshare: error: 'elsewhere' can't be reached now")


def test_a_workflow_managers_default_account_query(cluster: LocalCluster) -> None:
    """What a workflow manager's SLURM executor asks to find the caller's account."""
    out, err, rc = _sshare(cluster, ["-U", "--format", "Account%256", "--noheader"])
    everything, _, _ = _sshare(cluster, ["-a", "-P", "-n"])
    mine = {row.split("|")[0].strip() for row in everything.splitlines() if row.split("|")[1]}
    assert (err, rc) == ("", 0)
    assert all(len(line) == 257 for line in out.splitlines())
    assert "research" in mine
    assert {line.strip() for line in out.splitlines()} == mine


def test_user_association_without_jobs_is_listed(cluster: LocalCluster) -> None:
    """Slurm's sshare lists user associations (``sacctmgr add user``), jobs or not. Last in
    the file: it adds an association to the module's cluster."""
    from phalanx.slurm import sacctmgr

    before, _, _ = _sshare(cluster, ["-a", "-P"])
    assert "|bob|" not in before
    _, err, rc = run(sacctmgr.main, ["-i", "add", "user", "bob", "account=research"],
                     cluster.state_dir)  # fmt: skip
    assert (err, rc) == ("", 0)
    got, _, rc = _sshare(cluster, ["-a", "-P"])
    assert rc == 0
    lines = got.splitlines()
    row = next(line for line in lines if line.split("|")[:2] == ["  research", "bob"])
    accounts = [line.split("|")[0] for line in lines]
    assert lines.index(row) > accounts.index(" research")  # under its account's row
    assert row.split("|")[2] == "parent"
    got, _, rc = _sshare(cluster, ["-U", "-u", "bob", "-P", "-n"])
    assert rc == 0 and [line.split("|")[1] for line in got.splitlines()] == ["bob"]
