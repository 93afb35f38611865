"""submitit's ``AutoExecutor(cluster="slurm")`` on a real Phalanx, through the Slurm shims.

submitit writes a batch script per job (``#SBATCH`` lines, then ``srun --unbuffered --output
... python -u -m submitit.core._submit FOLDER``), runs ``sbatch`` on it, polls ``sacct`` for
states, ``scancel``s on ``job.cancel()``, and on its preemption signal (USR2) checkpoints and
runs ``scontrol requeue``: see ``/work/shared/slurm/clients/calls.log``.

The submitted callables are defined inside the tests, so that cloudpickle sends them by value
(the job's interpreter cannot import this test module).
"""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
from slurm_shell import activate_shims

from phalanx.server.localcluster import LocalCluster

submitit = pytest.importorskip("submitit")

RESULT_S = 90.0


@pytest.fixture
def executor(phalanx: LocalCluster, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    activate_shims(phalanx, tmp_path, monkeypatch)
    ex = submitit.AutoExecutor(folder=tmp_path / "logs", cluster="slurm")
    ex.update_parameters(
        timeout_min=5, slurm_partition="gpu", tasks_per_node=1, cpus_per_task=1, mem_gb=1
    )
    return ex


def test_a_function_returns_its_result(executor: Any) -> None:
    def add(a: int, b: int) -> int:
        return a + b

    job = executor.submit(add, 2, 3)
    assert _result(job) == 5
    _wait_for(lambda: job.get_info(mode="force").get("State") == "COMPLETED")
    assert job.paths.stdout.exists() and job.paths.stderr.exists()


def test_two_tasks_return_two_results(executor: Any) -> None:
    def rank() -> tuple[str, str]:
        return os.environ["SLURM_PROCID"], os.environ["SLURM_NTASKS"]

    executor.update_parameters(tasks_per_node=2)
    job = executor.submit(rank)
    assert sorted(_results(job)) == [("0", "2"), ("1", "2")]


def test_map_array_runs_one_job_per_input(executor: Any) -> None:
    def square(x: int) -> int:
        return x * x

    jobs = executor.map_array(square, [1, 2, 3])
    assert len({job.job_id.split("_")[0] for job in jobs}) == 1
    assert [_result(job) for job in jobs] == [1, 4, 9]


def test_a_failing_function_raises_failed_job_error(executor: Any) -> None:
    def fail() -> None:
        raise ValueError("broken on purpose")

    job = executor.submit(fail)
    with pytest.raises(submitit.core.utils.FailedJobError, match="broken on purpose"):
        _result(job)


def test_cancel_ends_a_running_job(executor: Any, phalanx: LocalCluster) -> None:
    job = executor.submit(time.sleep, 300)
    _wait_for(lambda: phalanx.job(int(job.job_id))["state"] == "RUNNING")
    job.cancel()
    _wait_for(lambda: job.state.startswith("CANCELLED"))


def test_preemption_signal_checkpoints_requeues_and_finishes(
    executor: Any, phalanx: LocalCluster, tmp_path: Path
) -> None:
    """The controller signals the batch shell too (Slurm, without ``-b``, only the steps):
    submitit's script survives because ``bash -c`` execs its last command, srun, which
    ignores USR2 while the task handles it."""
    _preempt_and_finish(executor, phalanx, tmp_path)


def test_preemption_with_the_batch_shell_trapping_usr2(
    executor: Any, phalanx: LocalCluster, tmp_path: Path
) -> None:
    """The same with a command after srun: the shell must outlive the signal, here by a trap
    (in Slurm it is not signalled at all)."""
    executor.update_parameters(
        slurm_setup=["trap 'echo USR2 >&2' USR2"], slurm_teardown=["echo teardown"]
    )
    _preempt_and_finish(executor, phalanx, tmp_path)


def _preempt_and_finish(executor: Any, phalanx: LocalCluster, tmp_path: Path) -> None:
    marker = tmp_path / "attempts.txt"

    class Counter(submitit.helpers.Checkpointable):  # type: ignore[misc]
        def __init__(self) -> None:
            self.done = 0

        def __call__(self, marker: str, steps: int) -> tuple[int, int]:
            import time

            with open(marker, "a") as out:
                out.write(f"{self.done}\n")
            while self.done < steps:
                time.sleep(0.1)
                self.done += 1
            return self.done, len(open(marker).read().splitlines())

    job = executor.submit(Counter(), str(marker), 60)
    _wait_for(lambda: marker.exists() and marker.read_text() != "")
    time.sleep(1.0)
    done = subprocess.run(
        ["scancel", "--signal=USR2", job.job_id], capture_output=True, text=True, timeout=30
    )
    assert done.returncode == 0, done.stderr
    assert _result(job) == (60, 2)
    attempts = [int(line) for line in marker.read_text().splitlines()]
    assert attempts[0] == 0 and 0 < attempts[1] < 60, attempts
    assert phalanx.job(int(job.job_id))["restarts"] == 1


def _result(job: Any) -> Any:
    """``job.result()``, which has no timeout of its own, within ``RESULT_S``."""
    _wait_for(job.done)
    return job.result()


def _results(job: Any) -> list[Any]:
    _wait_for(job.done)
    return list(job.results())


def _wait_for(check: Any, timeout: float = RESULT_S) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, "condition not met in time"
        time.sleep(0.1)
