"""Runs the tasks of jobs as local processes: the executor of a node agent.

Each task is a process in its own session (so a signal reaches everything it started), in the
job's working directory, with Slurm's and torch.distributed's variables, stdout and stderr in
files named by Slurm's patterns. Commands are argv lists, never given to a shell. ``poll``
reaps ended tasks without blocking and reports a run once all its tasks have ended.
"""

from __future__ import annotations

import contextlib
import os
import signal as signals
import socket
import subprocess
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import IO

from phalanx.domain.cluster import Cluster
from phalanx.domain.time import Duration, Instant
from phalanx.engine import (
    Cleanup,
    CleanupDone,
    Event,
    Kill,
    Launch,
    LaunchFailed,
    Signal,
    TasksExited,
)
from phalanx.live.taskenv import expand_pattern, task_environment, task_places

__all__ = ["ProcessExecutor", "free_port"]


def free_port() -> int:
    """A TCP port free on this machine now (for MASTER_PORT)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class _Run:
    job_id: int
    run: int
    procs: list[subprocess.Popen[bytes]]
    files: list[IO[bytes]] = field(default_factory=list)


class ProcessExecutor:
    def __init__(
        self,
        deliver: Callable[[Event], None],
        cluster: Cluster,
        *,
        epilog_ms: Duration = 0,
        inherit_environment: bool = True,
        addresses: Mapping[str, str] | None = None,
    ) -> None:
        self._deliver = deliver
        self._cluster = cluster
        self._epilog = epilog_ms
        self._inherit = inherit_environment
        self._addresses = dict(addresses or {})
        """Node name -> address, where it is not the name (emulated nodes: 127.0.0.1)."""
        self._runs: dict[tuple[int, int], _Run] = {}

    def launch(self, cmd: Launch, at: Instant) -> None:
        spec = cmd.spec
        if not spec.command:
            self._deliver(LaunchFailed(at, cmd.job_id, cmd.run, "the job has no command"))
            return
        run = _Run(cmd.job_id, cmd.run, [])
        port = free_port()
        first = self._cluster.nodes[cmd.alloc.nodes[0]].name
        master = self._addresses.get(first, first)
        array = {"array_job_id": cmd.array_job_id, "array_task_id": cmd.array_task_id}
        default_out = "slurm-%A_%a.out" if cmd.array_job_id is not None else "slurm-%j.out"
        try:
            for place in task_places(cmd.alloc, spec.tasks_per_node):
                node = self._cluster.nodes[cmd.alloc.nodes[place.node_position]].name
                env = dict(os.environ) if self._inherit else {}
                env.update(spec.environment)
                env.update(
                    task_environment(
                        job_id=cmd.job_id,
                        spec=spec,
                        alloc=cmd.alloc,
                        cluster=self._cluster,
                        place=place,
                        submit_dir=os.path.abspath(spec.workdir),
                        master_port=port,
                        master_addr=master,
                        array_job_id=cmd.array_job_id,
                        array_task_id=cmd.array_task_id,
                        uid=os.getuid(),  # the tasks run as this process does
                        gid=os.getgid(),
                    )
                )

                def name(pattern: str, task: int = place.global_rank, on: str = node) -> str:
                    return os.path.join(
                        spec.workdir,
                        expand_pattern(
                            pattern,
                            job_id=cmd.job_id,
                            name=spec.name,
                            user=spec.user,
                            node=on,
                            task=task,
                            **array,
                        ),
                    )

                out = open(name(spec.output or default_out), "ab")  # noqa: SIM115
                run.files.append(out)
                err: IO[bytes] | int = subprocess.STDOUT
                if spec.error is not None:
                    err_file = open(name(spec.error), "ab")  # noqa: SIM115
                    run.files.append(err_file)
                    err = err_file
                run.procs.append(
                    subprocess.Popen(
                        list(spec.command),
                        cwd=spec.workdir,
                        env=env,
                        stdin=subprocess.DEVNULL,
                        stdout=out,
                        stderr=err,
                        start_new_session=True,
                    )
                )
        except OSError as exc:
            self._stop(run, signals.SIGKILL)
            self._close(run)
            self._deliver(LaunchFailed(at, cmd.job_id, cmd.run, str(exc)))
            return
        self._runs[(cmd.job_id, cmd.run)] = run

    def signal(self, cmd: Signal, at: Instant) -> None:
        run = self._runs.get((cmd.job_id, cmd.run))
        if run is not None:
            self._stop(run, cmd.signal)

    def kill(self, cmd: Kill, at: Instant) -> None:
        run = self._runs.get((cmd.job_id, cmd.run))
        if run is not None:
            self._stop(run, signals.SIGKILL)

    def cleanup(self, cmd: Cleanup, at: Instant) -> None:
        self._deliver(CleanupDone(at + self._epilog, cmd.job_id, cmd.run))

    def poll(self, now: Instant) -> int:
        """Report every run whose tasks have all ended; return how many."""
        done = []
        for key, run in self._runs.items():
            if all(p.poll() is not None for p in run.procs):
                done.append(key)
        for key in done:
            run = self._runs.pop(key)
            self._close(run)
            codes = [p.returncode for p in run.procs]
            signal = max((-c for c in codes if c < 0), default=0)
            exit_code = max((c for c in codes if c > 0), default=0)
            self._deliver(TasksExited(now, run.job_id, run.run, exit_code, signal))
        return len(done)

    def running(self) -> int:
        return len(self._runs)

    @staticmethod
    def _stop(run: _Run, sig: int) -> None:
        for p in run.procs:
            if p.poll() is None:
                with contextlib.suppress(ProcessLookupError):  # it ended meanwhile
                    os.killpg(p.pid, sig)

    @staticmethod
    def _close(run: _Run) -> None:
        for f in run.files:
            f.close()
