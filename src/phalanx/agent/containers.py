"""Containers as the kubelet keeps them: restart back-off, probe state, what is reported.

A task that restarts in place (a pod's ``restartPolicy`` Always, or OnFailure after a
non-zero exit) or that is probed is a *container* here. Everything in this module is a pure
state machine over times passed in (``now``: seconds on a monotonic clock; ``wall_ms``: ms
since the epoch, only for what is reported), so that tests drive it with a fake clock; the
task runner (``phalanx.agent.tasks``) spawns, signals and reaps, and the agent
(``phalanx.agent.agent``) runs the probes (``phalanx.agent.probing``).

Back-off (kubelet's): the first restart in a row is at once (the kubelet keeps no back-off
entry for a container until it has restarted it once), the n-th after that waits
``initial * 2**(n-2)`` seconds (10 s, 20 s, 40 s, ...), at most ``BACKOFF_CAP_S``; a container
that ran ``BACKOFF_RESET_S`` before it ended starts the series again. While it waits, its state
is ``waiting: CrashLoopBackOff``.

Probes (kubelet's): the first one ``initialDelaySeconds`` after the container started, then
every ``periodSeconds``; a probe flips to passing after ``successThreshold`` successes in a
row and to failing after ``failureThreshold`` failures in a row. A startup probe runs alone
until it has passed once (``started``); its failure, like a liveness failure, kills the
container (TERM, KILL after the pod's grace), which then restarts by its policy. A container
without a readiness probe is ready once started; with one, ready once it has passed.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from phalanx.protocol.agent import ContainerReport, ContainerState, ProbeSpec, TaskSpec

__all__ = [
    "BACKOFF_CAP_S",
    "BACKOFF_INITIAL_S",
    "BACKOFF_RESET_S",
    "Backoff",
    "Container",
    "ProbeState",
    "restarts_after",
]

BACKOFF_INITIAL_S = 10.0
BACKOFF_CAP_S = 300.0
BACKOFF_RESET_S = 600.0
"""A container that ran this long without a problem restarts, next time, after the first
delay again."""

PROBE_KINDS = ("startup", "liveness", "readiness")
CPU_WINDOW_S = 1.0
"""CPU usage is a rate over at least this long (the kernel counts CPU time in 10 ms ticks)."""


def restarts_after(policy: str, exit_code: int, signal: int) -> bool:
    """Whether a container that ended so restarts under ``policy`` (``restartPolicy``)."""
    if policy == "Always":
        return True
    return policy == "OnFailure" and (exit_code != 0 or signal != 0)


@dataclass
class Backoff:
    """The delays between restarts of one container (module docstring)."""

    initial_s: float = BACKOFF_INITIAL_S
    cap_s: float = BACKOFF_CAP_S
    streak: int = 0
    """Restarts in a row since the last reset."""

    def next_delay(self, ran_s: float) -> float:
        """The wait before the next restart of a container that ran ``ran_s`` this time."""
        if ran_s >= BACKOFF_RESET_S:
            self.streak = 0
        self.streak += 1
        if self.streak == 1:
            return 0.0
        return float(min(self.initial_s * 2 ** (self.streak - 2), self.cap_s))


@dataclass
class ProbeState:
    """One probe of one container run (reset at each restart)."""

    spec: ProbeSpec
    ok: bool
    """Passing: liveness starts so, startup and readiness do not."""
    next_at: float
    successes: int = 0
    failures: int = 0
    busy: bool = False
    """A probe is out: the next waits for its result."""
    message: str = ""
    """What the last failure said."""

    @classmethod
    def start(cls, spec: ProbeSpec, kind: str, started: float) -> ProbeState:
        return cls(spec, ok=kind == "liveness", next_at=started + spec.initial_delay_s)

    def due(self, now: float) -> bool:
        return not self.busy and now >= self.next_at

    def begin(self, now: float) -> None:
        """A probe goes out now; the next one is due a period after."""
        self.busy = True
        self.next_at = now + self.spec.period_s

    def record(self, ok: bool, message: str = "") -> None:
        self.busy = False
        if ok:
            self.successes += 1
            self.failures = 0
            if self.successes >= self.spec.success_threshold:
                self.ok = True
        else:
            self.failures += 1
            self.successes = 0
            self.message = message
            if self.failures >= self.spec.failure_threshold:
                self.ok = False

    @property
    def failed(self) -> bool:
        """Failed ``failureThreshold`` times in a row: the container is to be killed
        (liveness, startup)."""
        return self.failures >= self.spec.failure_threshold


def _running(wall_ms: int) -> ContainerState:
    return ContainerState(kind="running", started_at=wall_ms)


@dataclass
class Container:
    """One task that restarts in place or is probed; ``pid`` while a process runs."""

    task: TaskSpec
    backoff: Backoff
    pid: int | None = None
    restart_count: int = 0
    state: ContainerState = field(default_factory=lambda: ContainerState(kind="waiting"))
    last_state: ContainerState | None = None
    started_mono: float = 0.0
    restart_at: float | None = None
    """Waiting in back-off: when to start again."""
    kill_at: float | None = None
    """Killed by a probe with TERM: when KILL follows."""
    killed_because: str = ""
    probes: dict[str, ProbeState] = field(default_factory=dict)
    startup_passed: bool = False
    cpu: tuple[float, float] | None = None
    """(monotonic time, CPU seconds) of the last sample."""
    cpu_millicores: int | None = None
    version: int = 0
    """Bumped at every change a report shows (the agent then reports at once)."""
    probe_message: str = ""
    """The last probe failure: ``Readiness probe failed: ...``."""

    # ------------------------------------------------------------------ lifecycle
    def began(self, pid: int, now: float, wall_ms: int) -> None:
        """Its process started (again): probes start over."""
        self.pid = pid
        self.started_mono = now
        self.restart_at = None
        self.kill_at = None
        self.killed_because = ""
        self.state = _running(wall_ms)
        self.startup_passed = self.task.probes is None or self.task.probes.startup is None
        self.probes = {}
        probes = self.task.probes
        if probes is not None:
            for kind in PROBE_KINDS:
                spec: ProbeSpec | None = getattr(probes, kind)
                if spec is not None:
                    self.probes[kind] = ProbeState.start(spec, kind, now)
        self.cpu = None
        self.version += 1

    def ended(
        self, exit_code: int, signal: int, now: float, wall_ms: int, *, stopping: bool
    ) -> bool:
        """Its process ended; answer whether it restarts (then it waits in back-off).
        ``stopping``: the run is being stopped, nothing restarts."""
        self.pid = None
        code = exit_code if not signal else 128 + signal
        reason = "Completed" if code == 0 else "Error"
        if self.killed_because:
            reason = "Error"
        finished = ContainerState(
            kind="terminated",
            started_at=self.state.started_at,
            finished_at=wall_ms,
            exit_code=code,
            signal=signal,
            reason=reason,
            message=self.killed_because,
        )
        self.kill_at = None
        self.probes = {}
        self.cpu_millicores = None
        self.version += 1
        if stopping or not restarts_after(self.task.restart, exit_code, signal):
            self.state = finished
            return False
        self.last_state = finished
        delay = self.backoff.next_delay(now - self.started_mono)
        self.restart_at = now + delay
        self.restart_count += 1
        if delay > 0:
            self.state = ContainerState(
                kind="waiting",
                reason="CrashLoopBackOff",
                message=f"back-off {_seconds(delay)} restarting failed container",
            )
        else:  # restarted at once: waiting only until the task runner spawns it again
            self.state = ContainerState(kind="waiting", reason="ContainerCreating")
        return True

    def stop_waiting(self) -> None:
        """The run is being stopped while this waits to restart: it will not."""
        if self.restart_at is not None:
            self.restart_at = None
            if self.last_state is not None:
                self.state = self.last_state
            self.version += 1

    # ------------------------------------------------------------------ probes
    def due_probes(self, now: float) -> list[str]:
        """The probes to send now: startup alone until it has passed, then the others."""
        if self.pid is None or self.kill_at is not None:
            return []
        kinds = ["startup"] if not self.startup_passed else ["liveness", "readiness"]
        return [k for k in kinds if k in self.probes and self.probes[k].due(now)]

    def probed(self, kind: str, ok: bool, message: str = "") -> str | None:
        """A probe's result; answer why to kill the container now, if it must be."""
        state = self.probes.get(kind)
        if state is None or self.pid is None:
            return None  # the process it was for has ended meanwhile
        before = (self.ready, self.started)
        state.record(ok, message)
        if not ok:
            self.probe_message = f"{kind.capitalize()} probe failed: {message}"
        if kind == "startup" and state.ok:
            self.startup_passed = True
            del self.probes["startup"]
        if (self.ready, self.started) != before:
            self.version += 1
        if kind in ("startup", "liveness") and state.failed and self.kill_at is None:
            label = "Startup" if kind == "startup" else "Liveness"
            return f"{label} probe failed: {state.message}"
        return None

    def killing(self, why: str, now: float, grace_s: float) -> None:
        kind = why.split(" probe")[0].lower()
        self.killed_because = f"Container failed {kind} probe, will be restarted"
        self.kill_at = now + grace_s
        self.version += 1

    @property
    def started(self) -> bool:
        return self.pid is not None and self.startup_passed

    @property
    def ready(self) -> bool:
        if not self.started or self.kill_at is not None:
            return False
        readiness = self.probes.get("readiness")
        return readiness is None or readiness.ok

    # ------------------------------------------------------------------ reports
    def sample_cpu(self, now: float, seconds: float | None) -> None:
        """A reading of the process tree's CPU time: the rate since the last reading."""
        if seconds is None:
            return
        if self.cpu is not None:
            if now - self.cpu[0] < CPU_WINDOW_S:
                return  # too short a window for clock ticks of 10 ms: the last rate stands
            rate = (seconds - self.cpu[1]) / (now - self.cpu[0])
            self.cpu_millicores = max(0, round(rate * 1000))
        self.cpu = (now, seconds)

    def report(self, job_id: int, run: int) -> ContainerReport:
        return ContainerReport(
            job_id=job_id,
            run=run,
            rank=self.task.rank,
            ready=self.ready,
            started=self.started,
            restart_count=self.restart_count,
            state=self.state,
            last_state=self.last_state,
            cpu_millicores=self.cpu_millicores,
            probe_message=self.probe_message,
        )


def _seconds(delay: float) -> str:
    """Go's duration format as the kubelet's message has it: ``10s``, ``2m40s``, ``500ms``."""
    if delay < 1:
        return f"{round(delay * 1000)}ms"
    minutes, seconds = divmod(round(delay), 60)
    return f"{minutes}m{seconds}s" if minutes else f"{seconds}s"
