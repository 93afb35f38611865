"""``sinfo`` against Slurm's output (``/work/shared/slurm/reference/out``) on a live Phalanx
with the jobs the reference was captured with."""

from __future__ import annotations

import re
import shlex
import time
from collections.abc import Iterator

import pytest
from slurm_cluster import reference, reference_jobs, run, start

from phalanx.server.localcluster import LocalCluster
from phalanx.slurm import sinfo


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    state = tmp_path_factory.mktemp("sinfo")
    work = state / "work"
    work.mkdir()
    work.chmod(0o755)
    local = start(state)
    try:
        ids = reference_jobs(local, work)
        running = [i for i, ref in ids.items() if ref in (1, 2, 3, 4, 6)]
        local.wait(running, ("RUNNING",), final=False)
        yield local
    finally:
        local.stop()


def _sinfo(cluster: LocalCluster, argv: list[str]) -> tuple[str, str, int]:
    return run(sinfo.main, argv, cluster.state_dir)


def test_summary_matches_exactly(cluster: LocalCluster) -> None:
    command, out, _, err, rc = reference("29_sinfo_summary.txt")
    assert _sinfo(cluster, shlex.split(command)[1:]) == (out, err, rc)


def test_default(cluster: LocalCluster) -> None:
    command, _, lines, _, _ = reference("27_sinfo_default.txt")
    got, err, rc = _sinfo(cluster, shlex.split(command)[1:])
    # Phalanx calls a node whose GPUs are all taken allocated; Slurm (CPUs) calls n16 mixed.
    assert (got.splitlines()[0], err, rc) == (lines[0], "", 0)
    assert got.splitlines()[1:] == ["gpu*         up   infinite     16  alloc n[01-16]"]


def test_node_long(cluster: LocalCluster) -> None:
    _, _, lines, _, _ = reference("28_sinfo_N_l.txt")
    got, _, _ = _sinfo(cluster, ["-N", "-l"])
    rows = got.splitlines()
    time.strptime(rows[0], "%a %b %d %H:%M:%S %Y")
    assert rows[1] == lines[1]
    # Sockets and cores per socket are not on the wire: S:C:T is 1:64:1, not 2:32:1. And
    # n16, all GPUs taken, is allocated to Phalanx where Slurm (13 of 64 CPUs) says mixed.
    want = [r.replace("    mixed", "allocated") for r in lines[2:]]
    assert [r.replace("1:64:1", "2:32:1") for r in rows[2:]] == want


def test_node_format_with_gres(cluster: LocalCluster) -> None:
    command, _, lines, _, _ = reference("30_sinfo_gres.txt")
    got, _, _ = _sinfo(cluster, shlex.split(command)[1:])
    rows = got.splitlines()
    assert rows[0] == lines[0] and len(rows) == len(lines)
    # FREE_MEM: what the node's agent last said (MemAvailable), as slurmd reports it.
    assert re.fullmatch(r"n01 gpu:h100:8 \S+ 512000 \d+ allocated", rows[1]), rows[1]


def test_long_Format(cluster: LocalCluster) -> None:
    command, _, lines, _, _ = reference("31_sinfo_O.txt")
    got, _, _ = _sinfo(cluster, shlex.split(command)[1:])
    rows = got.splitlines()
    assert rows[0] == lines[0]
    assert rows[1].startswith("n[01-16]            gpu:h100:8               gpu:h100:8(IDX:0-7) ")
    assert rows[1].endswith("/0/1024       allocated           ")


def test_filters_and_errors(cluster: LocalCluster) -> None:
    got, _, _ = _sinfo(cluster, ["-h", "-N", "-n", "n[03-04]", "-o", "%N %t"])
    assert got == "n03 alloc\nn04 alloc\n"
    got, _, _ = _sinfo(cluster, ["-h", "-t", "idle"])
    # No idle node: Slurm still prints the partition, with 0 nodes (drain_reference.txt).
    assert got == "gpu*         up   infinite      0    n/a \n"
    got, _, _ = _sinfo(cluster, ["-h", "-p", "nope"])
    assert got == ""
    _, err, rc = _sinfo(cluster, ["--bogus"])
    assert rc == 1 and err.startswith("sinfo: unrecognized option '--bogus'")


def test_one_cluster_options_and_no_ops_change_nothing(cluster: LocalCluster) -> None:
    plain = _sinfo(cluster, ["-N", "-h"])
    for extra in (["-M", "all"], ["--cluster=phalanx"], ["-a"], ["--hide"], ["-e"], ["--local"]):
        assert _sinfo(cluster, ["-N", "-h", *extra]) == plain, extra
    for extra in (["--federation"], ["--noconvert"], ["-S", "P"], ["-i", "5"], ["-v"]):
        assert _sinfo(cluster, ["-N", "-h", *extra]) == plain, extra
    _, err, rc = _sinfo(cluster, ["-T"])
    assert (err, rc) == ("sinfo: error: --reservation: Phalanx has no reservations\n", 1)
