"""Real processes: every task runs with its ranks, output goes where Slurm would put it."""

from __future__ import annotations

import signal
import sys
import time
from pathlib import Path

from phalanx.config.clusterspec import regular_cluster
from phalanx.domain.jobspec import JobSpec
from phalanx.engine import Event, Kill, Launch, LaunchFailed, TasksExited
from phalanx.live.process import ProcessExecutor
from phalanx.sched.capacity import Allocation

CLUSTER = regular_cluster(4, 8, 2)
PRINT_RANK = (
    "import os; print(os.environ['RANK'], os.environ['WORLD_SIZE'], "
    "os.environ['SLURM_NODEID'], os.environ['CUDA_VISIBLE_DEVICES'])"
)


def _wait_for_exit(ex: ProcessExecutor, events: list[Event], timeout_s: float = 20.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not any(isinstance(e, TasksExited) for e in events):
        assert time.monotonic() < deadline, "the tasks did not end in time"
        ex.poll(0)
        time.sleep(0.02)


def _launch(tmp_path: Path, argv: list[str], **spec: object) -> tuple[ProcessExecutor, list[Event]]:
    events: list[Event] = []
    ex = ProcessExecutor(events.append, CLUSTER)
    job = JobSpec(
        name="t",
        nodes_min=2,
        nodes_max=2,
        tasks_per_node=2,
        gpus_per_task=1,
        command=tuple(argv),
        workdir=str(tmp_path),
        **spec,  # type: ignore[arg-type]
    )
    alloc = Allocation((0, 1), ((0, 1), (2, 3)), 0, 2, 0)
    ex.launch(Launch(9, 1, alloc, job, 60_000), 0)
    return ex, events


def test_a_two_node_gang_runs_four_ranked_tasks_into_one_output(tmp_path: Path) -> None:
    ex, events = _launch(tmp_path, [sys.executable, "-c", PRINT_RANK])
    _wait_for_exit(ex, events)
    [exited] = [e for e in events if isinstance(e, TasksExited)]
    assert (exited.job_id, exited.run, exited.exit_code, exited.signal) == (9, 1, 0, 0)
    lines = sorted((tmp_path / "slurm-9.out").read_text().split("\n")[:-1])
    assert lines == ["0 4 0 0,1", "1 4 0 0,1", "2 4 1 2,3", "3 4 1 2,3"]


def test_the_highest_exit_code_is_reported_and_stderr_has_its_own_file(tmp_path: Path) -> None:
    code = "import os, sys; print('oops', file=sys.stderr); sys.exit(int(os.environ['RANK']))"
    ex, events = _launch(
        tmp_path, [sys.executable, "-c", code], output="o-%j-%t.txt", error="e-%j-%t.txt"
    )
    _wait_for_exit(ex, events)
    [exited] = [e for e in events if isinstance(e, TasksExited)]
    assert exited.exit_code == 3
    assert (tmp_path / "e-9-2.txt").read_text() == "oops\n"
    assert (tmp_path / "o-9-2.txt").read_text() == ""


def test_kill_ends_every_task_with_sigkill(tmp_path: Path) -> None:
    ex, events = _launch(tmp_path, [sys.executable, "-c", "import time; time.sleep(60)"])
    ex.kill(Kill(9, 1), 0)
    _wait_for_exit(ex, events)
    [exited] = [e for e in events if isinstance(e, TasksExited)]
    assert exited.signal == signal.SIGKILL


def test_a_command_that_cannot_start_fails_the_launch(tmp_path: Path) -> None:
    _, events = _launch(tmp_path, [str(tmp_path / "no-such-program")])
    assert [type(e) for e in events] == [LaunchFailed]
