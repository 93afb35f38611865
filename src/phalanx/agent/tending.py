"""The agent's kubelet part: it tends the containers of its runs (``phalanx.agent.containers``)
and says how they are.

``tend`` (a loop, every ``TEND_S``): restarts whose back-off is over and KILLs after a probe's
grace (``TaskRunner.tick``), probes due (each in an asyncio task of its own; one at a time per
probe), and ``changed`` set as soon as any container's report would differ. ``send`` (a loop)
posts every container's report at once after a change, and every ``STATUS_EVERY_S`` while there
are containers (their CPU usage moves).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable

import httpx

from phalanx.agent.containers import Container, ProbeState
from phalanx.agent.cpuusage import CpuMeter
from phalanx.agent.probing import probe
from phalanx.agent.tasks import RunKey, TaskRunner
from phalanx.protocol.agent import ContainerReport

__all__ = ["STATUS_EVERY_S", "TEND_S", "ContainerTender"]

log = logging.getLogger("phalanx.agent.agent")

TEND_S = 0.05
"""How often containers are looked at: restarts due, probes due, changes to report."""
STATUS_EVERY_S = 5.0
"""Container statuses (CPU usage with them) are sent at least this often while any runs."""


class ContainerTender:
    """The containers of ``runner``'s runs; probes without a host go to ``address``."""

    def __init__(self, runner: TaskRunner, address: str) -> None:
        self._runner = runner
        self._address = address
        self._cpu = CpuMeter(runner.cgroup_of)
        self._http: httpx.AsyncClient | None = None
        self._probing: set[asyncio.Task[None]] = set()
        self.changed = asyncio.Event()
        """Set when a container's report changed (or a run ended): report now."""

    def reports(self) -> list[ContainerReport]:
        """Every container's report, CPU usage sampled now."""
        return self._runner.container_reports(self._cpu.seconds)

    async def tend(self, collect: Callable[[], None]) -> None:
        """Forever: restarts and KILLs due, ``collect`` (the agent's reaping), probes due."""
        seen = self._runner.container_version()
        while True:
            await asyncio.sleep(TEND_S)
            self._runner.tick()
            collect()
            for key, container in self._runner.containers():
                now = time.monotonic()
                for kind in container.due_probes(now):
                    state = container.probes[kind]
                    state.begin(now)  # now: the next turn must not send it again
                    task = asyncio.create_task(self._probe(key, container, kind, state))
                    self._probing.add(task)
                    task.add_done_callback(self._probing.discard)
            version = self._runner.container_version()
            if version != seen:
                seen = version
                self.changed.set()

    async def send(self, post: Callable[[list[ContainerReport]], Awaitable[None]]) -> None:
        """Forever: ``post`` every report after a change, and now and then while there are
        containers."""
        sent_some = False
        while True:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.changed.wait(), STATUS_EVERY_S)
            self.changed.clear()
            reports = self.reports()
            # A node without containers (Slurm's jobs) posts nothing; the last container
            # gone is said once (an empty list).
            if reports or sent_some:
                await post(reports)
                sent_some = bool(reports)

    async def close(self) -> None:
        for task in list(self._probing):
            task.cancel()
        if self._http is not None:
            await self._http.aclose()
            self._http = None

    async def _probe(self, key: RunKey, container: Container, kind: str, state: ProbeState) -> None:
        if self._http is None:
            # Probes reach the pods, never a proxy; the kubelet checks no certificate.
            self._http = httpx.AsyncClient(trust_env=False, verify=False)
        passed, message = await probe(
            state.spec, container, address=self._address, http=self._http, runner=self._runner
        )
        if container.probes.get(kind) is not state:
            return  # the process it was for is gone (restarted, ended)
        rank = container.task.rank
        if not passed:
            log.info("job %d run %d rank %d: %s probe failed: %s", *key, rank, kind, message)
        why = container.probed(kind, passed, message)
        if why is not None:
            self._runner.kill_container(*key, rank, why)
