"""The runs of one node: spawn their tasks, signal them, reap them, remember what ended.

Every task is a process in its own session (a signal to its group reaches what it started),
spawned from its argv without a shell, with exactly the environment the controller gave.
Children are reaped with ``wait4(-1)``: one system call per ended child whatever the number
of runs, so nothing else (no ``Popen.wait``, no asyncio child watcher) may wait on them. The
same call says what the task used (CPU time, peak resident set, its waited-for descendants
included), which the end of the run reports.

A run is *running* until all its tasks have ended, then *unacknowledged* until the
controller confirms it recorded the end, then *finished* (remembered, boundedly, so a
replayed launch is not started twice).

A task that restarts in place or is probed (a pod's container: ``TaskSpec.restart``,
``TaskSpec.probes``) is kept as a ``Container`` (``phalanx.agent.containers``): when its
process ends and its policy says so, it waits out its back-off and is spawned again, the run
still running; the run ends when it is signalled to stop (TERM, KILL, INT, HUP, QUIT) and its
processes are gone. ``tick`` starts what is due again and sends the KILL that follows a
probe's TERM.
"""

from __future__ import annotations

import contextlib
import logging
import os
import resource
import signal as signals
import subprocess
import time
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

from phalanx.agent.cgroup import Cgroups
from phalanx.agent.containers import BACKOFF_INITIAL_S, Backoff, Container
from phalanx.protocol.agent import AgentCommand, ContainerReport, RunReport, TaskSpec, Usage

__all__ = ["FINISHED_MEMORY", "RunKey", "TaskRunner"]

log = logging.getLogger(__name__)

RunKey = tuple[int, int]
"""(job_id, run)."""

FINISHED_MEMORY = 10_000
"""How many acknowledged runs are remembered to ignore a replayed launch."""

_STOPPING = frozenset(
    {signals.SIGTERM, signals.SIGKILL, signals.SIGINT, signals.SIGHUP, signals.SIGQUIT}
)
"""Signals from the controller that stop a run: its containers are not restarted after."""


@dataclass
class _Run:
    key: RunKey
    procs: dict[int, subprocess.Popen[bytes]] = field(default_factory=dict)
    """pid -> process, for the tasks not reaped yet."""
    exit_code: int = 0
    signal: int = 0
    limited: bool = False
    """Its processes were put in a cgroup, to remove at the end."""
    ended: bool = False
    """Reported already (a failed launch): its remaining tasks are only reaped."""
    lost: str = ""
    """Killed because the controller was out of reach: why (reported ``lost``)."""
    user_s: float = 0.0
    system_s: float = 0.0
    max_rss_kb: int = 0
    """Of the tasks reaped so far: CPU seconds summed, the largest peak resident set."""
    containers: dict[int, Container] = field(default_factory=dict)
    """rank -> the task, where it restarts in place or is probed."""
    ranks: dict[int, int] = field(default_factory=dict)
    """pid -> rank, for the tasks not reaped yet."""
    stopping: bool = False
    """Signalled to stop: nothing restarts any more."""
    cpus: int = 0
    memory_mb: int = 0

    def waiting(self) -> bool:
        """A container waits out its back-off: the run goes on without a process."""
        return any(c.restart_at is not None for c in self.containers.values())

    def count(self, usage: resource.struct_rusage) -> None:
        self.user_s += usage.ru_utime
        self.system_s += usage.ru_stime
        self.max_rss_kb = max(self.max_rss_kb, usage.ru_maxrss)  # KiB on Linux

    def usage(self) -> Usage:
        return Usage(
            user_ms=round(self.user_s * 1000),
            system_ms=round(self.system_s * 1000),
            max_rss_kb=self.max_rss_kb,
        )


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


class TaskRunner:
    """Runs the tasks of ``launch`` commands; no I/O besides processes and their files.

    ``reap`` must be called when children may have ended (on SIGCHLD, and now and then).
    It is the only place that waits for children.
    """

    def __init__(
        self,
        cgroups: Cgroups | None = None,
        *,
        backoff_s: float = BACKOFF_INITIAL_S,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self._cgroups = cgroups
        self._backoff_s = backoff_s
        """The first restart delay of a container (the kubelet's 10 s; tests shorten it)."""
        self._monotonic = monotonic
        self._tended: dict[RunKey, _Run] = {}
        """The running runs that have containers: the only ones ``tick`` looks at."""
        self._probes: dict[int, subprocess.Popen[bytes]] = {}
        """pid -> exec probes' processes, until their status is taken (``probe_status``)."""
        self._forgotten: set[int] = set()
        """Exec probes given up on: dropped once reaped."""
        self._running: dict[RunKey, _Run] = {}
        self._by_pid: dict[int, _Run] = {}
        self._unacked: dict[RunKey, RunReport] = {}
        self._finished: set[RunKey] = set()
        self._finished_order: deque[RunKey] = deque()
        self._fresh: list[RunReport] = []
        """Ended since the last ``reap``: launch failures and reaped runs."""

    # ------------------------------------------------------------------ commands
    def launch(self, cmd: AgentCommand) -> None:
        """Start every task of the run; a replayed launch of a known run is ignored.

        A failure to open an output file or to spawn a task kills what was started and ends
        the run as "failed" with the error as reason (it is then in ``reap``'s next answer).
        """
        key = (cmd.job_id, cmd.run)
        if self.known(*key):
            return
        run = _Run(key)
        self._running[key] = run
        files: dict[str, IO[bytes]] = {}
        try:
            for task in cmd.tasks:
                out = self._open(files, task.stdout, task.open_mode)
                err: IO[bytes] | int = subprocess.STDOUT
                if task.stderr is not None:
                    err = self._open(files, task.stderr, task.open_mode)
                proc = self._spawn(task, out, err)
                run.procs[proc.pid] = proc
                run.ranks[proc.pid] = task.rank
                self._by_pid[proc.pid] = run
                if task.restart != "Never" or task.probes is not None:
                    container = Container(task, Backoff(self._backoff_s))
                    container.began(proc.pid, self._monotonic(), _now_ms())
                    run.containers[task.rank] = container
                    self._tended[key] = run
        except (OSError, ValueError) as exc:
            # ValueError: an argv or environment Popen refuses (a NUL byte); as much a
            # launch failure as a missing executable, and must not stop the agent.
            self._fail(run, str(exc))
            return
        finally:
            # The children hold their own descriptors now.
            for f in files.values():
                f.close()
        run.cpus, run.memory_mb = cmd.cpus, cmd.memory_mb
        if run.procs and self._cgroups is not None and (cmd.cpus > 0 or cmd.memory_mb > 0):
            run.limited = self._cgroups.place(
                cmd.job_id, cmd.run, run.procs, cpus=cmd.cpus, memory_mb=cmd.memory_mb
            )
        if not run.procs:  # a launch without tasks ends at once
            self._end(run)

    def signal(self, job_id: int, run: int, sig: int) -> None:
        """Send ``sig`` to the process group of every task of the run still running."""
        found = self._running.get((job_id, run))
        if found is not None:
            if sig in _STOPPING:
                self._stop(found, sig)
            self._signal(found, sig)

    def kill(self, job_id: int, run: int) -> None:
        self.signal(job_id, run, signals.SIGKILL)

    def signal_all(self, sig: int) -> None:
        for run in list(self._running.values()):
            if sig in _STOPPING:
                self._stop(run, sig)
            self._signal(run, sig)

    def lose_all(self, reason: str) -> int:
        """Kill every run, to be reported ``lost`` with ``reason``; answer how many."""
        runs = [run for run in self._running.values() if not run.lost]
        for run in runs:
            run.lost = reason
            self._stop(run, signals.SIGKILL)
            self._signal(run, signals.SIGKILL)
        return len(runs)

    def _stop(self, run: _Run, sig: int) -> None:
        """No restart after this; a run whose containers only wait to restart ends now."""
        run.stopping = True
        for container in run.containers.values():
            container.stop_waiting()
        if not run.procs and not run.ended and run.key in self._running:
            run.signal = max(run.signal, sig)
            self._end(run)

    # ------------------------------------------------------------------ containers
    def tick(self) -> None:
        """Start again the containers whose back-off is over; KILL those a probe killed
        with TERM whose grace is over."""
        now = self._monotonic()
        for run in list(self._tended.values()):
            for container in run.containers.values():
                if container.restart_at is not None and container.restart_at <= now:
                    self._respawn(run, container)
                elif container.kill_at is not None and container.kill_at <= now:
                    container.kill_at = None
                    if container.pid is not None:
                        with contextlib.suppress(ProcessLookupError):
                            os.killpg(container.pid, signals.SIGKILL)

    def kill_container(self, job_id: int, run: int, rank: int, why: str) -> None:
        """A probe failed: TERM the container now, KILL after the pod's grace; it then
        restarts by its policy."""
        found = self._running.get((job_id, run))
        container = None if found is None else found.containers.get(rank)
        if container is None or container.pid is None or container.kill_at is not None:
            return
        grace = container.task.probes.grace_s if container.task.probes is not None else 30.0
        container.killing(why, self._monotonic(), grace)
        log.info("job %d run %d rank %d: %s", job_id, run, rank, why)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(container.pid, signals.SIGTERM if grace > 0 else signals.SIGKILL)

    def cgroup_of(self, job_id: int, run: int) -> Path | None:
        """The cgroup the run's processes are in, None when they are in none of ours."""
        found = self._running.get((job_id, run))
        if found is None or not found.limited or self._cgroups is None:
            return None
        return self._cgroups.path(job_id, run)

    def containers(self) -> list[tuple[RunKey, Container]]:
        """Every container of the running runs."""
        return [(key, c) for key, run in self._tended.items() for c in run.containers.values()]

    def container_version(self) -> tuple[tuple[int, int, int, int], ...]:
        """Differs whenever a container's report would, CPU usage aside (compare for
        equality: a change is to be reported at once)."""
        return tuple((*key, c.task.rank, c.version) for key, c in self.containers())

    def container_reports(
        self, cpu_seconds: Callable[[int, int, int], float | None]
    ) -> list[ContainerReport]:
        """What every container is doing; ``cpu_seconds(job_id, run, pid)`` reads the CPU
        time of a process tree (None: not known) for the usage rates."""
        now = self._monotonic()
        out = []
        for (job_id, run), container in self.containers():
            if container.pid is not None:
                container.sample_cpu(now, cpu_seconds(job_id, run, container.pid))
            out.append(container.report(job_id, run))
        return out

    def spawn_probe(self, container: Container, argv: list[str]) -> subprocess.Popen[bytes]:
        """An exec probe's process, in the container's environment; ``probe_status`` tells
        its exit status once the reaper has collected it."""
        task = container.task
        probe = TaskSpec.model_construct(**{**task.model_dump(), "argv": argv})
        proc = self._spawn(probe, subprocess.DEVNULL, subprocess.DEVNULL)  # type: ignore[arg-type]
        self._probes[proc.pid] = proc
        return proc

    def probe_status(self, pid: int) -> int | None:
        """The exit status of probe ``pid`` once reaped (then forgotten), else None."""
        proc = self._probes.get(pid)
        if proc is None or proc.returncode is None:
            return None
        del self._probes[pid]
        return proc.returncode

    def forget_probe(self, pid: int) -> None:
        """A probe given up on (timed out, killed): its status is not wanted."""
        proc = self._probes.get(pid)
        if proc is not None and proc.returncode is not None:
            del self._probes[pid]
        elif proc is not None:
            self._forgotten.add(pid)

    def _respawn(self, run: _Run, container: Container) -> None:
        task = container.task
        files: dict[str, IO[bytes]] = {}
        now = self._monotonic()
        try:
            out = self._open(files, task.stdout, "append")
            err: IO[bytes] | int = subprocess.STDOUT
            if task.stderr is not None:
                err = self._open(files, task.stderr, "append")
            proc = self._spawn(task, out, err)
        except (OSError, ValueError) as exc:
            log.warning("job %d run %d rank %d: restart failed: %s", *run.key, task.rank, exc)
            container.ended(128, 0, now, _now_ms(), stopping=run.stopping)
            return
        finally:
            for f in files.values():
                f.close()
        run.procs[proc.pid] = proc
        run.ranks[proc.pid] = task.rank
        self._by_pid[proc.pid] = run
        container.began(proc.pid, now, _now_ms())
        if run.limited and self._cgroups is not None:
            self._cgroups.place(
                run.key[0], run.key[1], [proc.pid], cpus=run.cpus, memory_mb=run.memory_mb
            )

    # ------------------------------------------------------------------ reaping
    def reap(self) -> list[RunReport]:
        """Collect every ended child; answer the runs that ended since the last call."""
        while True:
            try:
                pid, status, usage = os.wait4(-1, os.WNOHANG)
            except ChildProcessError:
                break
            if pid == 0:
                break
            run = self._by_pid.pop(pid, None)
            if run is None:
                probe = self._probes.get(pid)
                if probe is not None:  # an exec probe's
                    probe.returncode = os.waitstatus_to_exitcode(status)
                    if pid in self._forgotten:
                        self._forgotten.discard(pid)
                        del self._probes[pid]
                continue  # else not a task of ours (or one already given up on)
            code = os.waitstatus_to_exitcode(status)
            proc = run.procs.pop(pid)
            run.count(usage)
            # Popen must not wait for it later (that would be a second reaping).
            proc.returncode = code
            container = run.containers.get(run.ranks.pop(pid, -1))
            exit_code, sig = (0, -code) if code < 0 else (code, 0)
            if container is not None and container.ended(
                exit_code,
                sig,
                self._monotonic(),
                _now_ms(),
                stopping=run.stopping or bool(run.lost) or run.ended,
            ):
                continue  # it restarts in place after its back-off: the run goes on
            run.signal = max(run.signal, sig)
            run.exit_code = max(run.exit_code, exit_code)
            if not run.procs and not run.ended and not run.waiting():
                self._end(run)
        fresh, self._fresh = self._fresh, []
        return fresh

    # ------------------------------------------------------------------ bookkeeping
    def known(self, job_id: int, run: int) -> bool:
        """Running, ended and unacknowledged, or among the last finished runs."""
        key = (job_id, run)
        return key in self._running or key in self._unacked or key in self._finished

    def running_count(self) -> int:
        return len(self._running)

    def unreaped(self) -> int:
        """Tasks not reaped yet, counting those of failed launches (killed, maybe not dead)."""
        return len(self._by_pid)

    def unacked(self) -> list[RunReport]:
        """The ended runs whose end the controller has not acknowledged yet, oldest first."""
        return list(self._unacked.values())

    def acknowledge(self, reports: Iterable[RunReport]) -> None:
        """The controller recorded these ends: forget them, except to ignore replays."""
        for report in reports:
            key = (report.job_id, report.run)
            if self._unacked.pop(key, None) is not None:
                self._remember(key)

    def hello_runs(self) -> list[RunReport]:
        """What a (re-)registration tells the controller: live runs and unacknowledged ends."""
        live = [RunReport(job_id=j, run=r, state="running", at=0) for j, r in self._running]
        return live + self.unacked()

    # ------------------------------------------------------------------ helpers
    @staticmethod
    def _open(files: dict[str, IO[bytes]], path: str, mode: str) -> IO[bytes]:
        # One file object per path and run: tasks sharing an output file must not truncate
        # each other's lines, and a run opens each path once.
        f = files.get(path)
        if f is None:
            f = open(path, "ab" if mode == "append" else "wb")  # noqa: SIM115
            files[path] = f
        return f

    @staticmethod
    def _spawn(task: TaskSpec, out: IO[bytes], err: IO[bytes] | int) -> subprocess.Popen[bytes]:
        as_user = task.uid is not None and task.uid != 0 and os.geteuid() == 0
        return subprocess.Popen(
            task.argv,
            cwd=task.cwd,
            env=task.env,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=err,
            start_new_session=True,
            user=task.uid if as_user else None,
            group=task.gid if as_user else None,
            extra_groups=[] if as_user else None,
        )

    def _signal(self, run: _Run, sig: int) -> None:
        for pid in run.procs:
            try:
                os.killpg(pid, sig)
            except ProcessLookupError:
                pass  # it ended meanwhile; the reaper will see it
            except OSError as exc:  # not ours to signal, or no such signal number
                log.warning("cannot signal job %d run %d (pid %d): %s", *run.key, pid, exc)

    def _fail(self, run: _Run, reason: str) -> None:
        """End a run whose launch failed: kill what started, report "failed" at once.

        The killed tasks stay in the pid map so that ``reap`` collects them (without
        blocking here) and then drops them.
        """
        run.ended = True
        for pid in run.procs:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(pid, signals.SIGKILL)
        del self._running[run.key]
        self._tended.pop(run.key, None)
        report = RunReport(
            job_id=run.key[0], run=run.key[1], state="failed", reason=reason, at=_now_ms()
        )
        self._finish(report)

    def _end(self, run: _Run) -> None:
        run.ended = True
        del self._running[run.key]
        self._tended.pop(run.key, None)
        if run.limited and self._cgroups is not None:
            self._cgroups.remove(*run.key)
        self._finish(
            RunReport(
                job_id=run.key[0],
                run=run.key[1],
                state="lost" if run.lost else "exited",
                reason=run.lost,
                exit_code=run.exit_code,
                signal=run.signal,
                at=_now_ms(),
                usage=run.usage(),
            )
        )

    def _finish(self, report: RunReport) -> None:
        self._unacked[(report.job_id, report.run)] = report
        self._fresh.append(report)

    def _remember(self, key: RunKey) -> None:
        if len(self._finished_order) >= FINISHED_MEMORY:
            self._finished.discard(self._finished_order.popleft())
        self._finished_order.append(key)
        self._finished.add(key)
