"""How a job that asks for G GPUs in total becomes a gang of nodes.

Traces that record only a GPU count (Philly, SWF) do not say how the GPUs were spread. The
mapping assumes 8-GPU nodes, one task per node, and the fewest nodes that split the GPUs evenly,
because a gang whose nodes hold unequal shares cannot be expressed as ``nodes x tasks``.
"""

from __future__ import annotations

__all__ = ["GPUS_PER_NODE", "gang_shape"]

GPUS_PER_NODE = 8


def gang_shape(gpus: int, per_node: int = GPUS_PER_NODE) -> tuple[int, int]:
    """``(nodes, gpus per node)`` for ``gpus`` GPUs on nodes of ``per_node`` GPUs.

    Up to ``per_node`` GPUs: one node. Beyond: the smallest node count ``n >= ceil(gpus /
    per_node)`` that divides ``gpus`` (12 -> 2 x 6, 24 -> 3 x 8, 9 -> 3 x 3). A prime count ends
    as ``gpus`` nodes of one GPU each, which is still a valid gang.
    """
    if gpus < 0:
        raise ValueError(f"GPU count cannot be negative: {gpus}")
    if gpus <= per_node:
        return 1, gpus
    # The smallest n >= ceil(gpus / per_node) dividing gpus is gpus / d for the largest
    # divisor d <= per_node: searched over d (at most per_node steps), not over n, which took
    # about gpus steps for a large prime count (a trace row of 10^11 GPUs hung the reader).
    share = next(d for d in range(per_node, 0, -1) if gpus % d == 0)
    return gpus // share, share
