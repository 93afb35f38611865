"""How nodes check their own health: Slurm's HealthCheckProgram and HealthCheckInterval, and
the GPU probes of the agents (NVML), with the Xid errors that end a node's jobs at once."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["DEFAULT_FATAL_XIDS", "HealthCheck"]

DEFAULT_FATAL_XIDS = frozenset({48, 74, 79, 94, 95, 119, 120})
"""Xid errors after which a GPU's work is lost and the GPU needs a reset (NVIDIA's Xid
catalogue): 48 double-bit ECC, 74 NVLink, 79 fallen off the bus, 94/95 contained and
uncontained ECC, 119/120 GSP errors. The node's jobs are requeued at once, not drained."""


@dataclass(frozen=True, slots=True)
class HealthCheck:
    """Handed to every agent when it registers (as slurmd reads slurm.conf)."""

    program: str | None = None
    """Run every ``interval_s``: a non-zero exit, or a line ``DRAIN reason`` on its output,
    drains the node."""
    interval_s: float = 0.0
    """Between runs of ``program``; 0 runs none (Slurm's default)."""
    fatal_xids: frozenset[int] = DEFAULT_FATAL_XIDS
    gpus: bool = True
    """Probe the GPUs through NVML (where the agent's machine has an NVML library)."""
    gpu_interval_s: float = 30.0
    """Between GPU probes (a few NVML queries per device: cheap)."""
