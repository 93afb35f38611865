"""The workload runner journals the engine submissions of one drain's pods together (one
write, one fsync: ``phalanx.kube.podsubmit``); a journal that refuses them leaves every one
of those pods Pending, saying why."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from phalanx.config.clusterspec import regular_cluster
from phalanx.engine import Event
from phalanx.kube.controllers import PODS, WorkloadRunner
from phalanx.kube.store import ObjectStore
from phalanx.live.controller import Controller
from phalanx.policies.catalog import profile
from phalanx.runtime import FakeClock
from phalanx.runtime.ports import MemoryJournal


class CountingJournal(MemoryJournal):
    def __init__(self) -> None:
        super().__init__()
        self.writes: list[int] = []

    def write(self, events: Sequence[Event]) -> None:
        super().write(events)
        self.writes.append(len(events))


def _job(name: str) -> dict[str, Any]:
    container = {"name": "c", "image": "x", "command": ["true"]}
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"template": {"spec": {"containers": [container], "restartPolicy": "Never"}}},
    }


def _stack(
    tmp_path: Path,
) -> tuple[ObjectStore, CountingJournal, WorkloadRunner, Callable[[], None]]:
    clock = FakeClock(1_000)
    journal = CountingJournal()
    controller = Controller(
        regular_cluster(2, 8, 2, prefix="n"),
        profile("phalanx"),
        journal,
        clock=clock,
        run_as_submitter=False,
    )
    store = ObjectStore()
    deferred: list[Callable[[], None]] = []
    runner = WorkloadRunner(
        store,
        controller,
        clock=clock.now,
        defer=deferred.append,
        log_dir=str(tmp_path / "logs"),
        workdir=str(tmp_path),
        known_user=lambda _user: True,
    )
    runner.start()

    def run_deferred() -> None:
        while deferred:
            deferred.pop(0)()

    return store, journal, runner, run_deferred


def test_one_drain_journals_all_its_pods_submissions_in_one_write(tmp_path: Path) -> None:
    store, journal, runner, run_deferred = _stack(tmp_path)
    for i in range(5):
        store.create(_job(f"j{i}"))
    run_deferred()
    assert journal.writes == [5]  # five pods' submissions, one write
    pods = store.list(PODS)
    assert len(pods) == 5
    ids = {runner.assigned[("default", p["metadata"]["name"])][1] for p in pods}
    assert len(ids) == 5  # each pod its own engine job
    assert {runner.owners[i][2] for i in ids} == {f"j{i}" for i in range(5)}


def test_a_refused_write_leaves_every_pod_of_the_drain_pending_and_saying_why(
    tmp_path: Path,
) -> None:
    store, journal, runner, run_deferred = _stack(tmp_path)
    journal.fail = True
    for i in range(3):
        store.create(_job(f"j{i}"))
    run_deferred()
    runner.flush()
    assert journal.writes == [] and runner.assigned == {}
    for pod in store.list(PODS):
        scheduled = [c for c in pod["status"]["conditions"] if c["type"] == "PodScheduled"]
        assert scheduled[0]["reason"] == "Unschedulable"
        assert "journal is full" in scheduled[0]["message"]
    reasons = [e["reason"] for e in store.list(("", "events"))]
    assert reasons.count("FailedScheduling") == 3
