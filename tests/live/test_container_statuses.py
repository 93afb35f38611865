"""The controller's soft state of container reports: per node as the agent tells it, only for
runs still running there, gone with the job or the node; callbacks only for what a pod's
status shows (not CPU usage)."""

from __future__ import annotations

from phalanx.live.containers import ContainerStatuses
from phalanx.protocol.agent import ContainerReport, ContainerState


def report(job: int, rank: int = 0, *, ready: bool = True, restarts: int = 0,
           cpu: int | None = None, run: int = 1) -> ContainerReport:  # fmt: skip
    return ContainerReport(
        job_id=job,
        run=run,
        rank=rank,
        ready=ready,
        started=True,
        restart_count=restarts,
        state=ContainerState(kind="running", started_at=1),
        cpu_millicores=cpu,
    )


def test_reports_replace_per_node_and_notify_changes_only() -> None:
    store = ContainerStatuses()
    seen: list[set[int]] = []
    store.subscribe(seen.append)
    always = lambda _job, _run: True  # noqa: E731
    store.update("n1", [report(1), report(2, cpu=100)], always)
    store.update("n2", [report(3)], always)
    assert seen == [{1, 2}, {3}]
    store.update("n1", [report(1), report(2, cpu=900)], always)  # CPU moves: no pod change
    assert seen[-1] == {3} and store.get(2) == report(2, cpu=900)
    store.update("n1", [report(1, ready=False)], always)  # 2 is gone from n1, 1 went unready
    assert seen[-1] == {1, 2}
    assert store.get(2) is None and store.get(3) is not None  # n2's untouched
    assert store.get(1) == report(1, ready=False)


def test_reports_of_runs_not_running_there_are_dropped() -> None:
    store = ContainerStatuses()
    store.update("n1", [report(1, run=1), report(1, 1, run=2)], lambda _j, run: run == 2)
    assert store.get(1, 0) is None and store.get(1, 1) is not None


def test_a_job_end_and_a_lost_node_drop_their_reports() -> None:
    store = ContainerStatuses()
    seen: list[set[int]] = []
    store.subscribe(seen.append)
    store.update("n1", [report(1), report(1, 1), report(2)], lambda _j, _r: True)
    store.drop(1)
    assert seen[-1] == {1} and store.get(1) is None and store.get(1, 1) is None
    store.drop(1)
    assert len(seen) == 2  # nothing to drop: no call
    store.drop_node("n1")
    assert seen[-1] == {2} and store.get(2) is None
