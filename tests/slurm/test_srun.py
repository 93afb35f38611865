"""srun on a real Phalanx, through the shims: steps in a batch job, and jobs of its own."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

PY = sys.executable
RANKS = (
    "import os; v = os.environ; "
    "print(v['SLURM_PROCID'], v['SLURM_LOCALID'], v['SLURM_NODEID'], v['SLURM_NTASKS'])"
)


def run(command: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        command, shell=True, input=stdin, capture_output=True, text=True, timeout=60, check=False
    )


def batch(workdir: Path, body: str, *options: str) -> tuple[str, int]:
    """sbatch --wait a script of ``body``: its output and sbatch's exit status."""
    script = workdir / "job.sh"
    script.write_text(f"#!/bin/sh\n{body}\n")
    done = run(f"sbatch --wait -o out.txt {' '.join(options)} job.sh")
    assert "Submitted batch job" in done.stdout, done.stderr
    return (workdir / "out.txt").read_text(), done.returncode


def test_srun_in_a_batch_job_runs_one_task_per_slot(slurm_env: Path) -> None:
    out, rc = batch(slurm_env, f'srun {PY} -c "{RANKS}"', "-N2", "--ntasks-per-node=2")
    assert rc == 0, out
    assert sorted(out.splitlines()) == ["0 0 0 4", "1 1 0 4", "2 0 1 4", "3 1 1 4"]
    assert not (slurm_env / ".phalanx-srun").exists()


def test_srun_label_prefixes_each_line_with_the_task(slurm_env: Path) -> None:
    body = "srun -l -n 2 sh -c 'echo a$SLURM_PROCID; echo b$SLURM_PROCID'"
    out, rc = batch(slurm_env, body, "-N2", "--ntasks-per-node=2")
    assert rc == 0, out
    assert sorted(out.splitlines()) == ["0: a0", "0: b0", "1: a1", "1: b1"]


def test_two_sruns_at_once_in_one_script(slurm_env: Path) -> None:
    # The first step can only end once the second has started: both run at once.
    body = (
        "srun -n1 -N1 sh -c 'for i in $(seq 600); do [ -e flag ] && break; sleep 0.05; done;"
        " [ -e flag ] && echo first' &\n"
        "srun -n1 -N1 sh -c 'touch flag; echo second' &\n"
        "wait\necho done"
    )
    out, rc = batch(slurm_env, body, "-N2", "--ntasks-per-node=2")
    assert rc == 0, out
    lines = out.splitlines()
    assert sorted(lines[:2]) == ["first", "second"] and lines[2:] == ["done"]


def test_srun_exits_with_the_highest_task_exit_code(slurm_env: Path) -> None:
    body = "srun sh -c 'exit $((SLURM_PROCID + 3))'; echo rc=$?"
    out, rc = batch(slurm_env, body, "-N2", "--ntasks-per-node=2")
    assert rc == 0, out
    assert "rc=6" in out.splitlines()
    assert "srun: error:" in out and "Exited with exit code 6" in out


def test_srun_reports_a_task_killed_by_a_signal(slurm_env: Path) -> None:
    body = "srun -n1 -N1 sh -c 'kill -9 $$'; echo rc=$?"
    out, rc = batch(slurm_env, body, "-N1")
    assert rc == 0, out
    assert "rc=137" in out.splitlines() and "Killed" in out


def test_srun_outside_an_allocation_runs_a_job_of_its_own(slurm_env: Path) -> None:
    done = run(f'srun -N2 --ntasks-per-node=2 {PY} -c "{RANKS}"')
    assert done.returncode == 0, done.stderr
    assert sorted(done.stdout.splitlines()) == ["0 0 0 4", "1 1 0 4", "2 0 1 4", "3 1 1 4"]
    failed = run("srun -n1 sh -c 'echo err >&2; exit 3'")
    assert failed.returncode == 3 and "err" in failed.stderr


def test_srun_sh_dash_s_runs_the_script_on_stdin(slurm_env: Path) -> None:
    done = run("srun -n1 sh -s", stdin="echo from stdin $SLURM_PROCID\nexit 0\n")
    assert done.returncode == 0, done.stderr
    assert done.stdout == "from stdin 0\n"
    out, rc = batch(
        slurm_env, "printf 'echo in step $SLURM_STEP_ID\\n' > s.sh\nsrun -n1 sh -s < s.sh"
    )
    assert (out, rc) == ("in step 0\n", 0)


def test_srun_with_output_files_writes_them_per_task(slurm_env: Path) -> None:
    body = "srun --unbuffered --output step_%j_%t.out sh -c 'echo task $SLURM_PROCID'"
    out, rc = batch(slurm_env, body, "-N2", "--ntasks-per-node=1")
    assert rc == 0 and out == "", out
    files = sorted(slurm_env.glob("step_*_*.out"))
    assert [f.read_text() for f in files] == ["task 0\n", "task 1\n"]


def test_srun_jobid_runs_a_step_in_that_jobs_allocation(slurm_env: Path) -> None:
    held = run("sbatch --parsable -N1 --wrap='sleep 60'")
    job = held.stdout.strip()
    assert job.isdigit(), held.stderr
    try:
        for _ in range(100):
            if run(f"squeue -h -j {job} -o %t").stdout.strip() == "R":
                break
            run("sleep 0.2")
        done = run(
            f"env -u SLURM_JOB_ID srun --jobid={job} -M all --mpi=none sh -c 'echo $SLURM_JOB_ID'"
        )
        assert (done.stdout, done.returncode) == (f"{job}\n", 0), done.stderr
    finally:
        run(f"scancel {job}")
    done = run("srun --jobid=x true")
    assert (done.stderr, done.returncode) == ("srun: error: Invalid job id specified\n", 1)
    done = run("srun --multi-prog conf")
    assert done.returncode == 1
    assert (
        done.stderr
        == "srun: error: --multi-prog: --multi-prog configuration files are not supported\n"
    )


def test_srun_mpi_types(slurm_env: Path) -> None:
    listed = run("srun --mpi=list")
    assert (listed.stdout, listed.returncode) == ("MPI plugin types are...\n\tnone\n", 0)
    refused = run("srun --mpi=pmi2 true")
    assert refused.returncode == 1
    assert refused.stderr.startswith("srun: error: MPI type 'pmi2' is not supported here")
    assert "none" in refused.stderr and not refused.stdout
