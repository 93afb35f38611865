"""Why a pending job is not eligible yet: a hold, a begin time, or a dependency (Slurm's)."""

from __future__ import annotations

from collections.abc import Mapping

from phalanx.domain.jobspec import DepKind
from phalanx.domain.state import JobState, Reason
from phalanx.domain.time import Instant
from phalanx.sched.job import Job

__all__ = ["blocker"]


LAUNCH_FAILED = "launch_failed"
"""The key (in ``JobSpec.extra``) of why a held job's launch failed: released, it is dropped."""


def blocker(job: Job, jobs: Mapping[int, Job], now: Instant) -> str | None:
    """The reason ``job`` must wait before it may be scheduled at all, or None."""
    spec = job.spec
    if spec.hold:
        failed = any(key == LAUNCH_FAILED for key, _ in spec.extra)
        return Reason.LAUNCH_FAILED_HELD if failed else Reason.HELD_USER
    if spec.begin is not None and spec.begin > now:
        return Reason.BEGIN_TIME
    for dep in spec.dependencies:
        verdict = _dependency(job, dep.kind, dep.job_ids, jobs)
        if verdict is not None:
            return verdict
    return None


def _dependency(
    job: Job, kind: DepKind, ids: tuple[int, ...], jobs: Mapping[int, Job]
) -> str | None:
    if kind is DepKind.SINGLETON:
        for other in jobs.values():
            if (
                other.id != job.id
                and other.seq < job.seq
                and other.spec.name == job.spec.name
                and other.spec.user == job.spec.user
                and not other.state.is_final
            ):
                return Reason.DEPENDENCY
        return None
    for dep_id in ids:
        dep = jobs.get(dep_id)
        if dep is None:
            continue  # Slurm ignores a dependency on a job it no longer knows
        if kind is DepKind.AFTER:
            if dep.state is JobState.PENDING:
                return Reason.DEPENDENCY
            continue
        if not dep.state.is_final:
            return Reason.DEPENDENCY
        ok = dep.state is JobState.COMPLETED
        if (kind is DepKind.AFTEROK and not ok) or (kind is DepKind.AFTERNOTOK and ok):
            return Reason.DEPENDENCY_NEVER
    return None
