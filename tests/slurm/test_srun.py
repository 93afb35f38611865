"""srun on a real Phalanx, through the shims: steps in a batch job, and jobs of its own."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from phalanx.server.localcluster import LocalCluster, cluster_yaml
from phalanx.slurm.shims import write_shims

PY = sys.executable
RANKS = (
    "import os; v = os.environ; "
    "print(v['SLURM_PROCID'], v['SLURM_LOCALID'], v['SLURM_NODEID'], v['SLURM_NTASKS'])"
)


@pytest.fixture(scope="module")
def phalanx(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    state = tmp_path_factory.mktemp("phalanx")
    config = cluster_yaml(2, 8, 32).replace("- name: main", "- name: gpu")
    with LocalCluster(state, config) as local:
        yield local
    log = local.log_tail("controller", 200)
    assert "Traceback" not in log, log


@pytest.fixture
def slurm_env(phalanx: LocalCluster, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    bin_dir = tmp_path / "bin"
    write_shims(bin_dir)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '/usr/bin:/bin')}")
    monkeypatch.setenv("PHALANX_STATE_DIR", str(phalanx.state_dir))
    monkeypatch.delenv("PHALANX_URL", raising=False)
    for name in [k for k in os.environ if k.startswith("SLURM_")]:
        monkeypatch.delenv(name)
    monkeypatch.chdir(tmp_path)
    tmp_path.chmod(0o755)
    return tmp_path


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
    body = (
        "srun -n1 -N1 sh -c 'sleep 0.5; echo first' &\n"
        "srun -n1 -N1 sh -c 'echo second' &\n"
        "wait\necho done"
    )
    out, rc = batch(slurm_env, body, "-N2", "--ntasks-per-node=2")
    assert rc == 0, out
    assert out.splitlines() == ["second", "first", "done"]


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
