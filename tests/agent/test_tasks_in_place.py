"""Containers restarted in place by the task runner (real processes, a shortened back-off),
exec probes reaped by the one reaper, and CPU usage of a task's process tree."""

from __future__ import annotations

import os
import signal
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from phalanx.agent.cpuusage import session_cpu_seconds
from phalanx.agent.tasks import TaskRunner
from phalanx.protocol.agent import AgentCommand, ProbeSpec, ProbesSpec, RunReport, TaskSpec


def task(tmp_path: Path, argv: list[str], **fields: object) -> TaskSpec:
    spec: dict[str, object] = {
        "argv": argv,
        "cwd": str(tmp_path),
        "env": {"PATH": os.defpath},
        "stdout": str(tmp_path / "out.txt"),
        "rank": 0,
    }
    spec.update(fields)
    return TaskSpec.model_validate(spec)


def launch(job_id: int, one: TaskSpec) -> AgentCommand:
    return AgentCommand(seq=1, kind="launch", job_id=job_id, run=1, tasks=[one])


def until(runner: TaskRunner, done: Callable[[], bool], timeout_s: float = 10.0) -> list[RunReport]:
    """Reap and tick until ``done()``; the runs that ended meanwhile."""
    ended: list[RunReport] = []
    deadline = time.monotonic() + timeout_s
    while not done():
        assert time.monotonic() < deadline, "timed out"
        ended += runner.reap()
        runner.tick()
        time.sleep(0.01)
    return ended + runner.reap()


@pytest.fixture
def runner() -> Iterator[TaskRunner]:
    it = TaskRunner(backoff_s=0.05)
    yield it
    it.signal_all(signal.SIGKILL)
    deadline = time.monotonic() + 10
    while it.unreaped() and time.monotonic() < deadline:
        it.reap()
        time.sleep(0.01)


def test_always_restarts_in_place_and_the_run_goes_on(runner: TaskRunner, tmp_path: Path) -> None:
    runner.launch(launch(1, task(tmp_path, ["sh", "-c", "echo run; exit 1"], restart="Always")))
    [(_, container)] = runner.containers()
    ended = until(runner, lambda: container.restart_count >= 3)
    assert ended == [] and runner.running_count() == 1
    assert (tmp_path / "out.txt").read_text().count("run\n") >= 3  # appended, not truncated
    [report] = runner.container_reports(lambda *_: None)
    assert report.restart_count >= 3 and not report.ready
    assert report.last_state is not None and report.last_state.exit_code == 1


def test_a_kill_while_waiting_in_back_off_ends_the_run_at_once(tmp_path: Path) -> None:
    runner = TaskRunner(backoff_s=60)
    runner.launch(launch(2, task(tmp_path, ["sh", "-c", "exit 2"], restart="Always")))
    [(_, container)] = runner.containers()
    until(runner, lambda: container.restart_at is not None)
    runner.kill(2, 1)
    [report] = runner.reap()
    assert (report.job_id, report.state, report.signal) == (2, "exited", signal.SIGKILL)
    assert runner.running_count() == 0 and runner.containers() == []


def test_on_failure_ends_the_run_on_success(runner: TaskRunner, tmp_path: Path) -> None:
    marker = tmp_path / "failed-once"
    script = f"if [ -e {marker} ]; then exit 0; fi; touch {marker}; exit 4"
    runner.launch(launch(3, task(tmp_path, ["sh", "-c", script], restart="OnFailure")))
    ended = until(runner, lambda: runner.running_count() == 0)
    assert [(r.job_id, r.exit_code) for r in ended] == [(3, 0)]


def test_a_term_stops_a_restarting_container_for_good(runner: TaskRunner, tmp_path: Path) -> None:
    runner.launch(launch(4, task(tmp_path, ["sleep", "30"], restart="Always")))
    runner.signal(4, 1, signal.SIGTERM)
    ended = until(runner, lambda: runner.running_count() == 0)
    assert [(r.job_id, r.signal) for r in ended] == [(4, signal.SIGTERM)]


def test_a_probe_kill_terms_then_kills_after_the_grace(runner: TaskRunner, tmp_path: Path) -> None:
    probes = ProbesSpec(liveness=ProbeSpec(kind="exec", command=["false"]), grace_s=0.2)
    stubborn = ["sh", "-c", "trap '' TERM; while true; do sleep 0.05; done"]
    runner.launch(launch(5, task(tmp_path, stubborn, restart="Always", probes=probes)))
    [(_, container)] = runner.containers()
    time.sleep(0.2)  # the shell sets its trap
    runner.kill_container(5, 1, 0, "Liveness probe failed: x")
    started = time.monotonic()
    until(runner, lambda: container.restart_count == 1)
    assert time.monotonic() - started >= 0.15  # TERM was ignored; KILL came after the grace
    assert container.last_state is not None and container.last_state.signal == signal.SIGKILL
    assert "liveness probe" in container.last_state.message


def test_exec_probe_statuses_are_kept_for_the_prober(runner: TaskRunner, tmp_path: Path) -> None:
    runner.launch(
        launch(6, task(tmp_path, ["sleep", "30"], probes=ProbesSpec(readiness=None)))
    )
    [(_, container)] = runner.containers()
    ok = runner.spawn_probe(container, ["sh", "-c", "exit 0"])
    bad = runner.spawn_probe(container, ["sh", "-c", "exit 3"])
    statuses: dict[int, int | None] = {}

    def both() -> bool:
        for pid in (ok.pid, bad.pid):
            statuses[pid] = statuses.get(pid) if statuses.get(pid) is not None else (
                runner.probe_status(pid)
            )
        return all(v is not None for v in statuses.values())

    until(runner, both)
    assert statuses == {ok.pid: 0, bad.pid: 3}
    assert runner.probe_status(ok.pid) is None  # taken once
    assert runner.running_count() == 1  # the probes' ends are no run's


def test_cpu_seconds_of_a_session_count_its_children(tmp_path: Path) -> None:
    busy = "import time\nend = time.process_time() + 0.3\nwhile time.process_time() < end: pass\n"
    script = f"{sys.executable} -c '{busy}' & {sys.executable} -c '{busy}' & wait; sleep 5"
    runner = TaskRunner()
    runner.launch(launch(7, task(tmp_path, ["sh", "-c", script])))
    [pid] = [p for p in runner._running[(7, 1)].procs]
    try:
        deadline = time.monotonic() + 10
        seconds = 0.0
        while seconds < 0.5 and time.monotonic() < deadline:
            time.sleep(0.1)
            seconds = session_cpu_seconds(pid) or 0.0
        # the two children ended and were waited for by the shell: counted in its stat
        assert seconds >= 0.5
    finally:
        runner.kill(7, 1)
        until(runner, lambda: runner.running_count() == 0)
    deadline = time.monotonic() + 5
    while session_cpu_seconds(pid) is not None:  # the killed sleep: until init reaps it
        assert time.monotonic() < deadline
        time.sleep(0.05)
