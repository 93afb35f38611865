"""The pending queue keeps tier, priority, submit order; remove and resort are exact."""

from __future__ import annotations

import bisect
import math
import pickle
import random

import numpy as np
import numpy.typing as npt

from phalanx.domain.jobspec import JobSpec
from phalanx.engine.queue import PendingQueue, _key, _place
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


def test_with_first_moves_the_named_queued_jobs_to_the_front_in_queue_order() -> None:
    q = PendingQueue()
    jobs = [_job(i, float(10 - i)) for i in range(1, 7)]
    for job in jobs:
        q.insert(job)
    by_id = {job.id: job for job in jobs}
    gone = _job(9, 1.0)  # named but not queued: left out
    by_id[gone.id] = gone
    first = q.with_first({5, 2, 9, 42}, by_id)
    # The same as a walk that takes the named ones first, then the rest, each in queue order.
    walked = [j for j in q.jobs() if j.id in {5, 2}] + [j for j in q.jobs() if j.id not in {5, 2}]
    assert first == walked == [jobs[1], jobs[4], jobs[0], jobs[2], jobs[3], jobs[5]]
    assert q.jobs() == jobs  # a copy: the queue itself is unchanged
    lent = q.with_first({}, by_id)
    assert lent == jobs
    late = _job(20, 0.5)
    q.insert(late)
    assert q.remove(jobs[0]) and q.jobs() == [*jobs[1:], late]
    mine = q.jobs()
    q.insert(_job(21, 0.1))
    assert mine == [*jobs[1:], late]
    assert lent == jobs  # later changes to the queue leave a list handed out as it was


class _Sort:
    """A queue sort giving each job its seq times ten (and no factors)."""

    def compute_many(
        self, jobs: list[Job], ctx: object, now: int
    ) -> list[tuple[float, dict[str, float]]]:
        return [(10.0 * job.seq, {"seq": float(job.seq)}) for job in jobs]


class _Quick(_Sort):
    def priorities(
        self, jobs: list[Job], ctx: object, now: int, seqs: npt.NDArray[np.int64]
    ) -> npt.NDArray[np.float64] | None:
        assert seqs.tolist() == [job.seq for job in jobs]  # the queue's columns in step
        return 10.0 * seqs.astype(np.float64)


def test_recalc_keeps_fixed_priorities_and_reorders() -> None:
    for sort in (_Sort(), _Quick()):
        q = PendingQueue()
        jobs = [_job(i, float(-i)) for i in range(1, 6)]  # the reverse of the new order
        jobs[1].fixed_priority = jobs[1].priority = 1e9  # an admin's: stays first
        for job in jobs:
            q.insert(job)
        assert q.jobs()[0] is jobs[1]
        assert q.recalc(sort, None, 0)  # type: ignore[arg-type]
        assert q.jobs() == [jobs[1], jobs[4], jobs[3], jobs[2], jobs[0]]
        assert [j.priority for j in q.jobs()] == [1e9, 50.0, 40.0, 30.0, 10.0]
        quick = isinstance(sort, _Quick)
        assert (jobs[0].factors == {"seq": 1.0}) is not quick  # factors only from compute_many
        assert q.remove(jobs[1]) and q.remove(jobs[0])  # found under their new keys
        jobs[1].priority = 0.0
        q.insert(jobs[1])
        q.recalc(sort, None, 0)  # type: ignore[arg-type]
        assert jobs[1].priority == 1e9 and q.jobs()[0] is jobs[1]


def test_a_queue_pickled_before_fixed_priorities_were_tracked_derives_them() -> None:
    q = PendingQueue()
    a, b = _job(1, 1.0), _job(2, 2.0)
    a.fixed_priority = 1.0
    for job in (a, b):
        q.insert(job)
    old = pickle.loads(pickle.dumps(q))  # as a snapshot restores it
    new = PendingQueue.__new__(PendingQueue)
    new.__setstate__((None, {"_jobs": old.jobs()}))  # a snapshot without ``_fixed``
    assert {j.seq for j in new._fixed} == {1}
    assert {j.seq for j in old._fixed} == {1}


def test_to_back_queues_a_job_behind_its_priority_and_ahead_of_later_ones() -> None:
    q = PendingQueue()
    a, b, c, low = _job(1, 5.0), _job(2, 5.0), _job(3, 5.0), _job(4, 1.0)
    for job in (a, b, c, low):
        q.insert(job)
    q.to_back(a)
    assert q.jobs() == [b, c, a, low]  # behind its priority only
    assert a.seq == 1 and a.queue_seq > c.queue_seq
    later = Job(9, q.next_seq(), JobSpec(), 0, "gpu", 1, 60_000)
    later.priority = 5.0
    q.insert(later)
    assert q.jobs() == [b, c, a, later, low]
    assert q.remove(a) and q.jobs() == [b, c, later, low]  # found under its new place
    q.to_back(a)  # not queued: nothing
    assert a not in q.jobs()
    assert not q.resort()  # the order is the one the keys give


def test_resort_gives_the_order_of_the_keys_over_one_tier_and_several() -> None:
    rng = random.Random(3)
    for tiers in ((1,), (1, 2, 5)):
        q = PendingQueue()
        jobs = [_job(i, float(rng.randint(0, 4)), rng.choice(tiers)) for i in range(1, 60)]
        for job in jobs:
            q.insert(job)
        for _ in range(5):
            for job in jobs:
                job.priority = float(rng.randint(0, 4))  # ties: submit order decides
            q.resort()
            expected = sorted(jobs, key=lambda j: (-j.tier, -j.priority, j.queue_seq))
            assert q.jobs() == expected


def test_order_stays_right_through_removals_requeues_and_recalcs() -> None:
    # Gone jobs are dropped by bisection under the key they were queued by (a few) or by a
    # walk (many), also after their key changed (requeued, sent to the back, updated).
    rng = random.Random(7)
    q = PendingQueue()
    queued: list[Job] = []
    seq = 0
    for step in range(600):
        op = rng.random()
        if op < 0.45 or not queued:
            for _ in range(rng.choice((1, 1, 1, 90))):
                seq = q.next_seq()
                job = _job(seq, float(rng.randint(0, 6)), rng.choice((1, 1, 2)))
                q.insert(job)
                queued.append(job)
        elif op < 0.65:
            for job in rng.sample(queued, min(len(queued), rng.choice((1, 3, 80)))):
                assert q.remove(job)
                queued.remove(job)
                job.priority = float(rng.randint(0, 6))  # as a requeue's new priority
                if rng.random() < 0.5:
                    q.insert(job)  # back in the queue under its new key
                    queued.append(job)
        elif op < 0.8:
            q.to_back(rng.choice(queued))
        elif op < 0.9:
            for job in rng.sample(queued, min(len(queued), 5)):
                q.remove(job)
                queued.remove(job)
            q.recalc(_Quick(), None, 0)  # type: ignore[arg-type]
        else:
            for job in rng.sample(queued, min(len(queued), 4)):
                assert q.remove(job)
            job = rng.choice(queued)
            assert not q.remove(job) or q.insert(job) is None
            for job in [j for j in queued if j not in q._queued]:
                queued.remove(job)
        if step % 7 == 0 or step == 599:
            jobs = q.jobs()
            assert jobs == sorted(queued, key=lambda j: (-j.tier, -j.priority, j.queue_seq))
    restored = pickle.loads(pickle.dumps(q))
    assert [j.id for j in restored.jobs()] == [j.id for j in q.jobs()]


def test_place_is_bisect_left_by_the_queue_key_for_every_value() -> None:
    # The queue's own bisection compares fields, not key tuples: the same place for ties,
    # -0.0, infinities and NaN, in sorted lists and in lists that are not.
    rng = random.Random(3)
    values = [0.0, -0.0, 1.0, 2.5, -1.0, math.nan, math.inf, -math.inf]
    for _ in range(3000):
        jobs = [
            _job(i + 1, rng.choice(values), rng.choice((0, 1, 2))) for i in range(rng.randint(0, 9))
        ]
        for job in jobs:
            job.queue_seq = rng.randint(0, 5)
        if rng.random() < 0.7:
            jobs.sort(key=lambda j: (-j.tier, 0.0 if math.isnan(j.priority) else -j.priority))
        tier, priority, seq = rng.choice((0, 1, 2)), rng.choice(values), rng.randint(0, 5)
        expected = bisect.bisect_left(jobs, (-tier, -priority, seq), key=_key)
        assert _place(jobs, tier, priority, seq) == expected


def test_a_released_list_is_changed_in_place_and_a_lent_one_never() -> None:
    q = PendingQueue()
    jobs = [_job(i, float(i)) for i in range(1, 6)]
    for job in jobs:
        q.insert(job)
    lent = q.jobs()
    before = list(lent)
    q.remove(jobs[2])
    assert q.jobs() is not lent and lent == before  # a pass still walking it sees it whole
    q.release()
    mine = q.jobs()
    q.release()
    q.remove(jobs[0])
    assert q.jobs() is mine and jobs[0] not in mine  # after the pass: no copy of the queue
