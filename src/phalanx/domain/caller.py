"""Who is asking the controller."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Caller"]


@dataclass(frozen=True, slots=True)
class Caller:
    """A user, known from the Unix socket's peer credentials or from an API token.
    ``admin`` may act on every job (root and the configured administrators). A node's agent
    with its own credential is ``node``: it may speak the agent protocol for that node, and
    nothing else."""

    uid: int
    name: str
    admin: bool = False
    node: str | None = None
