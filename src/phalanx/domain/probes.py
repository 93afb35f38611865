"""A container's probes and restart policy, as Kubernetes defines them (``core/v1`` Probe).

Values only: the node agent runs the probes (``phalanx.agent.probing``); a pod's spec is read
into these by ``phalanx.workloads.podspec``. Durations are integer milliseconds like every
``Duration`` here; the Kubernetes fields are whole seconds. Defaults are Kubernetes':
``periodSeconds`` 10, ``timeoutSeconds`` 1, ``successThreshold`` 1, ``failureThreshold`` 3,
``initialDelaySeconds`` 0; a pod's ``terminationGracePeriodSeconds`` 30.
"""

from __future__ import annotations

from dataclasses import dataclass

from phalanx.domain.time import SECOND, Duration
from phalanx.errors import SpecError

__all__ = [
    "RESTART_POLICIES",
    "Exec",
    "HttpGet",
    "Probe",
    "ProbeAction",
    "Probes",
    "TcpSocket",
]

RESTART_POLICIES = ("Always", "OnFailure", "Never")
"""A pod's ``restartPolicy``: the kubelet restarts its container in place always, after a
non-zero exit, or never."""


@dataclass(frozen=True, slots=True)
class HttpGet:
    """Success: an HTTP answer with a status from 200 to 399 within the timeout."""

    port: int
    """A number: a named port is resolved against the container's ports when read."""
    path: str = "/"
    host: str | None = None
    """None: the pod's address."""
    scheme: str = "HTTP"
    headers: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True, slots=True)
class TcpSocket:
    """Success: a TCP connection opens within the timeout."""

    port: int
    host: str | None = None


@dataclass(frozen=True, slots=True)
class Exec:
    """Success: ``command`` (argv, no shell; in the container's environment and directory)
    exits 0 within the timeout."""

    command: tuple[str, ...]


ProbeAction = HttpGet | TcpSocket | Exec


@dataclass(frozen=True, slots=True)
class Probe:
    action: ProbeAction
    initial_delay: Duration = 0
    period: Duration = 10 * SECOND
    timeout: Duration = 1 * SECOND
    success_threshold: int = 1
    """Consecutive successes after a failure for the probe to count as passing again."""
    failure_threshold: int = 3
    """Consecutive failures for the probe to count as failed."""

    def __post_init__(self) -> None:
        if self.initial_delay < 0:
            raise SpecError("must be non-negative", field="initialDelaySeconds")
        for name, value in (("periodSeconds", self.period), ("timeoutSeconds", self.timeout)):
            if value < SECOND:
                raise SpecError("must be at least 1", field=name)
        if self.success_threshold < 1:
            raise SpecError("must be at least 1", field="successThreshold")
        if self.failure_threshold < 1:
            raise SpecError("must be at least 1", field="failureThreshold")


@dataclass(frozen=True, slots=True)
class Probes:
    """A container's probes: startup gates the other two until it has passed once; a failed
    liveness (or startup) probe kills the container, to be restarted by its policy; readiness
    says whether it takes traffic (``ready``)."""

    startup: Probe | None = None
    liveness: Probe | None = None
    readiness: Probe | None = None
    grace: Duration = 30 * SECOND
    """``terminationGracePeriodSeconds``: between SIGTERM and SIGKILL when a probe kills."""

    def __post_init__(self) -> None:
        if self.grace < 0:
            raise SpecError("must be non-negative", field="terminationGracePeriodSeconds")
