"""A workload to replay: job requests with their submit times and true runtimes.

The true runtime is the simulator's secret: the executor uses it to decide when a job ends;
policies never see it (they see ``JobSpec.time_limit``, the user's estimate).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from phalanx.domain.jobspec import JobSpec
from phalanx.domain.time import Duration, Instant

if TYPE_CHECKING:  # the model imports TraceJob
    from phalanx.sim.elastic import Scaling

__all__ = ["TraceJob"]


@dataclass(frozen=True, slots=True)
class TraceJob:
    submit: Instant
    """Milliseconds after the start of the trace."""
    spec: JobSpec
    runtime: Duration
    """How long the job runs once launched, if nothing stops it."""
    trace_id: str = ""
    """The job's name or row in its source, for reports."""
    line: int | None = None
    """Line of the source file the job came from."""
    scaling: Scaling | None = None
    """An elastic job's throughput by size (``phalanx.sim.elastic``); None: its work takes
    ``runtime`` whatever its size."""
