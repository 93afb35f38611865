"""The kubelet's container state machine, on a fake clock: back-off between restarts,
probes' thresholds, startup gating, and what a report says."""

from __future__ import annotations

import pytest

from phalanx.agent.containers import (
    BACKOFF_CAP_S,
    BACKOFF_RESET_S,
    Backoff,
    Container,
    ProbeState,
    restarts_after,
)
from phalanx.protocol.agent import ProbeSpec, ProbesSpec, TaskSpec


def task(restart: str = "Always", probes: ProbesSpec | None = None) -> TaskSpec:
    return TaskSpec(
        argv=["true"], cwd="/", env={}, stdout="/dev/null", rank=0, restart=restart, probes=probes
    )


def spec(**kw: object) -> ProbeSpec:
    return ProbeSpec(kind="tcpSocket", port=1, **kw)  # type: ignore[arg-type]


def test_backoff_restarts_once_at_once_then_doubles_from_ten_seconds_to_five_minutes() -> None:
    backoff = Backoff()
    delays = [backoff.next_delay(ran_s=1.0) for _ in range(9)]
    assert delays == [0, 10, 20, 40, 80, 160, 300, 300, 300]


def test_backoff_starts_again_after_ten_minutes_of_running() -> None:
    backoff = Backoff(initial_s=0.5)
    assert [backoff.next_delay(1.0) for _ in range(4)] == [0, 0.5, 1.0, 2.0]
    assert backoff.next_delay(BACKOFF_RESET_S - 1) == 4.0
    assert backoff.next_delay(BACKOFF_RESET_S) == 0
    assert backoff.next_delay(1.0) == 0.5
    assert Backoff(initial_s=200).next_delay(0) == 0
    assert Backoff(initial_s=200, streak=1).next_delay(0) == 200
    assert Backoff(initial_s=200, streak=2).next_delay(0) == BACKOFF_CAP_S


@pytest.mark.parametrize(
    ("policy", "code", "signal", "restarts"),
    [
        ("Always", 0, 0, True),
        ("Always", 1, 0, True),
        ("OnFailure", 0, 0, False),
        ("OnFailure", 3, 0, True),
        ("OnFailure", 0, 9, True),
        ("Never", 1, 0, False),
    ],
)
def test_restart_policies(policy: str, code: int, signal: int, restarts: bool) -> None:
    assert restarts_after(policy, code, signal) is restarts


def test_probe_thresholds_count_results_in_a_row() -> None:
    state = ProbeState.start(spec(success_threshold=2, failure_threshold=3), "readiness", 0.0)
    assert not state.ok
    state.record(True)
    assert not state.ok  # one success of two
    state.record(False, "refused")
    state.record(True)
    assert not state.ok  # the streak was broken
    state.record(True)
    assert state.ok
    state.record(False, "a")
    state.record(False, "b")
    assert state.ok and not state.failed
    state.record(True)
    state.record(False, "c")
    state.record(False, "d")
    assert state.ok  # two in a row again, not three
    state.record(False, "e")
    assert not state.ok and state.failed and state.message == "e"


def test_probes_are_due_after_the_initial_delay_then_every_period() -> None:
    state = ProbeState.start(spec(initial_delay_s=5, period_s=2), "liveness", 100.0)
    assert state.ok  # liveness passes until it fails
    assert not state.due(104.9)
    assert state.due(105.0)
    state.begin(105.0)
    assert not state.due(110.0)  # one at a time
    state.record(True)
    assert not state.due(106.9) and state.due(107.0)


def test_startup_gates_the_other_probes_and_its_failure_kills() -> None:
    probes = ProbesSpec(
        startup=spec(period_s=1, failure_threshold=2),
        liveness=spec(period_s=1),
        readiness=spec(period_s=1),
    )
    c = Container(task(probes=probes), Backoff())
    c.began(pid=10, now=0.0, wall_ms=1_000)
    assert not c.started and not c.ready
    assert c.due_probes(0.0) == ["startup"]
    c.probes["startup"].begin(0.0)
    assert c.probed("startup", False, "refused") is None
    c.probes["startup"].begin(1.0)
    why = c.probed("startup", False, "refused")
    assert why == "Startup probe failed: refused"

    c.began(pid=11, now=5.0, wall_ms=6_000)  # restarted: probes start over
    c.probes["startup"].begin(5.0)
    assert c.probed("startup", True) is None
    assert c.started and not c.ready  # readiness has not passed yet
    assert sorted(c.due_probes(5.0)) == ["liveness", "readiness"]
    c.probes["readiness"].begin(5.0)
    c.probed("readiness", True)
    assert c.ready


def test_a_container_without_readiness_probe_is_ready_once_started() -> None:
    c = Container(task(probes=ProbesSpec(liveness=spec(failure_threshold=1))), Backoff())
    c.began(pid=10, now=0.0, wall_ms=0)
    assert c.started and c.ready
    c.probes["liveness"].begin(0.0)
    why = c.probed("liveness", False, "HTTP probe failed with statuscode: 500")
    assert why == "Liveness probe failed: HTTP probe failed with statuscode: 500"
    c.killing(why, now=1.0, grace_s=30)
    assert not c.ready and c.kill_at == 31.0
    assert c.due_probes(2.0) == []  # no probes while it is being killed


def test_a_crashing_container_waits_in_crash_loop_back_off() -> None:
    c = Container(task("Always"), Backoff(initial_s=10))
    c.began(pid=9, now=-2.0, wall_ms=-1_000)
    assert c.ended(1, 0, now=-1.0, wall_ms=0, stopping=False)
    # The first restart is at once (the kubelet has no back-off entry for it yet).
    assert c.restart_count == 1 and c.restart_at == -1.0
    assert c.state.kind == "waiting" and c.state.reason == "ContainerCreating"
    c.began(pid=10, now=0.0, wall_ms=1_000)
    v = c.version
    assert c.ended(1, 0, now=2.0, wall_ms=3_000, stopping=False)
    assert c.version > v
    assert c.restart_count == 2 and c.restart_at == 12.0
    assert c.state.kind == "waiting" and c.state.reason == "CrashLoopBackOff"
    assert c.state.message == "back-off 10s restarting failed container"
    assert c.last_state is not None
    assert (c.last_state.kind, c.last_state.exit_code, c.last_state.reason) == (
        "terminated",
        1,
        "Error",
    )
    assert (c.last_state.started_at, c.last_state.finished_at) == (1_000, 3_000)
    c.began(pid=11, now=12.0, wall_ms=13_000)
    assert c.ended(0, 9, now=13.0, wall_ms=14_000, stopping=False)
    assert c.restart_at == 33.0 and c.restart_count == 3
    assert c.last_state is not None and c.last_state.exit_code == 137
    report = c.report(7, 1)
    assert (report.job_id, report.run, report.restart_count, report.ready) == (7, 1, 3, False)


def test_a_stopped_container_does_not_restart() -> None:
    c = Container(task("Always"), Backoff())
    c.began(pid=10, now=0.0, wall_ms=0)
    assert not c.ended(0, 15, now=1.0, wall_ms=1_000, stopping=True)
    assert c.state.kind == "terminated" and c.restart_at is None
    on_failure = Container(task("OnFailure"), Backoff())
    on_failure.began(pid=10, now=0.0, wall_ms=0)
    assert not on_failure.ended(0, 0, now=1.0, wall_ms=1_000, stopping=False)
    assert on_failure.state.reason == "Completed"


def test_cpu_usage_is_a_rate_between_samples() -> None:
    c = Container(task(), Backoff())
    c.began(pid=10, now=0.0, wall_ms=0)
    c.sample_cpu(10.0, 1.0)
    assert c.cpu_millicores is None  # one sample is no rate
    c.sample_cpu(10.5, 2.0)  # too short a window: not a rate yet
    assert c.cpu_millicores is None
    c.sample_cpu(12.0, 2.5)
    assert c.cpu_millicores == 750
    c.sample_cpu(13.0, None)  # unreadable: the last rate stays
    assert c.cpu_millicores == 750
