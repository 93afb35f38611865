"""The workload runner's drains: at most ``batch`` workloads each, those marked longest ago
first, the rest in the next drain; a batch Job's own status, written by the runner, does not
mark it again (its pass saw that status already), a status written by anyone else does."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from phalanx.domain.time import Instant
from phalanx.kube.controllers import JOBS, PODS, WorkloadRunner
from phalanx.kube.store import ObjectStore


def _runner(store: ObjectStore, deferred: list[Callable[[], None]]) -> WorkloadRunner:
    engine: Any = object()  # nothing here reaches the engine
    return WorkloadRunner(
        store, engine, clock=lambda: Instant(0), defer=deferred.append, log_dir="/nonexistent"
    )


def test_a_drain_reconciles_at_most_a_batch_the_oldest_marks_first() -> None:
    deferred: list[Callable[[], None]] = []
    runner = _runner(ObjectStore(), deferred)
    runner.batch = 3
    seen: list[Any] = []
    runner.reconcile = seen.append  # type: ignore[assignment,method-assign]
    keys = [(PODS, "ns", f"p-{i}") for i in (5, 1, 4, 2, 0)]
    for key in keys:
        runner._mark(key)
    runner._mark(keys[0])  # marked again: keeps its place
    assert len(deferred) == 1
    deferred.pop()()
    assert seen == sorted(keys[:3])  # the first three marked, in key order
    assert len(deferred) == 1  # the rest wait for the next drain
    deferred.pop()()
    assert seen[3:] == sorted(keys[3:])
    assert not deferred and not runner.dirty


def _job(name: str) -> dict[str, Any]:
    template = {"spec": {"containers": [{"name": "c", "image": "x"}], "restartPolicy": "Never"}}
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"template": template},
    }


def test_a_jobs_own_status_does_not_mark_it_again_anothers_write_does() -> None:
    deferred: list[Callable[[], None]] = []
    store = ObjectStore()
    runner = _runner(store, deferred)
    store.subscribe(runner.on_object)
    store.create(_job("j"))
    key = (JOBS, "default", "j")
    assert list(runner.dirty) == [key]
    runner.dirty.clear()
    runner.backlog[key] = {"startTime": "2026-01-01T00:00:00Z", "active": 0, "ready": 0}
    runner.flush()
    stored = store.get(*key)
    assert stored is not None and stored["status"]["startTime"] == "2026-01-01T00:00:00Z"
    assert not runner.dirty
    # someone else's status write is news
    stored["status"] = {**stored["status"], "active": 1}
    store.update_status(stored)
    assert list(runner.dirty) == [key]
