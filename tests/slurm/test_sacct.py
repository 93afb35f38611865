"""``sacct`` against Slurm's output (``/work/shared/slurm/reference/out``) on a live Phalanx,
and the calls submitit makes (``/work/shared/slurm/clients/calls.log``).

``out/91``-``94`` list every job of the reference scenario (``capture.py``): the ``ref_scene``
fixture submits the same command lines through the shims on the reference's sixteen nodes, and
the outputs are compared cell by cell, normalized only where they must differ (see ``_cell``).
"""

from __future__ import annotations

import os
import re
import shlex
from collections.abc import Iterator

import pytest
from slurm_cluster import NODES, YAML, reference, run, submit
from slurm_shell import Shell
from slurm_shell import reference as capture

from phalanx.server.localcluster import LocalCluster, cluster_yaml
from phalanx.slurm import acctfields, sacct
from phalanx.slurm.shims import write_shims

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


def test_every_field_has_a_value_and_the_long_list_is_known() -> None:
    assert set(acctfields.VALUES) == set(acctfields.FIELDS)
    assert set(acctfields.LONG_FIELDS.split(",")) <= set(acctfields.FIELDS)


def test_bad_options(scene: Scene) -> None:
    _, err, rc = _sacct(scene, ["--bogus"])
    assert rc == 1 and err.startswith("sacct: unrecognized option '--bogus'")
    _, err, rc = _sacct(scene, ["-S", "yesterday-ish"])
    assert (rc, err) == (1, "sacct: error: Invalid time specification: yesterday-ish\n")


def test_clusters_all_or_naming_this_one_and_other_no_ops_change_nothing(scene: Scene) -> None:
    base = ["-XPn", "-a", "-o", "JobID,State"]
    plain, err, rc = _sacct(scene, base)
    # Every job but the held one, never eligible (without -s, in the default window).
    assert (len(plain.splitlines()), err, rc) == (len(scene[1]) - 1, "", 0)
    for extra in (
        ["--clusters", "all"],
        ["-M", "elsewhere,phalanx"],
        ["--cluster=ALL"],
        ["-L"],
        ["--federation"],
        ["--local"],
        ["-D"],
        ["--noconvert"],
        ["-T"],
        ["-c"],
        ["--whole-hetjob=yes"],
    ):
        assert _sacct(scene, base + extra) == (plain, "", 0), extra
    # What a workflow manager's SLURM executor asks for its jobs' states.
    out, err, rc = _sacct(
        scene,
        [
            "-X",
            "--parsable2",
            "--clusters",
            "all",
            "--noheader",
            "--format=JobIdRaw,State",
            "--starttime",
            "now-2days",
            "--endtime",
            "now",
            "--name",
            "sleeper",
        ],
    )
    assert (out, err, rc) == (f"{scene[1]['running']}|RUNNING\n", "", 0)
    # Slurm asks its database for another cluster's jobs: none of them are here.
    assert _sacct(scene, [*base, "-M", "elsewhere"]) == ("", "", 0)


def test_filters_on_what_the_jobs_have(scene: Scene) -> None:
    jobs = scene[1]
    base = ["-XPn", "-a", "-o", "JobID"]
    ok = f"{jobs['ok']}\n"
    [partition] = {line for line in _sacct(scene, [*base[:2], "-o", "Partition"])[0].split()}
    assert _sacct(scene, [*base, "-j", str(jobs["ok"]), "-r", partition])[0] == ok
    assert _sacct(scene, [*base, "-j", str(jobs["ok"]), "--partition=nope"])[0] == ""
    assert _sacct(scene, [*base, "-j", str(jobs["ok"]), "-i", "1", "-I", "1-64"])[0] == ok
    assert _sacct(scene, [*base, "-j", str(jobs["ok"]), "--nnodes=2-4"])[0] == ""
    assert _sacct(scene, [*base, "-j", str(jobs["ok"]), "-N", "node1,node2"])[0] == ok
    assert _sacct(scene, [*base, "-j", str(jobs["ok"]), "--wckeys=any"])[0] == ""
    _, err, rc = _sacct(scene, ["-B"])
    assert (err, rc) == (
        "sacct: error: --batch-script: batch scripts are not kept for accounting\n",
        1,
    )


# ------------------------------------------------------------ the reference scenario, whole
RefScene = tuple[Shell, dict[int, int]]
"""The shell, and Phalanx's id of each job -> the reference's (an array's base id only)."""

# capture.py's submissions up to the sacct captures, in order, with the scancels between.
SUBMITTED = [
    "01_sbatch_filler",
    "02_sbatch_plain",
    "03_sbatch_parsable",
    "04_sbatch_parsable_named",
    "05_sbatch_pending_resources",
    "06_sbatch_pending_priority",
    "07_sbatch_held",
    "08_sbatch_dependency",
    "09_sbatch_array",
    "10_sbatch_begin",
]
# The submissions Slurm took among out/57-82. Those it refused still got an id there and a
# FAILED record (13-16, 19, 21, 22 in out/91-93); Phalanx refuses them without one.
ACCEPTED = [
    "62_sbatch_err_nodes_17",
    "63_sbatch_err_nodes_neg",
    "69_sbatch_err_time_too_long",
    "78_sbatch_err_bad_dep",
    "79_sbatch_err_bad_account",
    "80_sbatch_err_bad_qos",
]
REFUSED = {13, 14, 15, 16, 19, 21, 22}
ENV_JOBS = [
    "85_submit_env_1task",
    "86_submit_env_2task_gres2",
    "87_submit_env_2task_gpus_per_task",
    "88_submit_env_2node_gpus_per_node",
    "89_submit_env_array",
]
# What sacct shows of env_job.sh is its name and its one step, ``srun bash``.
ENV_JOB = "#!/bin/bash\nenv | grep ^SLURM_ | sort\nsrun bash -c 'echo $SLURM_PROCID'\n"


@pytest.fixture(scope="module")
def ref_scene(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RefScene]:
    files = tmp_path_factory.mktemp("sacct-reference")
    bin_dir, work = files / "bin", files / "work"
    write_shims(bin_dir)
    work.mkdir()
    work.chmod(0o755)
    (work / "env_job.sh").write_text(ENV_JOB)
    with LocalCluster(tmp_path_factory.mktemp("phalanx"), YAML) as cluster:
        shell = Shell(cluster, bin_dir, work)
        ours: dict[str, int] = {}  # reference id -> ours

        def submit_as(name: str, stdin: str = "") -> int:
            theirs = capture(name)
            command = re.sub(
                r"afterok:(\d+)", lambda m: f"afterok:{ours.get(m[1], m[1])}", theirs.command
            )
            done = shell.run(command, stdin)
            assert done.rc == 0, done
            ours[theirs.stdout.split()[-1]] = job = int(done.stdout.split()[-1])
            return job

        def scancel_as(name: str) -> None:
            theirs = capture(name)
            # Job ids, not the task index of ``9_9``.
            command = re.sub(r"(?<![\d_])\d+", lambda m: str(ours[m[0]]), theirs.command)
            done = shell.run(command)
            assert (done.stdout, done.stderr, done.rc) == (theirs.stdout, theirs.stderr, theirs.rc)

        cluster.wait([submit_as(SUBMITTED[0])], ("RUNNING",), final=False)
        for name in SUBMITTED[1:]:
            submit_as(name)
        cluster.wait([ours["2"]], ("RUNNING",), final=False)
        for name in ("49_scancel_filler", "50_scancel_array_task", "55_scancel_ok"):
            scancel_as(name)
        for name in ACCEPTED:
            submit_as(name)
        submit_as("82_sbatch_stdin_script", "#!/bin/bash\n#SBATCH -J fromstdin\ntrue\n")
        env = [submit_as(name) for name in ENV_JOBS]
        # env[-1] is the first task of the array 3-4; the next id is its other task.
        cluster.wait([*env, env[-1] + 1], ("COMPLETED",), timeout=120)
        ended = [ours[i] for i in ("18", "20", "23", "24", "25", "26")]
        cluster.wait(ended, ("COMPLETED",))
        cluster.wait([ours[i] for i in ("5", "6")], ("RUNNING",), final=False)
        yield shell, {job: int(ref) for ref, job in ours.items()}


def _cells(text: str, parsable: bool) -> tuple[list[str], list[list[str]]]:
    """The header lines, and each row's cells (with their padding, in a table)."""
    lines = text.splitlines()
    if parsable:
        return lines[:1], [line.split("|") for line in lines[1:]]
    spans = _spans(lines[1])
    return lines[:2], [[line[a:b] for a, b in spans] for line in lines[2:]]


def _spans(dashes: str) -> list[tuple[int, int]]:
    return [m.span() for m in re.finditer(r"-+", dashes)]


def _cell(name: str, value: str, job: int) -> str:
    """One cell's text, normalized for what must differ; ``job``: the row's reference id."""
    text = value.strip()
    if name in ("Elapsed", "Start", "End") and text != "Unknown":
        text = "TIME"
    elif name == "NodeList":
        text = NODES.sub("NODES", text)  # Phalanx places the jobs elsewhere
    elif name == "State":
        # The reference's scenario ran as root: cancelled by uid 0.
        text = text.replace(f"CANCELLED by {os.getuid()}", "CANCELLED by 0")
    elif name == "Account" and text == "nosuchacct":
        # Slurm, not enforcing associations, charged `-A nosuchacct` to the user's default
        # account (root); Phalanx keeps the account asked for.
        text = "root"
    if name == "AllocTRES" and job != 4:
        # The reference's DefMemPerCPU=8000 gave every job memory; Phalanx has no default,
        # so only train_llm (--mem=64G) has memory here.
        text = re.sub(r",mem=[^,]*", "", text)
    return text


def _normalized(text: str, parsable: bool, ids: dict[int, int]) -> tuple[list[str], list[str]]:
    """The header lines, and each row's cells joined by ``|``: job ids as the reference's
    (``ids``: ours -> theirs), other cells by ``_cell``, in a table padded as they were."""
    head, table = _cells(text, parsable)
    names = head[0].replace("|", " ").split()
    titles = names if parsable else [head[0][a:b] for a, b in _spans(head[1])]
    rows = []
    for cells in table:
        job = re.match(r"\s*(\d+)", cells[0])
        assert job is not None, cells
        ref = ids.get(int(job[1]), int(job[1]))
        cells[0] = cells[0].replace(job[1], str(ref), 1)
        if ref in REFUSED:
            continue
        out = []
        for name, title, cell in zip(names, titles, cells, strict=False):
            value = _cell(name, cell, ref)
            if not parsable:  # as the title is justified (or the cell, a title filling it)
                right = title[:1] == " " or (title[-1:] != " " and cell[:1] == " ")
                value = value.rjust(len(cell)) if right else value.ljust(len(cell))
            out.append(value)
        rows.append("|".join(out))
    return head, rows


@pytest.mark.parametrize(
    "name",
    ["91_sacct_default", "92_sacct_default_allusers_X", "93_sacct_parsable2", "94_sacct_parsable"],
)
def test_the_reference_scenario_lists_as_slurm_lists_it(ref_scene: RefScene, name: str) -> None:
    shell, ids = ref_scene
    theirs = capture(name)
    ours = shell.run(theirs.command)
    assert (ours.stderr, ours.rc) == (theirs.stderr, theirs.rc)
    parsable = "--parsable" in theirs.command
    (head, rows), (want_head, want_rows) = (
        _normalized(ours.stdout, parsable, ids),
        _normalized(theirs.stdout, parsable, {}),
    )
    assert head == want_head
    assert "\n".join(rows) == "\n".join(want_rows)
    if not parsable:
        width = len(theirs.stdout.splitlines()[0])
        assert {len(line) for line in ours.stdout.splitlines()} == {width}


def test_jobs_never_eligible_show_when_asked_for(ref_scene: RefScene) -> None:
    """Not in a time window (``-j`` alone), as in Slurm: the held job cancelled (7), the one
    waiting on a dependency (8), and the array's pending tasks with their limit (9)."""
    shell, ids = ref_scene
    ours = {ref: job for job, ref in ids.items()}
    done = shell.run(f"sacct -X -P -n -o JobID,State -j {ours[7]},{ours[8]},{ours[9]}")
    array, by = ours[9], f"CANCELLED by {os.getuid()}"
    assert (done.stdout.splitlines(), done.rc) == (
        [
            f"{ours[7]}|{by}",
            f"{ours[8]}|PENDING",
            f"{array}_0|RUNNING",
            f"{array}_1|RUNNING",
            f"{array}_[2-8%2]|PENDING",
            f"{array}_9|{by}",
        ],
        0,
    )
