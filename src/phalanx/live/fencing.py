"""Fencing: which incarnation of a node's agent may act for the node (architecture rule 6).

The rules, as the controller applies them:

1. A registration by the holder's own incarnation (its boot id) keeps the holder's epoch: a
   controller restart or a lost connection does not fence anybody.
2. A registration by an incarnation that held an older epoch is refused (``fenced``): a
   newer one took the node; the old one must kill its tasks and exit.
3. A new incarnation (epoch 0) is refused (``held``) while the holder is alive: *the live
   agent keeps the node*, and the newcomer exits. Otherwise it takes the node under the next
   epoch, and the holder is fenced from then on.
4. A poll or report that does not carry the holder's boot id and epoch is refused:
   ``fenced`` if it names an older epoch, ``unregistered`` (register first) otherwise.
"""

from __future__ import annotations

from phalanx.errors import Fenced
from phalanx.live.fleet import Agent

__all__ = ["admit", "check"]


def admit(holder: Agent, boot_id: str, epoch: int, *, holder_alive: bool) -> int:
    """The epoch a registration gets (rules 1-3), or ``Fenced``."""
    if holder.epoch and boot_id == holder.boot_id:
        return holder.epoch
    if holder.epoch and 0 < epoch <= holder.epoch:
        raise Fenced(
            f"node {holder.node} is held by a newer agent (epoch {holder.epoch}); "
            f"epoch {epoch} is fenced",
            reason="fenced",
            epoch=holder.epoch,
        )
    if holder.epoch and holder_alive:
        raise Fenced(
            f"node {holder.node} is held by a live agent (boot {holder.boot_id}, "
            f"epoch {holder.epoch}); a second agent for it is refused",
            reason="held",
            epoch=holder.epoch,
        )
    return max(holder.epoch, epoch) + 1


def check(holder: Agent, boot_id: str, epoch: int) -> None:
    """Refuse (rule 4) a poll or report that is not the registered holder's."""
    if boot_id == holder.boot_id and epoch == holder.epoch and holder.registered:
        return
    if boot_id != holder.boot_id and 0 < epoch <= holder.epoch:
        raise Fenced(
            f"agent epoch {epoch} of node {holder.node} is fenced (epoch {holder.epoch} holds it)",
            reason="fenced",
            epoch=holder.epoch,
        )
    raise Fenced(
        f"agent {holder.node} (boot {boot_id}, epoch {epoch}) is not registered with this "
        "controller",
        reason="unregistered",
        epoch=holder.epoch,
    )
