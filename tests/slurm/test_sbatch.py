"""sbatch against a real Phalanx: the reference Slurm's output for the same command lines,
then what the submitted jobs do."""

from __future__ import annotations

import re
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from slurm_shell import Capture, Shell, normalized, reference

from phalanx.client.wirecall import ControllerUnreachable
from phalanx.slurm import sbatch

# Captures in the order they were taken: some refer to the ids of earlier ones.
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
ERRORS = [
    "57_sbatch_err_gres_999",
    "58_sbatch_err_gpus_999",
    "59_sbatch_err_gres_badtype",
    "60_sbatch_err_gres_unknown",
    "61_sbatch_err_nodes_0",
    "62_sbatch_err_nodes_17",
    "63_sbatch_err_nodes_neg",
    "64_sbatch_err_nodes_range_bad",
    "65_sbatch_err_ntasks_0",
    "66_sbatch_err_gres_syntax",
    "67_sbatch_err_bad_array",
    "68_sbatch_err_bad_mem_syntax",
    "69_sbatch_err_time_too_long",
    "70_sbatch_err_unknown_opt",
    "71_sbatch_err_bad_time",
    "72_sbatch_err_bad_time2",
    "73_sbatch_err_bad_partition",
    "74_sbatch_err_bad_mem",
    "75_sbatch_err_bad_cpus",
    "76_sbatch_err_no_shebang",
    "77_sbatch_err_missing_file",
    "78_sbatch_err_bad_dep",
    "79_sbatch_err_bad_account",
    "80_sbatch_err_bad_qos",
    "81_sbatch_err_wrap_and_script",
    "82_sbatch_stdin_script",
    "99_sbatch_failing",
]
STDIN = {"82_sbatch_stdin_script": "#!/bin/sh\n#SBATCH -J fromstdin\ntrue\n"}
_ids: dict[str, str] = {}
"""Reference job id -> this cluster's id for the same submission."""


def same(ours: Capture, theirs: Capture) -> None:
    assert (normalized(ours.stdout), ours.stderr, ours.rc) == (
        normalized(theirs.stdout),
        theirs.stderr,
        theirs.rc,
    ), ours.command


def submitted_id(capture: Capture) -> str:
    return capture.stdout.split()[-1]


def test_submissions_print_what_slurm_prints(shell: Shell) -> None:
    for name in SUBMITTED:
        theirs = reference(name)
        command = theirs.command
        for ref_id, our_id in _ids.items():
            command = command.replace(f"afterok:{ref_id}", f"afterok:{our_id}")
        ours = shell.run(command)
        same(ours, theirs)
        _ids[submitted_id(theirs)] = submitted_id(ours)
    jobs = {j["name"]: j for j in shell.cluster.call("GET", "/v1/jobs")["jobs"]}
    assert jobs["filler"]["nodes_requested"] == 15
    assert jobs["heldjob"]["state"] == "PENDING"
    assert jobs["train_llm"]["gpus"] == 4 and jobs["train_llm"]["cpus"] == 8
    assert jobs["later"]["reason"] == "BeginTime"


@pytest.mark.parametrize("name", ERRORS)
def test_errors_and_exit_codes_are_slurms(shell: Shell, name: str) -> None:
    theirs = reference(name)
    same(shell.run(theirs.command, STDIN.get(name, "")), theirs)


def test_test_only_says_when_and_where_and_submits_nothing(shell: Shell) -> None:
    theirs = reference("84_sbatch_test_only")
    before = len(shell.cluster.call("GET", "/v1/jobs", query={"all": True})["jobs"])
    ours = shell.run(theirs.command)
    assert (ours.stdout, ours.rc) == (theirs.stdout, theirs.rc)
    shape = re.compile(
        r"sbatch: Job \d+ to start at \d{4}-\d\d-\d\dT\d\d:\d\d:\d\d using \d+ processors"
        r" on nodes \S+ in partition gpu\n"
    )
    assert shape.fullmatch(theirs.stderr) and shape.fullmatch(ours.stderr), ours.stderr
    after = len(shell.cluster.call("GET", "/v1/jobs", query={"all": True})["jobs"])
    assert after == before


def test_what_slurm_queues_without_enforcement_waits_or_runs_as_slurms_does(
    shell: Shell,
) -> None:
    # Without EnforcePartLimits, more nodes than the partition has waits (PartitionConfig);
    # without AccountingStorageEnforce=qos, an unknown QOS is scheduled and keeps its name.
    big = shell.run("sbatch --parsable --nodes=17 --wrap=true").stdout.strip()
    qos = shell.run("sbatch --parsable -q nosuchqos --wrap=true").stdout.strip()
    [line] = [
        line
        for line in reference("83_squeue_pending_after_errors").stdout.splitlines()
        if "PartitionConfig" in line
    ]
    ours = shell.run(f"squeue -h -j {big} -o '%i %j %D %r'")
    assert ours.stdout == line.replace("17", big, 1) + "\n", ours
    assert "Reason=PartitionConfig" in shell.run(f"scontrol show job {big}").stdout
    assert wait_done(shell, qos)["state"] == "COMPLETED"
    ours = shell.run(f"squeue -h -t all -j {qos} -o '%q'")
    assert ours.stdout == "nosuchqos\n", ours
    assert shell.run(f"scancel {big}").rc == 0


def wait_done(shell: Shell, job_id: str) -> dict[str, Any]:
    [job] = shell.cluster.wait([int(job_id)], timeout=60)
    return job


def test_a_script_runs_once_in_the_submit_dir_with_its_arguments(shell: Shell) -> None:
    script = shell.workdir / "job.sh"
    script.write_text(
        "#!/bin/bash\n"
        "#SBATCH --job-name=args   -o   args-%j.out\n"
        '#SBATCH    -t 5 -c 2 # a comment "not an option"\n'
        "# a comment line\n"
        'echo "$0" "$@"; pwd; echo err >&2\n'
        "#SBATCH -J never-read\n"
    )
    ours = shell.run("sbatch -n 3 --parsable job.sh one 'two words'")
    assert ours.rc == 0, ours
    job = wait_done(shell, ours.stdout.strip())
    assert (job["state"], job["name"], job["cpus"]) == ("COMPLETED", "args", 6)
    out = (shell.workdir / f"args-{job['job_id']}.out").read_text()
    assert out == f"job.sh one two words\n{shell.workdir}\nerr\n"


def test_command_line_overrides_sbatch_lines_and_e_splits_stderr(shell: Shell) -> None:
    script = shell.workdir / "split.sh"
    script.write_text("#!/bin/sh\n#SBATCH -J fromscript -o wrong.out\necho out; echo err >&2\n")
    ours = shell.run("sbatch --parsable -J cli -o o-%j.txt -e e-%j.txt split.sh")
    job = wait_done(shell, ours.stdout.strip())
    assert job["name"] == "cli"
    assert (shell.workdir / f"o-{job['job_id']}.txt").read_text() == "out\n"
    assert (shell.workdir / f"e-{job['job_id']}.txt").read_text() == "err\n"
    assert not (shell.workdir / "wrong.out").exists()


def test_default_output_and_chdir_and_export(shell: Shell, tmp_path: Path) -> None:
    tmp_path.chmod(0o755)
    shell.env["MY_VAR"] = "from-submitter"
    try:
        ours = shell.run(
            f"sbatch --parsable -D {tmp_path} --export=NONE,ONLY=1 "
            "--wrap='echo ${MY_VAR:-unset} $ONLY; pwd'"
        )
        kept = shell.run("sbatch --parsable --wrap='echo $MY_VAR'")
    finally:
        del shell.env["MY_VAR"]
    job = wait_done(shell, ours.stdout.strip())
    assert (tmp_path / f"slurm-{job['job_id']}.out").read_text() == f"unset 1\n{tmp_path}\n"
    other = wait_done(shell, kept.stdout.strip())
    assert (shell.workdir / f"slurm-{other['job_id']}.out").read_text() == "from-submitter\n"


def test_open_mode_append_keeps_what_was_there(shell: Shell) -> None:
    (shell.workdir / "log.txt").write_text("before\n")
    ours = shell.run("sbatch --parsable --open-mode=append -o log.txt --wrap='echo after'")
    wait_done(shell, ours.stdout.strip())
    assert (shell.workdir / "log.txt").read_text() == "before\nafter\n"
    ours = shell.run("sbatch --parsable -o log.txt --wrap='echo fresh'")
    wait_done(shell, ours.stdout.strip())
    assert (shell.workdir / "log.txt").read_text() == "fresh\n"


def test_a_python_script_is_spooled_and_run_with_its_arguments(shell: Shell) -> None:
    script = shell.workdir / "job.py"
    script.write_text(f"#!{sys.executable}\n#SBATCH -J py\nimport sys\nprint(sys.argv[1:])\n")
    ours = shell.run("sbatch --parsable job.py a b")
    job = wait_done(shell, ours.stdout.strip())
    assert job["state"] == "COMPLETED", job
    assert (shell.workdir / f"slurm-{job['job_id']}.out").read_text() == "['a', 'b']\n"
    [spooled] = (shell.workdir / ".cache" / "phalanx" / "spool").iterdir()
    assert spooled.stat().st_mode & 0o777 == 0o700


def test_array_output_and_wait(shell: Shell) -> None:
    ours = shell.run("sbatch --parsable -a 0-1 --wrap='echo $SLURM_ARRAY_TASK_ID'")
    array_id = ours.stdout.strip()
    deadline = time.monotonic() + 60
    files = [shell.workdir / f"slurm-{array_id}_{i}.out" for i in (0, 1)]
    while not all(f.exists() and f.read_text() for f in files) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert [f.read_text() for f in files] == ["0\n", "1\n"]
    waited = shell.run("sbatch --wait --wrap='exit 3'")
    assert (waited.rc, normalized(waited.stdout)) == (3, "Submitted batch job N\n")


class _Refusing:
    def __init__(self, status: int, answer: Any) -> None:
        self.answer = (status, answer)

    def call(self, method: str, path: str, **_: Any) -> tuple[int, Any]:
        return self.answer


class _Unreachable:
    def call(self, method: str, path: str, **_: Any) -> tuple[int, Any]:
        raise ControllerUnreachable("unix socket /nowhere", "No such file or directory")


@pytest.mark.parametrize(
    ("status", "answer", "reason"),
    [
        (422, {"error": "x", "field": "dependency"}, "Job dependency problem"),
        (422, {"error": "x", "field": "time"}, "Requested time limit is invalid"),
        (403, {"error": "no"}, "Access/permission denied"),
        (507, {"error": "full"}, "Slurm temporarily unable to accept job"),
    ],
)
def test_refusals_read_as_slurms(
    capsys: pytest.CaptureFixture[str], status: int, answer: Any, reason: str
) -> None:
    assert sbatch.main(["--wrap=true"], _Refusing(status, answer)) == 1  # type: ignore[arg-type]
    assert capsys.readouterr().err.startswith(
        f"sbatch: error: Batch job submission failed: {reason}"
    )


def test_an_unreachable_controller(capsys: pytest.CaptureFixture[str]) -> None:
    assert sbatch.main(["--wrap=true"], _Unreachable()) == 1  # type: ignore[arg-type]
    assert capsys.readouterr().err == (
        "sbatch: error: Batch job submission failed: "
        "Unable to contact slurm controller (connect failure)\n"
    )


def test_slurm_options_that_mean_nothing_here_submit_and_refused_ones_say_why(
    shell: Shell,
) -> None:
    ignored = (
        "-M all --cluster=phalanx --mail-type=END --mail-user=a@b --wckey=k --hint=nomultithread"
        " --cpu-freq=high --gpu-bind=closest --acctg-freq=30 --profile=none --ignore-pbs -k"
    )
    done = shell.run(f"sbatch --parsable -v {ignored} --wrap=true")
    assert done.rc == 0 and done.stdout.strip().isdigit(), done
    assert "sbatch: ignoring --mail-type=END: Phalanx sends no mail\n" in done.stderr
    done = shell.run("sbatch --bb=capacity=1G --wrap=true")
    assert (done.stderr, done.rc) == (
        "sbatch: error: --bb: burst buffers are not supported by Phalanx\n",
        1,
    )
    done = shell.run("sbatch -M elsewhere --wrap=true")
    assert done.rc == 1 and done.stderr.startswith(
        "sbatch: error: 'elsewhere' can't be reached now, or it is an invalid entry for --cluster."
    )
