"""The node agent: registers with the controller, runs what it is told, reports what ended.

The loop, as a recipe:

1. Register (``POST /v1/agents/register``) with this machine and every run known here;
   retry while the controller is unreachable, give up (exit status 2) if it refuses, also
   when another live agent holds the node. The answer gives this incarnation its epoch.
2. Long-poll commands (``GET /v1/agents/{node}/commands``, with the boot id and epoch) and
   execute them in seq order, only those for this epoch; re-register when the controller
   restarted (another controller_id) or forgot this agent.
3. Reap children on SIGCHLD (and every second, in case a signal was coalesced away).
4. Report ended runs in batches (``POST /v1/agents/{node}/reports``) until acknowledged,
   and now and then the whole inventory (what runs here), so that the controller ends what
   it believes runs here and does not.
5. On SIGTERM or SIGINT: stop the tasks (TERM, then KILL after 3 s), report, exit 0.
6. Fenced (409, reason ``fenced``: a newer incarnation holds the node): kill the tasks at
   once, report nothing, exit 3 (``phalanx.protocol.agent`` has the protocol).
7. Tend the containers (``phalanx.agent.tending``): restarts, probes, and every container's
   status with each inventory and at once when one changes (a dead endpoint goes not-ready
   without waiting for a heartbeat).
"""

from __future__ import annotations

import asyncio
import logging
import signal as signals
import time
import uuid
from collections.abc import Iterable
from typing import Any

import httpx
import pydantic

from phalanx.agent.cgroup import Cgroups
from phalanx.agent.containers import BACKOFF_INITIAL_S
from phalanx.agent.failover import FailoverTransport
from phalanx.agent.health import Fault, watch_health
from phalanx.agent.machine import Machine, health, host
from phalanx.agent.tasks import TaskRunner
from phalanx.agent.tending import ContainerTender
from phalanx.protocol.agent import (
    AgentCommand,
    AgentCommands,
    AgentFault,
    AgentHello,
    AgentReports,
    AgentWelcome,
    ContainerReport,
    HealthConfig,
    Refusal,
    ReportsAck,
    RunReport,
)

__all__ = ["EXIT_FENCED", "EXIT_REFUSED", "Agent"]

log = logging.getLogger(__name__)

EXIT_REFUSED = 2
"""Exit status when the controller refuses the registration (a misconfiguration, or another
live agent holds the node)."""
EXIT_FENCED = 3
"""Exit status when a newer incarnation took the node: this one's tasks were killed."""

_REGISTER_BACKOFF_CAP_S = 2.0
_REPORT_BACKOFF_CAP_S = 1.0
_FIRST_BACKOFF_S = 0.1
_SAFETY_REAP_S = 1.0
_LEASE_CHECK_S = 0.2
_STOP_GRACE_S = 3.0
_FINAL_REPORT_TIMEOUT_S = 2.0
_COMMANDS_PER_TURN = 32
_POLL_SLACK_S = 10.0
"""A long poll may take this much longer than the wait it asked for before it is given up."""
_REPOST_S = 1.0
"""How often ends the controller has not acknowledged yet are posted again."""
_INVENTORY_PER_HEARTBEAT = 3
"""Inventories sent per heartbeat: the controller reconciles within a heartbeat."""


class _Refused(Exception):
    """The controller answered a registration with 4xx."""


class _Fenced(Exception):
    """A newer incarnation of this node's agent holds the node."""


class Agent:
    """One node agent; ``run`` serves until stopped and answers the process exit status."""

    def __init__(
        self,
        machine: Machine,
        *,
        controller: str | None = None,
        socket_path: str | None = None,
        token: str | None = None,
        address: str = "127.0.0.1",
        runner: TaskRunner | None = None,
        handle_signals: bool = True,
        backoff_s: float | None = None,
    ) -> None:
        if (controller is None) == (socket_path is None):
            raise ValueError("give exactly one of controller (a URL) and socket_path")
        self.machine = machine
        self.boot_id = uuid.uuid4().hex
        self._controller = controller
        self._socket = socket_path
        self._token = token
        self._address = address
        if runner is None:
            runner = TaskRunner(Cgroups(), backoff_s=backoff_s or BACKOFF_INITIAL_S)
        self._runner = runner
        self._handle_signals = handle_signals
        self._stopping = asyncio.Event()
        self._ended = asyncio.Event()
        """Set when runs ended: wakes the report sender."""
        self._register_lock = asyncio.Lock()
        self._generation = 0
        """Counts registrations, so that two loops seeing one restart register once."""
        self._controller_id = ""
        self._epoch = 0
        """This incarnation's epoch (0 until the first registration)."""
        self._heartbeat_s = 30.0
        self._health = HealthConfig(gpus=False)
        """What to check of the node: the controller says at registration."""
        self._health_known = asyncio.Event()
        self._lease_s = 0.0
        """Kill every task after this long without an answered call (the controller's)."""
        self._heard = time.monotonic()
        """When the last call the controller answered was sent."""
        self._after = 0
        self._http: httpx.AsyncClient | None = None
        self._tender = ContainerTender(self._runner, address)

    @property
    def controller_id(self) -> str:
        return self._controller_id

    @property
    def epoch(self) -> int:
        return self._epoch

    @property
    def runner(self) -> TaskRunner:
        return self._runner

    def stop(self) -> None:
        """Ask ``run`` to stop the tasks, report and return (what SIGTERM does)."""
        self._stopping.set()

    async def run(self) -> int:
        """Serve until stopped; 0, or ``EXIT_REFUSED`` when the controller refuses this node."""
        loop = asyncio.get_running_loop()
        loop.set_exception_handler(_exception_handler)
        handled = [signals.SIGCHLD]
        loop.add_signal_handler(signals.SIGCHLD, self._collect)
        if self._handle_signals:
            for sig in (signals.SIGTERM, signals.SIGINT):
                loop.add_signal_handler(sig, self.stop)
                handled.append(sig)
        status = 0
        fenced = False
        try:
            async with self._client() as self._http:
                work = asyncio.create_task(self._serve())
                stopping = asyncio.create_task(self._stopping.wait())
                await asyncio.wait({work, stopping}, return_when=asyncio.FIRST_COMPLETED)
                stopping.cancel()
                work.cancel()
                await asyncio.gather(work, stopping, return_exceptions=True)
                if not work.cancelled() and work.exception() is not None:
                    if isinstance(work.exception(), _Fenced):
                        status, fenced = EXIT_FENCED, True
                    elif isinstance(work.exception(), _Refused):
                        status = EXIT_REFUSED
                    else:
                        log.error("the agent failed", exc_info=work.exception())
                        status = 1
                await self._shutdown(fenced=fenced)
        finally:
            await self._tender.close()
            for sig in handled:
                loop.remove_signal_handler(sig)
        return status

    # ------------------------------------------------------------------ the loops
    async def _serve(self) -> None:
        await self._register()
        try:
            async with asyncio.TaskGroup() as group:
                group.create_task(self._poll_commands())
                group.create_task(self._send_reports())
                group.create_task(self._reap_now_and_then())
                group.create_task(self._send_inventory())
                group.create_task(self._check_health())
                group.create_task(self._keep_lease())
                group.create_task(self._tender.tend(self._collect))
                group.create_task(self._tender.send(self._post_statuses))
        except* _Fenced:
            raise _Fenced() from None
        except* _Refused:
            raise _Refused() from None

    async def _register(self) -> None:
        """Register until the controller answers; raise ``_Refused`` on 4xx."""
        backoff = _FIRST_BACKOFF_S
        while True:
            m = self.machine
            facts = host()
            load, free = health()
            hello = AgentHello(
                node=m.name,
                address=self._address,
                boot_id=self.boot_id,
                epoch=self._epoch,
                cpus=m.cpus,
                memory_mb=m.memory_mb,
                gpus=m.gpus,
                gpu_model=m.gpu_model,
                runs=self._runner.hello_runs(),  # anew each try: runs end meanwhile
                arch=facts.arch,
                os=facts.os,
                boot_time=facts.boot_time,
                cpu_load=load,
                free_mem_mb=free,
            )
            try:
                resp = await self._http_client.post(
                    "/v1/agents/register", json=hello.model_dump(mode="json")
                )
                if resp.status_code == 200:
                    welcome = AgentWelcome.model_validate_json(resp.content)
                    self._welcomed(welcome)
                    return
                if resp.status_code == 409 and _refusal(resp) == "fenced":
                    raise _Fenced()
                if 400 <= resp.status_code < 500:
                    log.error(
                        "the controller refuses node %s (%d): %s",
                        m.name,
                        resp.status_code,
                        resp.text,
                    )
                    raise _Refused()
                log.warning("registration failed (%d): %s", resp.status_code, resp.text)
            except (httpx.HTTPError, pydantic.ValidationError) as exc:
                log.warning("registration failed: %s", exc)
            await asyncio.sleep(backoff)
            backoff = min(backoff * 2, _REGISTER_BACKOFF_CAP_S)

    def _acknowledge(self, sent: list[RunReport], acked: list[list[int]]) -> None:
        """Forget the ends the controller has journaled (it names them run by run)."""
        done = {(pair[0], pair[1]) for pair in acked if len(pair) == 2}
        self._runner.acknowledge(r for r in sent if (r.job_id, r.run) in done)

    def _welcomed(self, welcome: AgentWelcome) -> None:
        self._acknowledge(self._runner.unacked(), welcome.acked)
        if welcome.node != self.machine.name:
            log.warning("registered as %s, answered for %s", self.machine.name, welcome.node)
        self._controller_id = welcome.controller_id
        self._epoch = welcome.epoch
        self._heartbeat_s = welcome.heartbeat_s
        self._health = welcome.health
        self._health_known.set()
        self._lease_s = welcome.lease_s
        self._after = 0  # the new session numbers its commands afresh
        self._generation += 1
        log.info(
            "registered node %s with controller %s (boot %s, epoch %d)",
            self.machine.name,
            welcome.controller_id,
            self.boot_id,
            welcome.epoch,
        )

    async def _reregister(self, seen_generation: int) -> None:
        """Register again, unless another loop already did since ``seen_generation``."""
        async with self._register_lock:
            if self._generation == seen_generation:
                await self._register()

    async def _poll_commands(self) -> None:
        backoff = _FIRST_BACKOFF_S
        path = f"/v1/agents/{self.machine.name}/commands"
        while True:
            generation = self._generation
            wait = self._heartbeat_s
            params: dict[str, str | int | float] = {
                "after": self._after,
                "controller_id": self._controller_id,
                "wait": wait,
                "boot_id": self.boot_id,
                "epoch": self._epoch,
            }
            # Each poll (a heartbeat) tells how loaded the machine is: scontrol show node.
            load, free = health()
            if load is not None:
                params["cpu_load"] = load
            if free is not None:
                params["free_mem_mb"] = free
            try:
                resp = await self._http_client.get(
                    path, params=params, timeout=wait + _POLL_SLACK_S
                )
                if resp.status_code in (404, 409):
                    if _refusal(resp) == "fenced":
                        raise _Fenced()
                    await self._reregister(generation)
                    backoff = _FIRST_BACKOFF_S
                    continue
                if resp.status_code == 200:
                    answer = AgentCommands.model_validate_json(resp.content)
                    if answer.controller_id != self._controller_id:
                        log.info("the controller restarted (%s)", answer.controller_id)
                        await self._reregister(generation)
                    elif generation == self._generation:
                        # (Had another loop re-registered meanwhile, the answer would count
                        # from a stale ``after``; the next poll asks again.)
                        await self._execute(answer.commands, generation)
                    backoff = _FIRST_BACKOFF_S
                    continue
                log.warning("polling commands failed (%d): %s", resp.status_code, resp.text)
            except (httpx.HTTPError, pydantic.ValidationError) as exc:
                log.warning("polling commands failed: %s", exc)
            await asyncio.sleep(backoff)
            backoff = min(backoff * 2, _REGISTER_BACKOFF_CAP_S)

    async def _execute(self, commands: Iterable[AgentCommand], generation: int) -> None:
        for done, cmd in enumerate(sorted(commands, key=lambda c: c.seq), start=1):
            if cmd.seq <= self._after:
                continue  # already done: an answer that crossed our acknowledgement
            if cmd.epoch != self._epoch:
                # Meant for another incarnation of this node's agent: never acted on here.
                log.warning(
                    "ignored a %s for epoch %d (mine: %d)", cmd.kind, cmd.epoch, self._epoch
                )
                self._after = cmd.seq
                continue
            if cmd.kind == "launch":
                self._runner.launch(cmd)
            elif cmd.kind == "signal":
                self._runner.signal(cmd.job_id, cmd.run, cmd.signal)
            else:
                self._runner.kill(cmd.job_id, cmd.run)
            self._after = cmd.seq
            if done % _COMMANDS_PER_TURN == 0:
                # Let the loop run: each SIGCHLD is a byte in asyncio's signal socket, and a
                # full socket loses signals (SIGTERM too) while we launch a long batch.
                await asyncio.sleep(0)
                if generation != self._generation:
                    break  # re-registered meanwhile: the rest counts from a stale ``after``
        self._collect()  # failed launches are reported like ended runs

    async def _send_reports(self) -> None:
        """Post every unacknowledged end; ends during a post wait for the next one. Ends the
        controller keeps unacknowledged (a gang whose other nodes have not reported yet) are
        posted again after a while."""
        while True:
            try:
                await asyncio.wait_for(self._ended.wait(), _REPOST_S)
            except TimeoutError:
                if not self._runner.unacked():
                    continue
            self._ended.clear()
            await self._post_until_acknowledged()

    async def _post_until_acknowledged(self) -> None:
        backoff = _FIRST_BACKOFF_S
        path = f"/v1/agents/{self.machine.name}/reports"
        while batch := self._runner.unacked():
            generation = self._generation
            body = AgentReports(boot_id=self.boot_id, epoch=self._epoch, reports=batch).model_dump(
                mode="json"
            )
            try:
                resp = await self._http_client.post(path, json=body)
                if resp.status_code == 200:
                    self._acknowledge(batch, ReportsAck.model_validate_json(resp.content).acked)
                    return
                if resp.status_code in (404, 409):
                    if _refusal(resp) == "fenced":
                        raise _Fenced()
                    await self._reregister(generation)
                    continue
                log.warning("reporting failed (%d): %s", resp.status_code, resp.text)
            except httpx.HTTPError as exc:
                log.warning("reporting failed: %s", exc)
            await asyncio.sleep(backoff)
            backoff = min(backoff * 2, _REPORT_BACKOFF_CAP_S)

    async def _send_inventory(self) -> None:
        """Now and then, tell every run this node has, as of the last command carried out:
        the controller ends those it believes run here and do not (lost with an agent)."""
        path = f"/v1/agents/{self.machine.name}/reports"
        while True:
            await asyncio.sleep(self._heartbeat_s / _INVENTORY_PER_HEARTBEAT)
            # Under the registration lock: an inventory must not count commands of one
            # registration against the numbering of another.
            async with self._register_lock:
                sent = self._runner.hello_runs()
                body = AgentReports(
                    boot_id=self.boot_id,
                    epoch=self._epoch,
                    reports=sent,
                    inventory=True,
                    after=self._after,
                    controller_id=self._controller_id,
                    containers=self._tender.reports(),
                ).model_dump(mode="json")
                try:
                    resp = await self._http_client.post(path, json=body)
                except httpx.HTTPError as exc:
                    log.warning("the inventory was not sent: %s", exc)
                    continue
            if resp.status_code == 200:
                ended = [r for r in sent if r.state != "running"]
                self._acknowledge(ended, ReportsAck.model_validate_json(resp.content).acked)
            elif resp.status_code == 409 and _refusal(resp) == "fenced":
                raise _Fenced()
            # Anything else (unregistered, a controller restarting): the other loops
            # re-register; the next inventory follows that.

    async def _post_statuses(self, containers: list[ContainerReport]) -> None:
        body = AgentReports(
            boot_id=self.boot_id, epoch=self._epoch, reports=[], containers=containers
        ).model_dump(mode="json")
        try:
            resp = await self._http_client.post(
                f"/v1/agents/{self.machine.name}/reports", json=body
            )
        except httpx.HTTPError as exc:
            log.warning("container statuses were not sent: %s", exc)
            return
        if resp.status_code == 409 and _refusal(resp) == "fenced":
            raise _Fenced()

    async def _check_health(self) -> None:
        """Probe the GPUs and run the health program, each at its interval, and report what
        they find (every time: the controller drains once per reason, and again after an
        administrator resumed a node still at fault)."""
        await self._health_known.wait()
        await watch_health(
            lambda: self._health, self.machine.gpus, self.machine.name, self._report_fault
        )

    async def _keep_lease(self) -> None:
        """A node cut off from its controller stops its jobs before the controller gives
        them to other nodes: after ``lease_s`` without an answered call, every task is
        killed and its run reported ``lost`` (requeued as on a node failure) once the
        controller is back. No job runs on two nodes at once."""
        while True:
            await asyncio.sleep(_LEASE_CHECK_S)
            silent = time.monotonic() - self._heard
            if 0 < self._lease_s < silent and self._runner.running_count():
                lost = self._runner.lose_all(
                    f"its agent could not reach the controller for {silent:.1f} s"
                )
                if lost:
                    log.warning("no controller for %.1f s: killed %d runs", silent, lost)

    async def _sent(self, request: httpx.Request) -> None:
        request.extensions["phalanx_sent"] = time.monotonic()

    async def _answered(self, response: httpx.Response) -> None:
        sent = response.request.extensions.get("phalanx_sent")
        # A standby's 503 is no leader's word: an agent cut off from the leader but not
        # from a standby must still stop its jobs before the leader gives them away.
        if sent is not None and sent > self._heard and response.status_code != 503:
            self._heard = sent

    async def _report_fault(self, fault: Fault) -> None:
        body = AgentFault(
            boot_id=self.boot_id, epoch=max(self._epoch, 1), reason=fault.reason, fatal=fault.fatal
        )
        path = f"/v1/agents/{self.machine.name}/faults"
        try:
            resp = await self._http_client.post(path, json=body.model_dump(mode="json"))
        except httpx.HTTPError as exc:
            log.warning("reporting %r failed: %s", fault.reason, exc)
            return
        if resp.status_code != 204:
            log.warning("reporting %r failed (%d): %s", fault.reason, resp.status_code, resp.text)

    async def _reap_now_and_then(self) -> None:
        # SIGCHLDs arriving together are delivered as one; reap() takes all, but a signal
        # lost between a waitpid and the handler's return would otherwise wait for the next.
        while True:
            await asyncio.sleep(_SAFETY_REAP_S)
            self._collect()

    def _collect(self) -> None:
        if self._runner.reap():
            self._ended.set()

    # ------------------------------------------------------------------ the end
    async def _shutdown(self, *, fenced: bool = False) -> None:
        """Stop every task (TERM, then KILL after a grace), then report once, briefly.
        Fenced: KILL at once and report nothing (another incarnation holds the node)."""
        runner = self._runner
        if fenced:
            log.error(
                "node %s is held by a newer agent: epoch %d is fenced; killing %d runs",
                self.machine.name,
                self._epoch,
                runner.running_count(),
            )
            runner.signal_all(signals.SIGKILL)
            await self._wait_tasks(_STOP_GRACE_S)
            self._collect()
            return
        if runner.running_count():
            log.info("stopping %d runs", runner.running_count())
            runner.signal_all(signals.SIGTERM)
            await self._wait_tasks(_STOP_GRACE_S)
        if runner.unreaped():
            runner.signal_all(signals.SIGKILL)
            await self._wait_tasks(_STOP_GRACE_S)
        self._collect()
        final = runner.unacked()
        if not final or not self._controller_id:
            return
        body = AgentReports(boot_id=self.boot_id, epoch=self._epoch, reports=final).model_dump(
            mode="json"
        )
        try:
            resp = await self._http_client.post(
                f"/v1/agents/{self.machine.name}/reports",
                json=body,
                timeout=_FINAL_REPORT_TIMEOUT_S,
            )
            if resp.status_code == 200:
                self._acknowledge(final, ReportsAck.model_validate_json(resp.content).acked)
            else:
                log.warning("final reports refused (%d): %s", resp.status_code, resp.text)
        except httpx.HTTPError as exc:
            log.warning("final reports not sent: %s", exc)

    async def _wait_tasks(self, limit_s: float) -> None:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + limit_s
        while self._runner.unreaped() and loop.time() < deadline:
            await asyncio.sleep(0.02)
            self._collect()

    # ------------------------------------------------------------------ HTTP
    def _client(self) -> httpx.AsyncClient:
        headers = {"Authorization": f"Bearer {self._token}"} if self._token else {}
        transport: httpx.AsyncBaseTransport | None = None
        urls = [u.strip() for u in (self._controller or "").split(",") if u.strip()]
        if self._socket:
            transport = httpx.AsyncHTTPTransport(uds=self._socket)
        elif len(urls) > 1:
            transport = FailoverTransport(urls)
        return httpx.AsyncClient(
            base_url=urls[0] if urls else "http://phalanx",
            transport=transport,
            headers=headers,
            timeout=10.0,
            # The controller is ours to reach directly; a proxy from the environment is not.
            trust_env=False,
            event_hooks={"request": [self._sent], "response": [self._answered]},
        )

    @property
    def _http_client(self) -> httpx.AsyncClient:
        if self._http is None:
            raise RuntimeError("the agent is not running")
        return self._http


def _refusal(resp: httpx.Response) -> str | None:
    """The reason of a 409 from the controller (``Refusal``), None if it gives none."""
    try:
        return Refusal.model_validate_json(resp.content).reason
    except pydantic.ValidationError:
        return None


def _exception_handler(loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
    """asyncio's default handler, less one known, harmless race: when connecting to the
    controller's Unix socket has to wait (EAGAIN: connections not yet accepted), anyio's
    ``connect_unix`` registers ``future.set_result`` as the socket's writer callback and
    removes it only in a done-callback, one loop iteration later; a second wake-up in between
    sets the result twice. The connection proceeds and nothing is lost: not an error."""
    exc = context.get("exception")
    handle = context.get("handle")
    if (
        isinstance(exc, asyncio.InvalidStateError)
        and handle is not None
        and "set_result" in repr(handle)
    ):
        log.debug("ignored a second wake-up of a finished future: %r", handle)
        return
    loop.default_exception_handler(context)
