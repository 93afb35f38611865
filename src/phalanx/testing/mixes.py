"""A tiny workload mix for tests of ``phalanx advise``: every kind of class, runs in a blink.

``TINY_MIX_YAML`` is the mix as a file would hold it; ``tiny_mix()`` is the same mix read.
On ``regular_cluster(8, 8, 4)`` (64 GPUs) a run of any set-up takes a fraction of a second.
"""

from __future__ import annotations

__all__ = ["TINY_CLUSTER", "TINY_MIX_YAML", "tiny_mix"]

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from phalanx.sim.mixes import Mix

TINY_CLUSTER = (8, 8, 4)
"""Nodes, GPUs per node, nodes per leaf switch."""

TINY_MIX_YAML = """\
days: 0.5
classes:
  - name: pretrain
    kind: pretrain
    per_day: 12
    nodes: [2, 4]
    gpus: [8]
    hours: [0.5, 2]
    checkpoint_minutes: 30
    mfu: 0.5
  - name: finetune
    kind: finetune
    per_day: 60
    gpus: [1, 2, 4, 8]
    hours: [0.2, 2]
  - name: chat
    kind: serving
    gpus: [4]
    replicas: [1, 4]
    mfu: 0.3
"""


def tiny_mix() -> Mix:
    """``TINY_MIX_YAML`` as a ``Mix`` (named ``tiny``)."""
    from phalanx.sim.mixes import read_mix_text

    return read_mix_text(TINY_MIX_YAML, "tiny")
