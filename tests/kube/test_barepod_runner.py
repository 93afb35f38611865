"""Bare pods through the workload runner and the live controller with its agents in-process
(``phalanx.testing.live_stack``): a crashing pod restarts in place, its pod's status says so,
``pod_container`` answers its report, and deleting it stops it for good."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from runner_loop import Loop

from phalanx.domain.caller import Caller
from phalanx.kube.controllers import PODS, WorkloadRunner
from phalanx.kube.store import ObjectStore
from phalanx.testing.live import LiveStack, live_stack


class World:
    def __init__(self, tmp_path: Path) -> None:
        self.stack: LiveStack = live_stack(nodes=1, gpus=1, backoff_s=0.05)
        self.store = ObjectStore()
        self.loop = Loop(self.stack)
        fleet = self.stack.controller.fleet
        self.runner = WorkloadRunner(
            self.store,
            self.stack.controller,
            clock=self.stack.controller.clock.now,
            defer=self.loop.defer,
            log_dir=str(tmp_path / "logs"),
            workdir=str(tmp_path),
            default_user="tester",
            known_user=lambda _user: True,
            containers=fleet.containers.get,
        )
        self.runner.start(self.stack.controller.watch)
        fleet.containers.subscribe(self.runner.on_jobs)

    def step(self) -> None:
        self.loop.step()

    def until(self, done: Any, timeout: float = 20) -> None:
        assert self.loop.run(done, timeout), "timed out"

    def pod(self, name: str) -> dict[str, Any]:
        found = self.store.get(PODS, "default", name)
        assert found is not None
        return found


@pytest.fixture
def world(tmp_path: Path) -> Iterator[World]:
    it = World(tmp_path)
    yield it
    admin = Caller(0, "root", admin=True)
    for job in it.stack.controller.jobs():
        it.stack.controller.cancel(job.id, admin)
    tasks = it.stack.agents.runner
    it.until(lambda: not tasks.running_count() and not tasks.unreaped(), 30)


def pod(name: str, command: list[str], **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}"},
        "spec": {"containers": [{"name": "main", "image": "x", "command": command}], **spec},
    }


def restarts(p: dict[str, Any]) -> int:
    statuses = (p.get("status") or {}).get("containerStatuses") or [{}]
    return int(statuses[0].get("restartCount", 0))


def test_a_crashing_bare_pod_restarts_in_place(world: World) -> None:
    world.store.create(pod("crash", ["sh", "-c", "exit 3"]))
    world.until(lambda: restarts(world.pod("crash")) >= 3)
    p = world.pod("crash")
    assert p["status"]["phase"] == "Running"
    [status] = p["status"]["containerStatuses"]
    assert status["lastState"]["terminated"]["exitCode"] == 3
    ids = {j.id for j in world.stack.controller.jobs(finished=True)}
    assert len(ids) == 1  # one engine job all along
    view = world.runner.pod_container("default", "crash")
    assert view is not None and view.restart_count >= 3 and not view.ready
    assert world.runner.pod_container("default", "nope") is None

    world.store.delete(PODS, "default", "crash")
    tasks = world.stack.agents.runner
    world.until(lambda: not tasks.running_count() and not tasks.unreaped())
    [job] = world.stack.controller.jobs(finished=True)
    assert job.state.value == "CANCELLED"
    assert world.stack.controller.fleet.containers.get(job.id) is None


def test_a_pod_that_exits_zero_under_on_failure_succeeds(world: World) -> None:
    world.store.create(pod("once", ["true"], restartPolicy="OnFailure"))
    world.until(lambda: (world.pod("once").get("status") or {}).get("phase") == "Succeeded")
    assert restarts(world.pod("once")) == 0


def test_a_pod_that_cannot_run_says_why(world: World) -> None:
    world.store.create(pod("bad", ["true"], restartPolicy="Sometimes"))
    world.until(lambda: bool((world.pod("bad").get("status") or {}).get("conditions")))
    [cond] = world.pod("bad")["status"]["conditions"]
    assert cond["type"] == "PodScheduled" and cond["status"] == "False"
    assert cond["message"].startswith("spec.restartPolicy: Unsupported value")
    assert world.stack.controller.jobs(finished=True) == []


def test_cpu_usage_reaches_pod_container(world: World) -> None:
    world.store.create(pod("busy", [sys.executable, "-c", "while True: pass"]))
    world.store.create(pod("idle", ["sleep", "300"]))

    def cpu(name: str) -> int | None:
        view = world.runner.pod_container("default", name)
        return None if view is None else view.cpu_millicores

    def measured() -> bool:
        busy, idle = cpu("busy"), cpu("idle")
        # a spinning process against a sleeping one (cores here are shared and loaded)
        return busy is not None and idle is not None and busy >= 100 and idle < 50

    world.until(measured, 30)
