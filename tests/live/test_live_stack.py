"""End to end on this machine, through production's code: the controller schedules, the
fleet builds each node's launch (ranks, SLURM_* variables, outputs), the agent's task runner
starts real processes, and what ended comes back as reports."""

from __future__ import annotations

import signal
import sys
from pathlib import Path

from phalanx.domain.caller import Caller
from phalanx.domain.jobspec import JobSpec
from phalanx.domain.state import JobState
from phalanx.domain.time import SECOND
from phalanx.engine import LaunchFailed, Submit, TasksExited
from phalanx.testing import LiveStack

ROOT = Caller(0, "root", admin=True)
PRINT_RANK = (
    "import os, sys; v = os.environ; sys.stdout.write(' '.join(v[k] for k in ("
    "'SLURM_JOB_ID', 'RANK', 'WORLD_SIZE', 'SLURM_NODEID', 'CUDA_VISIBLE_DEVICES')) + '\\n')"
)


def _spec(tmp_path: Path, code: str, **kw: object) -> JobSpec:
    kw.setdefault("time_limit", 60 * SECOND)
    return JobSpec(
        name="t",
        command=(sys.executable, "-c", code),
        workdir=str(tmp_path),
        **kw,  # type: ignore[arg-type]
    )


def test_gangs_run_every_ranked_task_and_complete(tmp_path: Path, live: LiveStack) -> None:
    spec = _spec(tmp_path, PRINT_RANK, nodes_min=2, nodes_max=2, tasks_per_node=2, gpus_per_task=2)
    ids = [job_id for _ in range(3) for job_id in live.submit(spec)]
    assert live.run(lambda: all(live.engine.jobs[i].state.is_final for i in ids), timeout=30)
    assert [live.engine.jobs[i].state for i in ids] == [JobState.COMPLETED] * 3
    for job_id in ids:
        alloc = live.engine.jobs[job_id].alloc
        assert alloc is not None
        # Ranks by node, each node's tasks seeing the GPUs the engine gave the job there.
        expected = sorted(
            f"{job_id} {2 * n + t} 4 {n} {','.join(map(str, alloc.devices[n]))}"
            for n in range(2)
            for t in range(2)
        )
        lines = (tmp_path / f"slurm-{job_id}.out").read_text().splitlines()
        assert sorted(lines) == expected
    journaled = [(type(e), getattr(e, "job_id", None)) for e in live.journal.events]
    assert journaled.count((Submit, None)) == 3
    assert (TasksExited, ids[-1]) in journaled


def test_the_highest_exit_code_fails_the_job_and_stderr_has_its_own_file(
    tmp_path: Path, live: LiveStack
) -> None:
    code = "import os, sys; print('oops', file=sys.stderr); sys.exit(int(os.environ['RANK']))"
    spec = _spec(
        tmp_path,
        code,
        nodes_min=2,
        nodes_max=2,
        tasks_per_node=2,
        output="o-%j-%t.txt",
        error="e-%j-%t.txt",
    )
    [job_id] = live.submit(spec)
    assert live.run(lambda: live.engine.jobs[job_id].state.is_final, timeout=30)
    job = live.engine.jobs[job_id]
    assert (job.state, job.exit_code) == (JobState.FAILED, 3)
    assert (tmp_path / f"e-{job_id}-2.txt").read_text() == "oops\n"
    assert (tmp_path / f"o-{job_id}-2.txt").read_text() == ""


def test_a_job_past_its_time_limit_is_signalled_and_ends_as_timeout(
    tmp_path: Path, live: LiveStack
) -> None:
    spec = _spec(tmp_path, "import time; time.sleep(60)", time_limit=1 * SECOND)
    [job_id] = live.submit(spec)
    assert live.run(lambda: live.engine.jobs[job_id].state.is_final, timeout=30)
    assert live.engine.jobs[job_id].state is JobState.TIMEOUT


def test_a_cancelled_job_gets_sigterm(tmp_path: Path, live: LiveStack) -> None:
    [job_id] = live.submit(_spec(tmp_path, "import time; time.sleep(60)"))
    assert live.run(lambda: live.engine.jobs[job_id].state is JobState.RUNNING, timeout=30)
    live.controller.cancel(job_id, ROOT)
    assert live.run(lambda: live.engine.jobs[job_id].state.is_final, timeout=30)
    job = live.engine.jobs[job_id]
    assert (job.state, job.exit_signal) == (JobState.CANCELLED, signal.SIGTERM)


def test_a_command_that_cannot_start_fails_the_launch(tmp_path: Path, live: LiveStack) -> None:
    spec = JobSpec(name="t", command=(str(tmp_path / "no-such-program"),), workdir=str(tmp_path))
    [job_id] = live.submit(spec)

    def failed() -> bool:
        return any(isinstance(e, LaunchFailed) for e in live.journal.events)

    assert live.run(failed, timeout=30)
    [lost] = [e for e in live.journal.events if isinstance(e, LaunchFailed)]
    assert lost.job_id == job_id and "no-such-program" in lost.reason
