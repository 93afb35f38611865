"""The workload runner of a controller that serves the Kubernetes API: wired to the object
store, the controller's decisions and the event loop; pods' output in ``kube-logs`` of the
state directory. Beside it, the EndpointSlice controller (``EndpointsRunner``). The
autoscalers (HPA, InferenceService) tick with it, reading metrics from the service router
and the agents (``phalanx.server.autoscalemetrics``); the dashboard's serving page reads
them all through ``view``."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Iterable, Mapping
from typing import Any

from phalanx.domain.time import Duration
from phalanx.kube.autoscalers import HPA_SYNC, Autoscalers
from phalanx.kube.controllers import WorkloadRunner
from phalanx.kube.endpointrunner import EndpointsRunner
from phalanx.kube.inferenceservices import InferenceServices
from phalanx.kube.nodeviews import NodeViews
from phalanx.kube.pace import Pace
from phalanx.kube.queueobjects import QueueObjects
from phalanx.kube.queuestatus import QueueStatus
from phalanx.kube.servingview import ServingView
from phalanx.kube.store import ObjectStore
from phalanx.kube.workload_views import WorkloadViews
from phalanx.live.controller import Controller
from phalanx.server.autoscalemetrics import RouterMetrics
from phalanx.server.statedir import StateDir
from phalanx.workloads.podspec import LOCALHOST

__all__ = ["Workloads"]

log = logging.getLogger("phalanx.kube.workloads")
# The router is polled every second: one INFO line per poll would drown the controller's log.
logging.getLogger("httpx").setLevel(logging.WARNING)

FLUSH_S = 0.02
"""Workloads' statuses and events are written this long after the drain that made them: the
controller's pass and the pods' own writes go first, and a burst of changes is one write."""
TICK_S = 1.0
"""How often pending pods are looked at again (their reason or expected start may move):
``TICK_LOOKS`` of the waiting workloads a tick, in turn (``WorkloadRunner.tick``)."""


class Workloads:
    """``start()`` on the running event loop, ``stop()`` when the controller stops."""

    def __init__(
        self,
        store: ObjectStore,
        controller: Controller,
        state: StateDir,
        user: str,
        *,
        hpa_sync_ms: Duration = HPA_SYNC,
        pace: Pace | None = None,
    ):
        self.controller = controller
        registry = controller.fleet.registry

        def address(node: str) -> str:
            try:
                return registry[node].address or LOCALHOST
            except KeyError:
                return LOCALHOST

        loop = asyncio.get_running_loop()
        # Behind the API's requests (``pace``), as kube-controller-manager's queues lag
        # behind kube-apiserver; without one, at the loop's next turn.
        defer = pace.defer if pace is not None else loop.call_soon
        self.runner = WorkloadRunner(
            store,
            controller,
            clock=controller.clock.now,
            defer=defer,
            log_dir=str(state.root / "kube-logs"),
            workdir=str(state.root),
            default_user=user,
            address=address,
            later=lambda fn: loop.call_later(FLUSH_S, defer, fn),
            containers=controller.fleet.containers.get,
        )
        self.metrics = RouterMetrics(controller.clock.now, state.root, cpu=self._cpu)
        self.autoscalers = Autoscalers(store, self.metrics, hpa_sync=hpa_sync_ms)
        isvcs = InferenceServices(store, self.metrics, scale_log=self.autoscalers.scale_log)
        self.autoscalers.hooks.append(isvcs.tick)
        self.view = ServingView(store, self.metrics, self.autoscalers.scale_log, isvcs.config)
        """What the dashboard's serving page shows."""
        self.endpoints = EndpointsRunner(store, loop.call_soon)
        self.queues = QueueObjects(
            store,
            lambda: controller.cluster,
            lambda event: controller.loop.accept([event]),
            now=controller.clock.now,
            defer=loop.call_soon,
            status=QueueStatus(store, controller.jobs),
        )
        self.workload_views = WorkloadViews(store, controller, controller.clock.now)
        self.nodes = NodeViews(store, controller, defer=loop.call_soon)
        self._task: asyncio.Task[None] | None = None
        self._leading = False

    def lead(self, queue_objects: Iterable[Mapping[str, Any]] = ()) -> None:
        """This controller leads now: the queue objects of its ``--queues`` file are
        created where absent, and the queue objects feed the engine from now on (a standby
        must not journal anything)."""
        made = self.queues.seed(queue_objects)
        if made:
            log.info("created %d queue objects of the queues file", made)
        swept = self.runner.sweep()  # held pods' engine jobs its predecessor left
        if swept:
            log.info("cancelled %d engine jobs of queued workloads no pod claims", len(swept))
        self.queues.start()
        self.nodes.start()
        self._leading = True

    def _cpu(self, namespace: str, pod: str) -> int | None:
        """A pod's CPU in millicores as its agent last reported it (HPA's resource metric)."""
        view = self.runner.pod_container(namespace, pod)
        return None if view is None else view.cpu_millicores

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
            if self._leading:
                # pending and admitted counts move with every job, sbatch ones too
                self.queues.tick()
                try:
                    self.nodes.tick()
                    self.workload_views.tick()
                except Exception:  # a view is for show: it must not stop the ticks
                    log.exception("workload views")
            await self.metrics.refresh()
            try:
                self.autoscalers.tick(self.controller.clock.now())
            except Exception:  # one bad object must not stop every autoscaler for good
                log.exception("autoscalers")

    async def stop(self) -> None:
        self.queues.stop()
        self.nodes.stop()
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        await self.metrics.close()
