"""priority/multifactor over its rows: the whole-queue calculation gives exactly what
``compute`` gives job by job, and factors survive the rows being compacted."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
import pytest

from phalanx.domain.time import DAY, HOUR, MINUTE
from phalanx.engine.engine import Engine
from phalanx.policies.catalog import POLICIES
from phalanx.policies.priority_multifactor import MultifactorPriority
from phalanx.policies.priority_rows import FactorRows
from phalanx.sched.job import Job
from phalanx.testing import make_job, small_cluster

PARAMS: dict[str, object] = {
    "weight_short": 2000,
    "max_age_ms": DAY,
    "age_size_exponent": 0.5,
    "requeued_full_age": True,
}


def _jobs(count: int) -> list[Job]:
    out = []
    for i in range(1, count + 1):
        spec = make_job(
            account="ab"[i % 2],
            gpus=1 + i % 8,
            nodes=1 + i % 2,
            nice=i % 3,
            time_limit=(1 + i % 5) * HOUR,
        )
        job = Job(i, i, spec, i * 7 * MINUTE, "gpu", 1, spec.time_limit or HOUR)
        job.restarts = 1 if i % 11 == 0 else 0
        out.append(job)
    return out


# Ages past the maximum, and (a short maximum) ages below it, zero and negative.
_AGES = [
    (PARAMS, 2 * DAY + 17),
    (PARAMS, 3 * HOUR + 9 * MINUTE),
    ({"max_age_ms": 2 * HOUR}, 3 * HOUR + 9 * MINUTE),
    ({"max_age_ms": 2 * HOUR, "age_size_exponent": 0.5}, 3 * HOUR + 9 * MINUTE),
]


@pytest.mark.parametrize(("params", "now"), _AGES)
def test_the_whole_queue_gets_the_values_compute_gives_each_job(
    params: dict[str, object], now: int
) -> None:
    engine = Engine(small_cluster(accounts={"a": 1, "b": 3}), POLICIES["slurm"])
    engine.usage.raw.update({"a": 5.0e9, "b": 1.0e9, "root": 6.0e9})
    jobs = _jobs(40)
    one = MultifactorPriority(params)
    each = [(p, dict(f)) for p, f in (one.compute(j, engine.view, now) for j in jobs)]
    many = MultifactorPriority(params)
    for j in jobs[::3]:  # some queued before (cached static factors), the rest not
        many.compute(j, engine.view, 0)
    whole = [(p, dict(f)) for p, f in many.compute_many(jobs, engine.view, now)]
    assert whole == each  # exactly: the same operations in the same order
    assert len({p for p, _ in whole}) > 20  # ages, sizes and accounts differ


def test_factors_keep_their_values_when_rows_are_compacted() -> None:
    engine = Engine(small_cluster(accounts={"a": 1, "b": 3}), POLICIES["slurm"])
    plugin = MultifactorPriority(PARAMS)
    plugin._rows = FactorRows(capacity=8)
    jobs = _jobs(40)
    first = plugin.compute_many(jobs[:8], engine.view, HOUR)
    before = [dict(f) for _, f in first]
    # The first eight leave the queue; jobs queued one by one and recalculated without
    # them fill the columns, and the first eight's rows are given up.
    for start in range(8, 40, 8):
        for j in jobs[start : start + 8]:
            plugin.compute(j, engine.view, start * HOUR)
        plugin.compute_many(jobs[start : start + 8], engine.view, (start + 1) * HOUR)
    assert jobs[0].seq not in plugin._rows.row_of
    assert len(plugin._rows.gen) < 40  # compacted rather than grown by every job
    assert [dict(f) for _, f in first] == before
    last = plugin.compute_many(jobs[32:], engine.view, DAY)
    again = MultifactorPriority(PARAMS).compute_many(jobs[32:], engine.view, DAY)
    assert [(p, dict(f)) for p, f in last] == [(p, dict(f)) for p, f in again]


def test_compact_gives_up_the_rows_of_jobs_out_of_the_last_calculation() -> None:
    """What a snapshot saves: the rows of the last calculation's jobs only; the factors of
    the others keep their values, and the calculations that follow are those of rows never
    compacted."""
    engine = Engine(small_cluster(accounts={"a": 1, "b": 3}), POLICIES["slurm"])
    jobs = _jobs(40)
    compacted, plain = MultifactorPriority(PARAMS), MultifactorPriority(PARAMS)
    views = []
    for plugin in (compacted, plain):
        views.append(plugin.compute_many(jobs[:30], engine.view, HOUR))
        plugin.compute_many(jobs[20:30], engine.view, 2 * HOUR)  # the first 20 left the queue
    before = [dict(f) for _, f in views[0]]
    compacted.compact()
    rows = compacted._rows
    assert sorted(rows.row_of) == [j.seq for j in jobs[20:30]]
    assert len(rows.views) == 10 and len(plain._rows.views) == 30
    assert [dict(f) for _, f in views[0]] == before == [dict(f) for _, f in views[1]]
    for now in (3 * HOUR, DAY):
        after = [(p, dict(f)) for p, f in compacted.compute_many(jobs[10:], engine.view, now)]
        assert after == [(p, dict(f)) for p, f in plain.compute_many(jobs[10:], engine.view, now)]
    assert (
        compacted.compute(jobs[0], engine.view, DAY)[0]
        == plain.compute(jobs[0], engine.view, DAY)[0]
    )


def _seqs(jobs: list[Job]) -> npt.NDArray[np.int64]:
    return np.array([job.seq for job in jobs], np.int64)


def test_priorities_alone_are_those_of_the_whole_calculation() -> None:
    engine = Engine(small_cluster(accounts={"a": 1, "b": 3}), POLICIES["slurm"])
    engine.usage.raw.update({"a": 5.0e9, "b": 1.0e9, "root": 6.0e9})
    jobs = _jobs(40)
    now = 2 * DAY + 17
    many, quick = MultifactorPriority(PARAMS), MultifactorPriority(PARAMS)
    for j in jobs:
        many.compute(j, engine.view, 0)
        quick.compute(j, engine.view, 0)
    got = quick.priorities(jobs, engine.view, now, _seqs(jobs))
    assert got is not None
    assert got.tolist() == [p for p, _ in many.compute_many(jobs, engine.view, now)]
    fresh = MultifactorPriority(PARAMS)
    # Never computed: compute_many.
    assert fresh.priorities(jobs, engine.view, now, _seqs(jobs)) is None


def test_rows_found_by_sequence_follow_compaction_and_far_sequences() -> None:
    engine = Engine(small_cluster(accounts={"a": 1, "b": 3}), POLICIES["slurm"])
    engine.usage.raw.update({"a": 5.0e9, "b": 1.0e9, "root": 6.0e9})
    jobs = _jobs(40)
    far = _jobs(41)[-1]
    far.seq = 1 << 40  # beyond the table: found in the dict
    quick, plain = MultifactorPriority(PARAMS), MultifactorPriority(PARAMS)
    quick._rows = FactorRows(capacity=8)
    for hour, queue in enumerate((jobs[:8], jobs[4:30], [*jobs[20:], far]), start=1):
        for j in queue:
            quick.compute(j, engine.view, hour * HOUR)
            plain.compute(j, engine.view, hour * HOUR)
        # Rows were given up and renumbered on the way (capacity 8): each job's own row.
        got = quick.priorities(queue, engine.view, DAY + hour, _seqs(queue))
        assert got is not None
        rows = quick._rows
        assert [float(rows.w_age[rows.row_of[j.seq]]) for j in queue] == [
            j_f["age"] for j_f in (quick.compute(j, engine.view, DAY + hour)[1] for j in queue)
        ]
        want = [plain.compute(j, engine.view, DAY + hour)[0] for j in queue]
        assert got.tolist() == want
    assert quick._rows.rows_of(_seqs([far])) is None
    # A job whose row was given up (not in the last calculation) has none: compute_many.
    assert quick.priorities([jobs[0]], engine.view, DAY, _seqs([jobs[0]])) is None
