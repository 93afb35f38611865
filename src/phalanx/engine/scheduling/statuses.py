"""Step 6 of the pass: every pending job carries a ``Status`` and, where known, an expected
start, cheaply (a full cluster must not cost a walk over a long queue)."""

from __future__ import annotations

from mypy_extensions import mypyc_attr

from phalanx.domain.state import JobState, Reason
from phalanx.domain.time import Instant
from phalanx.sched.job import Job
from phalanx.sched.status import Status

__all__ = ["Statuses"]


@mypyc_attr(allow_interpreted_subclasses=True)
class Statuses:
    def __init__(self, jobs: dict[int, Job], waiting: dict[int, Job]) -> None:
        self._jobs = jobs
        self._waiting = waiting
        """Pending jobs that are not eligible (held, dependencies): not in any pass."""
        self.passes = 0
        self.nonwhole = 0
        """Queued jobs that need no whole GPU (CPU-only or a GPU share)."""
        self.not_priority: set[Job] = set()
        """Queued jobs whose reason is not Priority (what ``wait_rest_priority`` may change).
        The jobs themselves, not their ids: a job hashes by identity, where an id would be
        made an int object at each ``wait``."""

    def wait(self, job: Job, status: Status, expected_start: Instant | None = None) -> None:
        """Record why the job did not start this pass."""
        job.reason = status.reason
        job.reason_plugin = status.plugin
        job.reason_message = status.message
        job.expected_start = expected_start
        job.seen = self.passes
        if status.reason is Reason.PRIORITY:
            self.not_priority.discard(job)
        else:
            self.not_priority.add(job)

    def expect(self, job: Job, start: Instant | None) -> None:
        """A blocked job's expected start; its reason stays."""
        if job.reason_message:
            status = Status.wait_because(job.reason, job.reason_plugin, job.reason_message)
        else:
            status = Status.wait(job.reason, job.reason_plugin)
        self.wait(job, status, start)

    def wait_rest_priority(self, status: Status) -> None:
        """``wait`` with ``status`` (reason Priority) for every eligible pending job not
        looked at in this pass, cheaply: a full cluster, where everyone below waits for
        Priority, touches only the queued jobs that carry another reason, not the whole tail
        of a long queue."""
        reason, plugin = status.reason, status.plugin
        for job in list(self.not_priority):  # each changes only itself: any order will do
            if job.seen == self.passes:
                continue
            self.not_priority.discard(job)
            if job.state is JobState.PENDING and job.id not in self._waiting:
                job.reason = reason
                job.reason_plugin = plugin
                job.reason_message = ""
                job.expected_start = None
