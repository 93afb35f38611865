"""Clients of the controller's REST API.

- ``Client`` (``phalanx.client.client``): typed, on httpx and the pydantic models of
  ``phalanx.api.wire``, for library users;
- ``WireCaller`` (``phalanx.client.wirecall``): stdlib only and quick to import, for the CLI
  and the Slurm-compatible shims;
- ``find_controller`` (``phalanx.client.address``): where the controller listens.

``Client`` is imported on first use: importing ``phalanx.client.wirecall`` runs this module
first, and the fast path must not pay for httpx and pydantic.
"""

from __future__ import annotations

from phalanx.client.address import ControllerAddress, find_controller
from phalanx.client.wirecall import ApiError, ControllerUnreachable, WireCaller

TYPE_CHECKING = False  # not typing's: importing typing costs the shims milliseconds
if TYPE_CHECKING:
    from phalanx.client.client import Client

__all__ = [
    "ApiError",
    "Client",
    "ControllerAddress",
    "ControllerUnreachable",
    "WireCaller",
    "find_controller",
]


def __getattr__(name: str) -> object:
    if name == "Client":
        from phalanx.client.client import Client

        return Client
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
