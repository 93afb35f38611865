"""The task runner: real processes, their files, their ends and their signals."""

from __future__ import annotations

import os
import signal
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from phalanx.agent.cgroup import Cgroups, limits
from phalanx.agent.tasks import TaskRunner
from phalanx.api.wire import AgentCommand, RunReport, TaskSpec


def task(tmp_path: Path, argv: list[str], rank: int = 0, **fields: object) -> TaskSpec:
    spec: dict[str, object] = {
        "argv": argv,
        "cwd": str(tmp_path),
        "env": {"PATH": os.defpath},
        "stdout": str(tmp_path / f"out{rank}.txt"),
        "rank": rank,
    }
    spec.update(fields)
    return TaskSpec.model_validate(spec)


def launch(job_id: int, tasks: list[TaskSpec], run: int = 0, **fields: object) -> AgentCommand:
    return AgentCommand(seq=1, kind="launch", job_id=job_id, run=run, tasks=tasks, **fields)  # type: ignore[arg-type]


def wait_end(runner: TaskRunner, timeout_s: float = 10.0) -> list[RunReport]:
    deadline = time.monotonic() + timeout_s
    while True:
        ended = runner.reap()
        if ended:
            return ended
        assert time.monotonic() < deadline, "the run did not end in time"
        time.sleep(0.01)


@pytest.fixture
def runner() -> Iterator[TaskRunner]:
    """A runner that leaves no process behind, even when its test fails."""
    it = TaskRunner()
    yield it
    it.signal_all(signal.SIGKILL)
    deadline = time.monotonic() + 10
    while it.unreaped() and time.monotonic() < deadline:
        it.reap()
        time.sleep(0.01)


def test_exit_codes_and_signals_are_aggregated_over_the_tasks(
    runner: TaskRunner, tmp_path: Path
) -> None:
    runner.launch(
        launch(
            1, [task(tmp_path, ["sh", "-c", "exit 3"]), task(tmp_path, ["sh", "-c", "exit 5"], 1)]
        )
    )
    [report] = wait_end(runner)
    assert (report.job_id, report.state, report.exit_code, report.signal) == (1, "exited", 5, 0)
    assert report.at > 0

    runner.launch(
        launch(
            2,
            [
                task(tmp_path, ["sh", "-c", "exit 4"]),
                task(tmp_path, ["sh", "-c", "kill -TERM $$"], 1),
            ],
        )
    )
    [report] = wait_end(runner)
    assert (report.exit_code, report.signal) == (4, signal.SIGTERM)
    assert runner.running_count() == 0


BURN = (
    "import time\n"
    "block = b'x' * (50 << 20)\n"  # written, so resident
    "end = time.process_time() + 0.3\n"
    "while time.process_time() < end:\n"
    "    pass\n"
)


def test_an_ended_run_reports_what_its_tasks_used(runner: TaskRunner, tmp_path: Path) -> None:
    # The burner runs under a shell that waits for it: a task's descendants count too.
    burn = task(tmp_path, ["sh", "-c", f'"{sys.executable}" -c "$0"', BURN])
    runner.launch(launch(1, [burn, task(tmp_path, ["sh", "-c", "exit 0"], 1)]))
    [report] = wait_end(runner)
    assert report.usage is not None
    assert report.usage.user_ms + report.usage.system_ms >= 250
    assert 45 << 10 <= report.usage.max_rss_kb < 2 << 20  # one task's peak, in KiB


def test_a_failed_launch_reports_no_usage(runner: TaskRunner, tmp_path: Path) -> None:
    runner.launch(launch(1, [task(tmp_path, ["/nonexistent/binary"])]))
    [report] = wait_end(runner)
    assert report.state == "failed" and report.usage is None


def test_outputs_land_in_their_files_appended_or_truncated(
    runner: TaskRunner, tmp_path: Path
) -> None:
    out = tmp_path / "shared.txt"
    err = tmp_path / "err.txt"
    out.write_text("before\n")
    err.write_text("old errors\n")
    talk = ["sh", "-c", "echo hello $0; echo oops $0 >&2"]
    both = [task(tmp_path, [*talk, str(r)], r, stdout=str(out), stderr=str(err)) for r in range(2)]
    runner.launch(launch(1, both))
    wait_end(runner)
    assert out.read_text().splitlines()[0] == "before"
    assert sorted(out.read_text().splitlines()[1:]) == ["hello 0", "hello 1"]
    assert err.read_text().splitlines()[0] == "old errors"
    assert sorted(err.read_text().splitlines()[1:]) == ["oops 0", "oops 1"]

    # Truncate: the old contents go, once for the run (not once per task), and stderr
    # joins stdout when it has no file of its own.
    joined = [
        task(tmp_path, [*talk, str(r)], r, stdout=str(out), open_mode="truncate") for r in range(2)
    ]
    runner.launch(launch(2, joined))
    wait_end(runner)
    assert sorted(out.read_text().splitlines()) == ["hello 0", "hello 1", "oops 0", "oops 1"]


def test_the_environment_is_exactly_the_given_one(runner: TaskRunner, tmp_path: Path) -> None:
    env = {"ONLY": "this", "PATH": os.defpath}
    runner.launch(launch(1, [task(tmp_path, ["env"], env=env)]))
    [report] = wait_end(runner)
    assert report.exit_code == 0
    lines = (tmp_path / "out0.txt").read_text().splitlines()
    assert sorted(lines) == sorted(f"{k}={v}" for k, v in env.items())


def test_a_missing_executable_fails_the_run_and_leaves_no_process(
    runner: TaskRunner, tmp_path: Path
) -> None:
    sleeper = task(tmp_path, ["sleep", "30"])
    missing = task(tmp_path, ["/nonexistent/program"], 1)
    runner.launch(launch(1, [sleeper, missing]))
    [report] = wait_end(runner)
    assert report.state == "failed"
    assert "/nonexistent/program" in report.reason
    assert runner.running_count() == 0
    # The sleeper was killed; once reaped, no zombie and no stray process remain.
    deadline = time.monotonic() + 10
    while runner.unreaped():
        assert runner.reap() == []
        assert time.monotonic() < deadline
        time.sleep(0.01)
    with pytest.raises(ChildProcessError):
        os.waitpid(-1, os.WNOHANG)
    assert runner.unacked() == [report]


def test_launching_a_run_twice_starts_it_once(runner: TaskRunner, tmp_path: Path) -> None:
    counter = task(tmp_path, ["sh", "-c", "echo started"])
    cmd = launch(7, [counter], run=2)
    runner.launch(cmd)
    runner.launch(cmd)
    assert runner.known(7, 2)
    [report] = wait_end(runner)
    runner.launch(cmd)  # ended, not yet acknowledged
    runner.acknowledge([report])
    assert runner.unacked() == []
    runner.launch(cmd)  # finished and remembered
    assert runner.running_count() == 0
    assert (tmp_path / "out0.txt").read_text() == "started\n"
    assert runner.known(7, 2)
    assert not runner.known(7, 3)


def test_signal_and_kill_reach_a_sleeping_gang(runner: TaskRunner, tmp_path: Path) -> None:
    # The shell's child (sleep) is reached too: the signal goes to the process group.
    gang = [task(tmp_path, ["sh", "-c", "sleep 30; exit 0"], r) for r in range(2)]
    runner.launch(launch(1, gang))
    assert runner.reap() == []
    assert [r.state for r in runner.hello_runs()] == ["running"]
    runner.signal(1, 0, signal.SIGUSR1)
    [report] = wait_end(runner)
    assert report.signal == signal.SIGUSR1

    stubborn = ["sh", "-c", "trap '' TERM; sleep 30"]
    runner.launch(launch(2, [task(tmp_path, stubborn, r) for r in range(2)]))
    time.sleep(0.1)  # let the shells install their trap
    runner.signal(2, 0, signal.SIGTERM)
    time.sleep(0.1)
    assert runner.reap() == []
    runner.kill(2, 0)
    [report] = wait_end(runner)
    assert report.signal == signal.SIGKILL
    runner.kill(99, 0)  # unknown: ignored


def test_the_hello_lists_live_runs_and_unacknowledged_ends(
    runner: TaskRunner, tmp_path: Path
) -> None:
    runner.launch(launch(1, [task(tmp_path, ["true"])]))
    wait_end(runner)
    runner.launch(launch(2, [task(tmp_path, ["sleep", "30"])]))
    states = {(r.job_id, r.state) for r in runner.hello_runs()}
    assert states == {(1, "exited"), (2, "running")}
    runner.kill(2, 0)
    wait_end(runner)


def test_cgroup_limits_are_written_where_asked(tmp_path: Path) -> None:
    assert limits(2, 512) == {"cpu.max": "200000 100000", "memory.max": str(512 * 1024 * 1024)}
    assert limits(0, 0) == {}
    (tmp_path / "cgroup.controllers").write_text("cpu memory io\n")
    groups = Cgroups(tmp_path)
    assert groups.place(3, 1, [11, 12], cpus=2, memory_mb=0)
    job = tmp_path / "phalanx.slice" / "job_3_1"
    assert (job / "cpu.max").read_text() == "200000 100000"
    assert not (job / "memory.max").exists()
    assert (job / "cgroup.procs").read_text() == "11\n12\n"
    assert (tmp_path / "cgroup.subtree_control").read_text() == "+cpu +memory"


def test_without_cgroup_v2_a_launch_runs_unlimited(tmp_path: Path) -> None:
    groups = Cgroups(tmp_path / "absent")
    assert not groups.usable
    runner = TaskRunner(groups)
    runner.launch(launch(1, [task(tmp_path, ["true"])], cpus=1, memory_mb=100))
    [report] = wait_end(runner)
    assert report.state == "exited"
