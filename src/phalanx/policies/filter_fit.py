"""``filter/fit``: Kubernetes' NodeResourcesFit and Slurm's node test, as a filter.

A node passes if it is up, in the job's partition, has the GPU model and features asked, and
has the GPUs (or GPU share), CPUs and memory free for one node's share of the job.
"""

from __future__ import annotations

from collections.abc import Mapping

from mypy_extensions import mypyc_attr

from phalanx.sched.capacity import Capacity
from phalanx.sched.occupancy import BoolArray, Occupancy
from phalanx.sched.shape import Shape

__all__ = ["FitFilter"]


@mypyc_attr(allow_interpreted_subclasses=True)
class FitFilter:
    plugin = "filter/fit"

    def __init__(self, params: Mapping[str, object]) -> None:
        del params

    def filter(self, state: Occupancy, cap: Capacity, shape: Shape) -> BoolArray:
        return state.eligible(cap, shape)
