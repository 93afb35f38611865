"""The pending queue keeps tier, priority, submit order; remove and resort are exact."""

from __future__ import annotations

from phalanx.domain.jobspec import JobSpec
from phalanx.engine.queue import PendingQueue
from phalanx.sched.job import Job


def _job(seq: int, priority: float, tier: int = 1) -> Job:
    job = Job(seq, seq, JobSpec(), 0, "gpu", tier, 60_000)
    job.priority = priority
    return job


def test_order_is_tier_then_priority_then_submit() -> None:
    q = PendingQueue()
    a, b, c, d = _job(1, 5.0), _job(2, 9.0), _job(3, 5.0), _job(4, 0.0, tier=2)
    for job in (a, b, c, d):
        q.insert(job)
    assert q.jobs() == [d, b, a, c]


def test_remove_takes_out_only_that_job() -> None:
    q = PendingQueue()
    a, b = _job(1, 1.0), _job(2, 1.0)
    q.insert(a)
    q.insert(b)
    assert q.remove(a) and not q.remove(a)
    assert q.jobs() == [b] and len(q) == 1


def test_resort_reports_whether_the_order_changed() -> None:
    q = PendingQueue()
    a, b = _job(1, 2.0), _job(2, 1.0)
    q.insert(a)
    q.insert(b)
    assert not q.resort()
    b.priority = 3.0
    assert q.resort()
    assert q.jobs() == [b, a]
    assert q.remove(b)  # keys were rebuilt with the new priority
