"""The controller as a subcommand sees it: one call, and a refusal turned into one line.

Subcommands call through ``phalanx.client.wirecall`` (stdlib only) rather than the typed
``Client``: httpx and pydantic would triple the time a ``phalanx jobs`` takes.
"""

from __future__ import annotations

import sys

from phalanx.client.wirecall import ApiError, WireCaller
from phalanx.errors import PhalanxError

__all__ = ["EXIT_FAILURE", "EXIT_USAGE", "caller", "exit_status", "fail"]

EXIT_FAILURE = 1
"""The call was understood and did not succeed: unreachable, refused, not found."""
EXIT_USAGE = 2
"""The request itself was bad (the CLI's arguments, or what the controller found in them)."""
_BAD_REQUEST = frozenset({400, 422})


def caller() -> WireCaller:
    """A caller for the controller named by the environment (``phalanx.client.address``)."""
    return WireCaller()


def exit_status(error: PhalanxError) -> int:
    """``EXIT_USAGE`` for a request the controller found malformed (400, 422); otherwise
    ``EXIT_FAILURE``: unreachable, 401/403 refused, 404 not found, 507 store full."""
    if isinstance(error, ApiError) and error.status in _BAD_REQUEST:
        return EXIT_USAGE
    return EXIT_FAILURE


def fail(command: str, message: str, status: int) -> int:
    """Print ``phalanx COMMAND: error: MESSAGE`` as one line on stderr; return ``status``."""
    print(f"phalanx {command}: error: {' '.join(message.split())}", file=sys.stderr)
    return status
