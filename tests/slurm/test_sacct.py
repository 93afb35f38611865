"""``sacct`` against Slurm's output (``/work/shared/slurm/reference/out``) on a live Phalanx,
and the calls submitit makes (``/work/shared/slurm/clients/calls.log``)."""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterator

import pytest
from slurm_cluster import reference, run, submit

from phalanx.server.localcluster import LocalCluster, cluster_yaml
from phalanx.slurm import sacct

Scene = tuple[LocalCluster, dict[str, int]]


@pytest.fixture(scope="module")
def scene(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Scene]:
    state = tmp_path_factory.mktemp("sacct")
    work = state / "work"
    work.mkdir()
    work.chmod(0o755)
    cluster = LocalCluster(state, cluster_yaml(2, 8)).start()
    try:
        [failed] = submit(cluster, work, command=["sh", "-c", "exit 3"])
        [ok] = submit(cluster, work, command=["true"], name="wrap")
        [running] = submit(cluster, work, command=["sleep", "30"], name="sleeper")
        [held] = submit(cluster, work, command=["true"], hold=True)
        [doomed] = submit(cluster, work, command=["sleep", "30"])
        cluster.wait([failed, ok])
        cluster.wait([running, doomed], ("RUNNING",), final=False)
        cluster.call("DELETE", f"/v1/jobs/{doomed}")
        cluster.wait([doomed])
        yield (
            cluster,
            {"failed": failed, "ok": ok, "running": running, "held": held, "doomed": doomed},
        )
    finally:
        cluster.stop()


def _sacct(scene: Scene, argv: list[str]) -> tuple[str, str, int]:
    return run(sacct.main, argv, scene[0].state_dir)


def test_failed_job(scene: Scene) -> None:
    command, out, _, err, rc = reference("100_sacct_failed_job.txt")
    job = scene[1]["failed"]
    argv = [str(job) if a == "34" else a for a in shlex.split(command)[1:]]
    got = _sacct(scene, argv)
    assert got == (out.replace("34", str(job)), err, rc)


@pytest.mark.parametrize("capture", ["97_sacct_unknown_job.txt", "98_sacct_bad_field.txt"])
def test_unknown_job_and_bad_field(scene: Scene, capture: str) -> None:
    command, out, _, err, rc = reference(capture)
    assert _sacct(scene, shlex.split(command)[1:]) == (out, err, rc)


def test_default_table_header_and_widths(scene: Scene) -> None:
    _, _, lines, _, _ = reference("91_sacct_default.txt")
    out, _, rc = _sacct(scene, [])
    got = out.splitlines()
    assert rc == 0 and got[:2] == lines[:2]
    assert all(len(line) == len(lines[0]) for line in got)
    ok = scene[1]["ok"]
    assert f"{ok:<12d}       wrap       main       root          1  COMPLETED      0:0 " in got


def test_cancelled_job_names_who_and_its_batch_step_the_signal(scene: Scene) -> None:
    job = scene[1]["doomed"]
    out, _, _ = _sacct(scene, ["--parsable", "-o", "JobID,State,ExitCode", "-j", str(job)])
    # The batch step shows the signal that ended it: Slurm's 15, or Phalanx's 9 after grace.
    assert re.fullmatch(
        rf"JobID\|State\|ExitCode\|\n{job}\|CANCELLED by 0\|0:0\|\n"
        rf"{job}\.batch\|CANCELLED\|0:(15|9)\|\n",
        out,
    )
    out, _, _ = _sacct(scene, ["-j", str(job), "-o", "State"])
    assert out.splitlines()[2] == "CANCELLED+ "


def test_submitit_polls(scene: Scene) -> None:
    jobs = scene[1]
    argv = ["-o", "JobID,State,NodeList", "--parsable2", "-j", str(jobs["ok"]), "-j"]
    out, err, rc = _sacct(scene, [*argv, f"{jobs['held']}"])
    assert (err, rc) == ("", 0)
    ok, held = jobs["ok"], jobs["held"]
    assert out == (
        f"JobID|State|NodeList\n{ok}|COMPLETED|node1\n{ok}.batch|COMPLETED|node1\n"
        f"{held}|PENDING|None assigned\n"
    )


def test_bundled_flags_and_filters(scene: Scene) -> None:
    jobs = scene[1]
    out, _, rc = _sacct(scene, ["-XPnj", f"{jobs['running']},{jobs['ok']}", "-o", "jobid,state"])
    assert (out, rc) == (f"{jobs['ok']}|COMPLETED\n{jobs['running']}|RUNNING\n", 0)
    out, _, _ = _sacct(scene, ["-XPn", "--name", "sleeper", "-o", "JobName", "-a"])
    assert out == "sleeper\n"
    out, _, _ = _sacct(scene, ["-XPn", "-s", "F", "-o", "ExitCode", "-S", "now-1hour"])
    assert out == "3:0\n"
    out, _, _ = _sacct(scene, ["-XPn", "-o", "JobID", "-E", "2000-01-01"])
    assert out == ""
    out, _, _ = _sacct(scene, ["-XPn", "-o", "JobID", "-u", "nobody"])
    assert out == ""


def test_fields_with_widths(scene: Scene) -> None:
    job = scene[1]["ok"]
    out, _, _ = _sacct(scene, ["-j", str(job), "-X", "-o", "JobID%4,JobName%2,Elapsed,Start"])
    head, dashes, row = out.splitlines()
    assert head.startswith("JobI Jo    Elapsed ") and dashes.startswith("---- -- ---------- ")
    assert row.startswith(f"{str(job)[:4]:<4} w+   00:00:0")


def test_bad_options(scene: Scene) -> None:
    _, err, rc = _sacct(scene, ["--bogus"])
    assert rc == 1 and err.startswith("sacct: unrecognized option '--bogus'")
    _, err, rc = _sacct(scene, ["-S", "yesterday-ish"])
    assert (rc, err) == (1, "sacct: error: Invalid time specification: yesterday-ish\n")
