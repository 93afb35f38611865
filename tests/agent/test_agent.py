"""The real agent against a fake controller served by uvicorn on a Unix socket.

Everything runs in one event loop: the fake controller (FastAPI in uvicorn) and the agent
under test, so each test is a plain function that calls ``asyncio.run``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
import subprocess
import sys
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import uvicorn
from fastapi import FastAPI, HTTPException, Request
from fastapi.responses import JSONResponse

from phalanx.agent import EXIT_FENCED, EXIT_REFUSED, Agent, describe
from phalanx.agent.__main__ import parse_args
from phalanx.api.wire import (
    AgentCommand,
    AgentCommands,
    AgentHello,
    AgentReports,
    AgentWelcome,
    Refusal,
    RunReport,
    TaskSpec,
)

TOKEN = "s3cret"


class FakeController:
    """Hands out the commands a test queues and records hellos and reports."""

    def __init__(self, nodes: tuple[str, ...] = ("n1",), heartbeat_s: float = 0.5) -> None:
        self.nodes = nodes
        self.heartbeat_s = heartbeat_s
        self.controller_id = uuid.uuid4().hex
        self.hellos: list[AgentHello] = []
        self.reports: list[RunReport] = []
        self.commands: list[AgentCommand] = []
        self.authorizations: set[str | None] = set()
        self.epoch = 1
        self.refuse: Refusal | None = None
        """Set: every call is answered 409 with it."""
        self.inventories: list[AgentReports] = []

    def queue(self, kind: str, job_id: int, **fields: object) -> None:
        seq = len(self.commands) + 1
        spec = {"seq": seq, "epoch": self.epoch, "kind": kind, "job_id": job_id, "run": 0}
        spec.update(fields)
        self.commands.append(AgentCommand.model_validate(spec))

    def told(self) -> set[tuple[int, int]]:
        return {(r.job_id, r.run) for r in self.reports}

    def restart(self) -> None:
        """A new controller: new id, its own command numbering, nothing queued."""
        self.controller_id = uuid.uuid4().hex
        self.commands = []

    def app(self) -> FastAPI:
        app = FastAPI()

        @app.middleware("http")
        async def authorization(request: Request, call_next: Callable[..., object]) -> object:
            self.authorizations.add(request.headers.get("authorization"))
            return await call_next(request)  # type: ignore[misc]

        def refused() -> JSONResponse | None:
            if self.refuse is None:
                return None
            return JSONResponse(self.refuse.model_dump(), status_code=409)

        @app.post("/v1/agents/register", response_model=None)
        async def register(hello: AgentHello) -> AgentWelcome | JSONResponse:
            if hello.node not in self.nodes:
                raise HTTPException(404, f"unknown node {hello.node}")
            if (no := refused()) is not None:
                return no
            self.hellos.append(hello)
            return AgentWelcome(
                controller_id=self.controller_id,
                node=hello.node,
                epoch=self.epoch,
                heartbeat_s=self.heartbeat_s,
            )

        @app.get("/v1/agents/{node}/commands", response_model=None)
        async def commands(
            node: str, after: int, wait: float, boot_id: str, epoch: int
        ) -> AgentCommands | JSONResponse:
            deadline = asyncio.get_running_loop().time() + wait
            while True:
                if (no := refused()) is not None:
                    return no
                pending = [c for c in self.commands if c.seq > after]
                if pending or asyncio.get_running_loop().time() >= deadline:
                    return AgentCommands(
                        controller_id=self.controller_id, epoch=epoch, commands=pending
                    )
                await asyncio.sleep(0.01)

        @app.post("/v1/agents/{node}/reports", response_model=None)
        async def reports(node: str, body: AgentReports) -> dict[str, Any] | JSONResponse:
            if (no := refused()) is not None:
                return no
            if body.inventory:
                self.inventories.append(body)
            ended = [r for r in body.reports if r.state != "running"]
            self.reports.extend(r for r in ended if (r.job_id, r.run) not in self.told())
            return {"acked": [[r.job_id, r.run] for r in ended]}

        return app


class _QuietServer(uvicorn.Server):
    # The agent under test owns the signal handlers of this loop.
    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield


@contextlib.asynccontextmanager
async def serving(fake: FakeController, path: Path) -> AsyncIterator[None]:
    config = uvicorn.Config(
        fake.app(), uds=str(path), log_level="warning", lifespan="off", timeout_graceful_shutdown=1
    )
    server = _QuietServer(config)
    task = asyncio.create_task(server.serve())
    await until(lambda: server.started)
    try:
        yield
    finally:
        server.should_exit = True
        await task


async def until(condition: Callable[[], object], timeout_s: float = 10.0) -> None:
    deadline = asyncio.get_running_loop().time() + timeout_s
    while not condition():
        assert asyncio.get_running_loop().time() < deadline, "timed out"
        await asyncio.sleep(0.01)


def shell_task(tmp_path: Path, script: str, rank: int) -> dict[str, object]:
    spec = TaskSpec(
        argv=["sh", "-c", script],
        cwd=str(tmp_path),
        env={"PATH": "/usr/bin:/bin"},
        stdout=str(tmp_path / "out.txt"),
        stderr=None,
        rank=rank,
    )
    return spec.model_dump()


def start_agent(path: Path, node: str = "n1") -> tuple[Agent, asyncio.Task[int]]:
    machine = describe(node, gpus=8, gpu_model="h100", cpus=4, memory_mb=8192)
    agent = Agent(machine, socket_path=str(path), token=TOKEN, handle_signals=False)
    return agent, asyncio.create_task(agent.run())


def test_the_agent_registers_runs_reports_and_follows_a_restart(tmp_path: Path) -> None:
    async def scenario() -> None:
        fake = FakeController()
        sock = tmp_path / "c.sock"
        async with serving(fake, sock):
            agent, running = start_agent(sock)
            await until(lambda: fake.hellos)
            hello = fake.hellos[0]
            assert (hello.node, hello.gpus, hello.gpu_model, hello.runs) == ("n1", 8, "h100", [])

            tasks = [shell_task(tmp_path, "exit 3", 0), shell_task(tmp_path, "exit 1", 1)]
            fake.queue("launch", 5, tasks=tasks)
            await until(lambda: fake.reports)
            [report] = fake.reports
            assert (report.job_id, report.state, report.exit_code, report.signal) == (
                5,
                "exited",
                3,
                0,
            )
            await until(lambda: not agent.runner.unacked())

            fake.restart()
            # The fake records a hello before its answer reaches the agent: wait for both.
            await until(lambda: len(fake.hellos) == 2)
            await until(lambda: agent.controller_id == fake.controller_id)
            again = fake.hellos[1]
            assert again.boot_id == hello.boot_id
            assert again.runs == [] and again.epoch == 1  # the epoch it held

            agent.stop()
            assert await running == 0
        assert fake.authorizations == {f"Bearer {TOKEN}"}

    asyncio.run(scenario())


def test_a_run_still_running_is_in_the_hello_and_can_be_killed(tmp_path: Path) -> None:
    async def scenario() -> None:
        fake = FakeController()
        sock = tmp_path / "c.sock"
        async with serving(fake, sock):
            agent, running = start_agent(sock)
            await until(lambda: fake.hellos)
            tasks = [shell_task(tmp_path, "sleep 30", r) for r in range(2)]
            fake.queue("launch", 6, tasks=tasks)
            await until(lambda: agent.runner.running_count() == 1)

            fake.restart()
            await until(lambda: len(fake.hellos) == 2)
            [live] = fake.hellos[1].runs
            assert (live.job_id, live.run, live.state) == (6, 0, "running")

            fake.queue("kill", 6)  # seq 1 again: the new controller counts afresh
            await until(lambda: fake.reports)
            assert [(r.job_id, r.signal) for r in fake.reports] == [(6, signal.SIGKILL)]
            agent.stop()
            assert await running == 0

    asyncio.run(scenario())


def test_stopping_the_agent_stops_its_tasks_and_reports_them(tmp_path: Path) -> None:
    async def scenario() -> None:
        fake = FakeController()
        sock = tmp_path / "c.sock"
        async with serving(fake, sock):
            agent, running = start_agent(sock)
            await until(lambda: fake.hellos)
            fake.queue("launch", 7, tasks=[shell_task(tmp_path, "sleep 30", 0)])
            await until(lambda: agent.runner.running_count() == 1)
            agent.stop()
            assert await running == 0
            assert [(r.job_id, r.signal) for r in fake.reports] == [(7, signal.SIGTERM)]
            assert agent.runner.unreaped() == 0

    asyncio.run(scenario())


def test_an_unknown_node_is_refused_with_status_2(tmp_path: Path) -> None:
    async def scenario() -> None:
        fake = FakeController()
        sock = tmp_path / "c.sock"
        async with serving(fake, sock):
            _, running = start_agent(sock, node="stranger")
            assert await asyncio.wait_for(running, 10) == EXIT_REFUSED

    asyncio.run(scenario())


def test_the_agent_process_stops_its_tasks_on_sigterm(tmp_path: Path) -> None:
    async def scenario() -> None:
        fake = FakeController()
        sock = tmp_path / "c.sock"
        token = tmp_path / "token"
        token.write_text(f"{TOKEN}\n")
        async with serving(fake, sock):
            argv = ["--node", "n1", "--socket", str(sock), "--token-file", str(token)]
            agent = subprocess.Popen([sys.executable, "-m", "phalanx.agent", *argv])
            try:
                await until(lambda: fake.hellos)
                fake.queue("launch", 8, tasks=[shell_task(tmp_path, "echo up; sleep 30", 0)])
                out = tmp_path / "out.txt"
                await until(lambda: out.exists() and out.read_text() == "up\n")
                agent.send_signal(signal.SIGTERM)
                await until(lambda: agent.poll() is not None)
            finally:
                if agent.poll() is None:
                    agent.kill()
                    agent.wait()
            assert agent.returncode == 0
            assert [(r.job_id, r.signal) for r in fake.reports] == [(8, signal.SIGTERM)]
        assert fake.authorizations == {f"Bearer {TOKEN}"}

    asyncio.run(scenario())


@pytest.mark.parametrize(
    "argv",
    [
        ["--node", "n1"],
        ["--controller", "http://x", "--socket", "/s"],
        ["--socket", "/s", "--gpus", "-1"],
        ["--socket", "/s", "--token-file", "/nonexistent/token"],
    ],
)
def test_bad_arguments_exit_with_status_2(argv: list[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        parse_args(argv)
    assert exited.value.code == 2


def test_a_second_wake_up_of_a_finished_future_is_not_an_error(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # anyio's connect_unix can set its future twice when the connection had to wait.
    from phalanx.agent.agent import _exception_handler

    async def race_then_fault() -> None:
        loop = asyncio.get_running_loop()
        loop.set_exception_handler(_exception_handler)
        future = loop.create_future()
        loop.call_soon(future.set_result, None)
        loop.call_soon(future.set_result, None)
        await future
        await asyncio.sleep(0)
        loop.call_soon(lambda: 1 / 0)  # any other fault is still reported
        await asyncio.sleep(0.01)

    with caplog.at_level(logging.DEBUG):
        asyncio.run(race_then_fault())
    errors = [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert len(errors) == 1 and "ZeroDivisionError" in (
        errors[0].exc_text or str(errors[0].exc_info)
    )
    assert any("second wake-up" in r.getMessage() for r in caplog.records)


def test_a_fenced_agent_kills_its_tasks_at_once_and_exits(tmp_path: Path) -> None:
    async def scenario() -> None:
        fake = FakeController()
        sock = tmp_path / "c.sock"
        async with serving(fake, sock):
            agent, running = start_agent(sock)
            await until(lambda: fake.hellos)
            fake.queue("launch", 9, tasks=[shell_task(tmp_path, "sleep 30", 0)])
            await until(lambda: agent.runner.running_count() == 1)
            fake.refuse = Refusal(error="a newer agent holds n1", reason="fenced", epoch=2)
            assert await asyncio.wait_for(running, 10) == EXIT_FENCED
            assert agent.runner.unreaped() == 0 and agent.runner.running_count() == 0
            assert fake.reports == []  # a fenced incarnation tells nothing more

    asyncio.run(scenario())


def test_a_second_agent_for_a_held_node_exits_with_status_2(tmp_path: Path) -> None:
    async def scenario() -> None:
        fake = FakeController()
        fake.refuse = Refusal(error="a live agent holds n1", reason="held", epoch=1)
        sock = tmp_path / "c.sock"
        async with serving(fake, sock):
            agent, running = start_agent(sock)
            assert await asyncio.wait_for(running, 10) == EXIT_REFUSED
            assert agent.epoch == 0

    asyncio.run(scenario())


def test_commands_for_another_epoch_are_ignored(tmp_path: Path) -> None:
    async def scenario() -> None:
        fake = FakeController()
        sock = tmp_path / "c.sock"
        marker = tmp_path / "ran"
        async with serving(fake, sock):
            agent, running = start_agent(sock)
            await until(lambda: fake.hellos)
            stale = [shell_task(tmp_path, f"touch {marker}", 0)]
            fake.queue("launch", 10, tasks=stale, epoch=fake.epoch + 1)
            fake.queue("launch", 11, tasks=[shell_task(tmp_path, "exit 0", 0)])
            await until(lambda: fake.reports)
            assert [r.job_id for r in fake.reports] == [11]
            assert not marker.exists()
            agent.stop()
            assert await running == 0

    asyncio.run(scenario())


def test_the_inventory_tells_every_run_and_the_last_command_carried_out(tmp_path: Path) -> None:
    async def scenario() -> None:
        fake = FakeController(heartbeat_s=0.3)
        sock = tmp_path / "c.sock"
        async with serving(fake, sock):
            agent, running = start_agent(sock)
            await until(lambda: fake.hellos)
            fake.queue("launch", 12, tasks=[shell_task(tmp_path, "sleep 30", 0)])
            await until(lambda: agent.runner.running_count() == 1)
            await until(lambda: any(i.reports for i in fake.inventories))
            last = [i for i in fake.inventories if i.reports][-1]
            assert [(r.job_id, r.state) for r in last.reports] == [(12, "running")]
            assert (last.after, last.epoch, last.boot_id) == (1, 1, agent.boot_id)
            agent.stop()
            assert await running == 0

    asyncio.run(scenario())
