"""``Forget``: ended jobs at or before the horizon leave the engine; others stay."""

from __future__ import annotations

from phalanx.config.clusterspec import regular_cluster
from phalanx.domain.jobspec import JobSpec
from phalanx.engine import Cancel, Engine, Forget
from phalanx.policies.catalog import profile


def test_forget_drops_the_jobs_that_ended_by_the_horizon_only() -> None:
    engine = Engine(regular_cluster(1, 8, 1), profile("fifo"))
    spec = JobSpec(user="alice", gpus_per_task=8, command=("true",))
    first = engine.submit(spec, 1_000)[0]
    second = engine.submit(spec, 1_000)[0]
    third = engine.submit(spec, 1_000)[0]
    engine.handle(Cancel(2_000, first, "alice"))
    engine.handle(Cancel(5_000, second, "alice"))
    engine.handle(Forget(9_000, 2_000))
    assert first not in engine.jobs  # ended at 2,000: forgotten
    assert second in engine.jobs  # ended after the horizon
    assert third in engine.jobs and not engine.jobs[third].state.is_final
