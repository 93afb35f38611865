"""The exception tree of Phalanx.

    PhalanxError                 root; every error a user can cause or see
    +-- InputError               bad input: a file, line and field are named where known
    |   +-- ConfigError          a cluster definition that cannot be used
    |   +-- TraceError           a malformed trace row
    |   +-- SpecError            a job request that is not well formed
    +-- NotFound                 a job, node or partition that does not exist
    +-- NotAllowed               a request by someone who may not make it
    +-- Conflict                 a request the object's state does not allow now
    |   +-- Fenced               an agent incarnation that does not (or no longer) hold its node
    +-- StateStoreError          the durable state cannot take more: nothing was changed
        +-- NotLeader            this controller does not lead (a standby, or deposed)

Expected scheduling outcomes ("does not fit", "waiting for priority") are never exceptions:
they are ``phalanx.sched.status.Status`` values.
"""

from __future__ import annotations

__all__ = [
    "ConfigError",
    "Conflict",
    "Fenced",
    "InputError",
    "NotAllowed",
    "NotFound",
    "NotLeader",
    "PhalanxError",
    "SpecError",
    "StateStoreError",
    "TraceError",
]


class PhalanxError(Exception):
    """Root of every error Phalanx raises on purpose."""


class InputError(PhalanxError):
    """Input that cannot be used. ``str()`` names the file, line and field where known."""

    def __init__(
        self,
        message: str,
        *,
        source: str | None = None,
        line: int | None = None,
        field: str | None = None,
    ) -> None:
        self.message = message
        self.source = source
        self.line = line
        self.field = field
        super().__init__(self._render())

    def _render(self) -> str:
        where = []
        if self.source is not None:
            where.append(self.source if self.line is None else f"{self.source}:{self.line}")
        elif self.line is not None:
            where.append(f"line {self.line}")
        if self.field is not None:
            where.append(f"field '{self.field}'")
        prefix = ", ".join(where)
        return f"{prefix}: {self.message}" if prefix else self.message


class ConfigError(InputError):
    """A cluster definition (YAML or generator arguments) that cannot be used."""


class TraceError(InputError):
    """A trace that cannot be read: unknown format or a malformed row."""


class SpecError(InputError):
    """A job request that is not well formed (bad time, negative GPUs, ...)."""


class NotFound(PhalanxError):
    """A job, node or partition that does not exist."""


class NotAllowed(PhalanxError):
    """The caller may not do this (another user's job)."""


class StateStoreError(PhalanxError):
    """The durable state cannot take more (disk full, read-only): nothing was changed."""


class Conflict(PhalanxError):
    """Not possible in the object's present state (a step of a job that is not running)."""


class Fenced(Conflict):
    """An agent's call refused: ``reason`` is ``fenced`` (a newer incarnation holds the node
    under ``epoch``: stop), ``held`` (a live agent holds it: this newcomer is not wanted) or
    ``unregistered`` (this controller does not know the agent: register again)."""

    def __init__(self, message: str, *, reason: str, epoch: int) -> None:
        super().__init__(message)
        self.reason = reason
        self.epoch = epoch


class NotLeader(StateStoreError):
    """This controller does not lead: a standby, or a leader another controller deposed.
    Nothing was changed; ``leader`` is the leader's URL where known, for the caller to go
    to (answered as 503 with it)."""

    def __init__(self, message: str, *, leader: str | None = None) -> None:
        super().__init__(message)
        self.leader = leader
