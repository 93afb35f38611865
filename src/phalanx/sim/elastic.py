"""Elastic jobs in the simulator: a per-job throughput model, and marking trace jobs elastic.

A trace gives each job's runtime at the size it ran at (``base_nodes``). An elastic job may
run on between ``nodes_min`` and ``nodes_max`` nodes, and the engine grows and shrinks it
while it runs (``phalanx.engine.scheduling.elastic``). Its work is its trace runtime at the
base size; on ``n`` nodes it does that work at the speed

    rate(n) = T(n) / T(base_nodes),   T(n) = 1 + efficiency x (n - 1)

so each node beyond the first adds ``efficiency`` of one node's throughput (1.0: linear
scaling; 0.8 by default, a data-parallel job that loses a fifth of each added node to
communication). The simulated executor moves a running elastic job's end when its size
changes: the work done so far is counted at the old rate, the rest at the new one.

``make_elastic`` marks a share of a workload's jobs elastic (chosen by a seeded draw per job,
in replay order): a job of ``n`` nodes becomes elastic on ``max(1, n // 2)`` to
``n x grow`` nodes. Jobs that cannot be elastic are left alone: arrays, batch scripts,
GPU fractions, jobs of per-rank tasks, jobs without GPUs.
"""

from __future__ import annotations

import dataclasses
import math
import random
from collections.abc import Sequence
from dataclasses import dataclass

from phalanx.errors import InputError
from phalanx.sim.workload import TraceJob

__all__ = ["DEFAULT_EFFICIENCY", "Scaling", "make_elastic"]

DEFAULT_EFFICIENCY = 0.8
DEFAULT_GROW = 2


@dataclass(frozen=True, slots=True)
class Scaling:
    """How fast an elastic job works on ``n`` nodes (module docstring)."""

    base_nodes: int
    """The size its trace runtime was measured at."""
    efficiency: float = DEFAULT_EFFICIENCY

    def __post_init__(self) -> None:
        if self.base_nodes < 1:
            raise InputError(f"base nodes must be at least 1: {self.base_nodes}", field="nodes")
        if not (math.isfinite(self.efficiency) and 0 < self.efficiency <= 1):
            raise InputError(
                f"efficiency must be in (0, 1]: {self.efficiency}", field="--elastic-efficiency"
            )

    def throughput(self, nodes: int) -> float:
        """T(n): work per ms on ``nodes`` nodes, in units of one node's."""
        return 1.0 + self.efficiency * (nodes - 1)

    def rate(self, nodes: int) -> float:
        """Work (ms at the base size) done per ms on ``nodes`` nodes."""
        return self.throughput(nodes) / self.throughput(self.base_nodes)


def make_elastic(
    jobs: Sequence[TraceJob],
    share: float,
    *,
    seed: int = 0,
    efficiency: float = DEFAULT_EFFICIENCY,
    grow: int = DEFAULT_GROW,
) -> list[TraceJob]:
    """``jobs`` with about ``share`` of them (0-1) elastic (module docstring); the same
    ``seed`` marks the same jobs."""
    if not (math.isfinite(share) and 0 <= share <= 1):
        raise InputError(f"the elastic share must be in [0, 1]: {share}", field="--elastic")
    if grow < 1:
        raise InputError(f"growth must be at least 1: {grow}", field="--elastic-grow")
    draw = random.Random(seed)
    out: list[TraceJob] = []
    for tj in jobs:
        spec = tj.spec
        chosen = draw.random() < share  # drawn for every job: the choice of one is stable
        if (
            not chosen
            or spec.elastic
            or spec.array is not None
            or spec.batch
            or spec.tasks
            or spec.gpu_milli
            or not spec.gpus_per_node
            or spec.nodes_min != spec.nodes_max
        ):
            out.append(tj)
            continue
        n = spec.nodes_min
        elastic = dataclasses.replace(
            spec, elastic=True, nodes_min=max(1, n // 2), nodes_max=n * grow
        )
        out.append(dataclasses.replace(tj, spec=elastic, scaling=Scaling(n, efficiency)))
    return out
