"""The workload runner of a controller that serves the Kubernetes API: wired to the object
store, the controller's decisions and the event loop; pods' output in ``kube-logs`` of the
state directory. Beside it, the EndpointSlice controller (``EndpointsRunner``)."""

from __future__ import annotations

import asyncio
import contextlib

from phalanx.kube.controllers import WorkloadRunner
from phalanx.kube.endpointrunner import EndpointsRunner
from phalanx.kube.store import ObjectStore
from phalanx.live.controller import Controller
from phalanx.server.statedir import StateDir
from phalanx.workloads.podspec import LOCALHOST

__all__ = ["Workloads"]

FLUSH_S = 0.02
"""Workloads' statuses and events are written this long after the drain that made them: the
controller's pass and the pods' own writes go first, and a burst of changes is one write."""
TICK_S = 1.0
"""How often pending pods are looked at again (their reason or expected start may move)."""


class Workloads:
    """``start()`` on the running event loop, ``stop()`` when the controller stops."""

    def __init__(self, store: ObjectStore, controller: Controller, state: StateDir, user: str):
        self.controller = controller
        registry = controller.fleet.registry

        def address(node: str) -> str:
            try:
                return registry[node].address or LOCALHOST
            except KeyError:
                return LOCALHOST

        loop = asyncio.get_running_loop()
        self.runner = WorkloadRunner(
            store,
            controller,
            clock=controller.clock.now,
            defer=loop.call_soon,
            log_dir=str(state.root / "kube-logs"),
            workdir=str(state.root),
            default_user=user,
            address=address,
            later=lambda fn: loop.call_later(FLUSH_S, fn),
            containers=controller.fleet.containers.get,
        )
        self.endpoints = EndpointsRunner(store, loop.call_soon)
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        self.runner.start(self.controller.watch)
        self.endpoints.start()
        # a container's report changed (ready, restarts, state): its pod's status follows
        self.controller.fleet.containers.subscribe(self.runner.on_jobs)
        self._task = asyncio.create_task(self._ticks())

    async def _ticks(self) -> None:
        while True:
            await asyncio.sleep(TICK_S)
            self.runner.tick()

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
