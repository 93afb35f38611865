"""What ``sbatch --test-only`` answers: when and where a job would start, were it submitted
now. A value the controller computes and the API shows; nothing is reserved by it."""

from __future__ import annotations

from dataclasses import dataclass

from phalanx.domain.time import Instant

__all__ = ["Forecast"]


@dataclass(frozen=True, slots=True)
class Forecast:
    """``job_id`` is the id the job would get; ``start`` the earliest instant it could start;
    ``nodes`` the names of the nodes it would get, in allocation order; ``cpus`` over all of
    them; ``partition`` the one it would run in (empty if the cluster has none)."""

    job_id: int
    start: Instant
    nodes: tuple[str, ...]
    cpus: int
    partition: str
