"""``sprio`` against Slurm's output (``out/46``, ``out/47``) on a live Phalanx with the
reference's jobs. Headers and column layout must be Slurm's exactly; the numbers are
Phalanx's own (its weights, its ``short`` factor in SITE), so the rows are compared for
the pending job both list (the reference's job 5), with the figures masked."""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterator
from pathlib import Path

import pytest
from slurm_cluster import map_ids, reference, reference_jobs, run, start

from phalanx.server.localcluster import LocalCluster
from phalanx.slurm import sprio

Scene = tuple[LocalCluster, dict[int, int]]


@pytest.fixture(scope="module")
def scene(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Scene]:
    state = tmp_path_factory.mktemp("sprio")
    work = state / "work"
    work.mkdir()
    work.chmod(0o755)
    cluster = start(state)
    try:
        ids = reference_jobs(cluster, work)
        running = [i for i, ref in ids.items() if ref in (1, 2, 3, 4, 6)]
        cluster.wait(running, ("RUNNING",), final=False)
        yield cluster, ids
    finally:
        cluster.stop()


def _sprio(scene: Scene, argv: list[str]) -> tuple[str, str, int]:
    return run(sprio.main, argv, scene[0].state_dir)


def _mask(line: str) -> str:
    """Every number after the partition becomes N, right-aligned in its field."""
    head, rest = line[:26], line[26:]
    return head + re.sub(r"\d+", lambda m: "N".rjust(len(m[0])), re.sub(r"\broot\b", "USER", rest))


def _mask_width(line: str) -> str:
    return re.sub(r" +N", lambda m: " " * 3 + "N", _mask(line))


@pytest.mark.parametrize("capture", ["47_sprio_default.txt", "46_sprio.txt"])
def test_against_reference(scene: Scene, capture: str) -> None:
    command, _out, lines, err, rc = reference(capture)
    got, got_err, got_rc = _sprio(scene, shlex.split(command)[1:])
    assert (got_err, got_rc) == (err, rc)
    have = got.splitlines()
    assert have[0] == lines[0]
    # The reference lists only job 5 (its array waits on a task limit and is not listed).
    [row] = [map_ids(x, scene[1]) for x in have[1:] if map_ids(x, scene[1]).split()[0] == "5"]
    assert len(row) == len(lines[1])
    user = getpass()
    assert _mask_width(row.replace(user.rjust(8)[:8], "root".rjust(8))) == _mask_width(lines[1])
    for line in have[1:]:
        assert len(line) == len(lines[0]) or len(line) == len(lines[1])


def getpass() -> str:
    import getpass as gp

    return gp.getuser()


def test_weighted_factors_add_up(scene: Scene) -> None:
    got, _, rc = _sprio(scene, ["-h", "-o", "%i %Y %S %A %F %J %P %Q"])
    assert rc == 0
    for line in got.splitlines():
        _, total, *parts = (int(x) for x in line.split())
        assert abs(total - sum(parts)) <= len(parts)


def test_filters(scene: Scene) -> None:
    bigjob = min(i for i, r in scene[1].items() if r == 5)
    got, _, _ = _sprio(scene, ["-h", "-j", str(bigjob)])
    assert [x.split()[0] for x in got.splitlines()] == [str(bigjob)]
    got, _, rc = _sprio(scene, ["-j", "999999"])
    assert (got, rc) == ("Unable to find jobs matching user/id(s) specified\n", 0)
    got, _, _ = _sprio(scene, ["-u", "nobody"])
    assert got == "Unable to find jobs matching user/id(s) specified\n"
    got, _, _ = _sprio(scene, ["-u", getpass()])
    assert got.splitlines()[0].split()[:3] == ["JOBID", "PARTITION", "USER"]


def test_bad_option(scene: Scene) -> None:
    _, err, rc = _sprio(scene, ["--bogus"])
    assert rc == 1 and "unrecognized option '--bogus'" in err


def test_one_cluster_options_and_no_ops_change_nothing(scene: Scene) -> None:
    plain = _sprio(scene, ["-h"])
    for extra in (["-M", "all"], ["--federation"], ["--local"], ["--sib"], ["-S", "y"], ["-v"]):
        assert _sprio(scene, ["-h", *extra]) == plain, extra
    assert _sprio(scene, ["-h", "-j"]) == plain
    _, err, rc = _sprio(scene, ["-w"])
    assert (err, rc) == ("sprio: error: --weights: the configured weights are not published\n", 1)


def test_shim(scene: Scene, tmp_path: Path) -> None:
    import os
    import subprocess

    from phalanx.slurm.shims import write_shims

    write_shims(tmp_path)
    env = {"PATH": os.environ.get("PATH", ""), "PHALANX_STATE_DIR": str(scene[0].state_dir)}
    done = subprocess.run(
        [str(tmp_path / "sprio")], env=env, capture_output=True, text=True, check=False
    )
    assert done.returncode == 0
    assert done.stdout.splitlines()[0] == reference("47_sprio_default.txt")[2][0]
