"""priority/multifactor: the breakdown sums to the priority; fair share follows usage."""

from __future__ import annotations

import dataclasses
import math

import pytest

from phalanx.domain.state import JobState
from phalanx.domain.time import DAY, HOUR, MINUTE
from phalanx.engine.engine import Engine
from phalanx.policies.catalog import POLICIES
from phalanx.policies.priority_multifactor import MultifactorPriority
from phalanx.policies.priority_simple import las_queue
from phalanx.sched.job import Job
from phalanx.testing import EngineDriver, make_job, small_cluster


def job(engine: Engine, job_id: int, account: str, submit: int = 0, **kw: object) -> Job:
    spec = make_job(account=account, **kw)  # type: ignore[arg-type]
    return Job(job_id, job_id, spec, submit, "gpu", 1, spec.time_limit or HOUR)


@pytest.mark.parametrize("profile", ["slurm", "phalanx"])
def test_breakdown_sums_to_the_priority_of_every_pending_job(profile: str) -> None:
    d = EngineDriver(small_cluster(nodes=2, gpus=8, accounts={"a": 1, "b": 3}), profile)
    d.submit(make_job(gpus=8, nodes=2, time_limit=DAY, account="a"))
    d.settle()
    ids = [
        *d.submit(make_job(gpus=4, nodes=1, account="a", nice=5)),
        *d.submit(make_job(gpus=8, nodes=2, account="b", time_limit=2 * HOUR)),
    ]
    d.advance(3 * HOUR)  # age grows and usage is charged at the periodic recalculation
    for j in ids:
        job_ = d.job(j)
        assert d.state(j) is JobState.PENDING
        assert set(job_.factors) >= {"age", "fairshare", "jobsize", "partition", "qos"}
        assert math.isclose(sum(job_.factors.values()), job_.priority)
        assert job_.factors["age"] > 0
    assert d.job(ids[0]).factors["nice"] == -5
    assert d.job(ids[0]).factors["qos"] == 0  # QOS normal has priority 0


def test_an_unknown_qos_has_the_factor_of_the_default_qos() -> None:
    cluster = small_cluster()
    normal = dataclasses.replace(cluster.qos["normal"], priority=500)
    engine = Engine(
        dataclasses.replace(cluster, qos={**cluster.qos, "normal": normal}), POLICIES["slurm"]
    )
    plugin = MultifactorPriority({})
    _, known = plugin.compute(job(engine, 1, "root"), engine, 10)
    _, unknown = plugin.compute(job(engine, 2, "root", qos="nosuchqos"), engine, 10)
    assert unknown["qos"] == known["qos"] == 500  # 1000 x 500 / 1000 (QOS high)


@pytest.mark.parametrize("algorithm", ["fair_tree", "classic"])
def test_fairshare_factor_drops_for_the_account_with_more_usage(algorithm: str) -> None:
    engine = Engine(small_cluster(accounts={"a": 1, "b": 1}), POLICIES["slurm"])
    engine.usage.raw.update({"a": 9.0e9, "b": 1.0e9, "root": 1.0e10})
    engine.usage.updated = 1
    plugin = MultifactorPriority({"fairshare": algorithm})
    _, fa = plugin.compute(job(engine, 1, "a"), engine, 10)
    _, fb = plugin.compute(job(engine, 2, "b"), engine, 10)
    assert fa["fairshare"] < fb["fairshare"]


def test_more_usage_means_lower_priority_in_the_engine() -> None:
    d = EngineDriver(small_cluster(nodes=1, gpus=8, accounts={"a": 1, "b": 1}), "slurm")
    [hog] = d.submit(make_job(gpus=8, account="a", time_limit=DAY), runtime=2 * HOUR)
    d.settle()
    d.advance(HOUR)
    [a2] = d.submit(make_job(gpus=8, account="a"))
    [b1] = d.submit(make_job(gpus=8, account="b"))
    d.advance(HOUR + 10 * MINUTE)  # a recalculation after the submits charges the usage
    assert d.job(a2).factors["fairshare"] < d.job(b1).factors["fairshare"]
    d.advance(2 * HOUR)
    assert d.state(hog) is JobState.COMPLETED
    assert d.state(b1) is JobState.RUNNING and d.state(a2) is JobState.PENDING


def test_jobsize_factor_favours_big_jobs_or_small_with_favor_small() -> None:
    engine = Engine(small_cluster(nodes=4), POLICIES["slurm"])
    big, small = job(engine, 1, "root", nodes=4), job(engine, 2, "root", nodes=1)
    plain = MultifactorPriority({})
    assert plain.compute(big, engine, 0)[1]["jobsize"] == 1000
    assert plain.compute(small, engine, 0)[1]["jobsize"] == 250
    favour = MultifactorPriority({"favor_small": True})
    assert favour.compute(big, engine, 0)[1]["jobsize"] == 0
    assert favour.compute(small, engine, 0)[1]["jobsize"] == 750


def test_age_factor_caps_at_max_age() -> None:
    engine = Engine(small_cluster(), POLICIES["slurm"])
    j = job(engine, 1, "root")
    plugin = MultifactorPriority({"weight_age": 1000, "max_age_ms": 2 * DAY})
    assert plugin.compute(j, engine, DAY)[1]["age"] == 500
    assert plugin.compute(j, engine, 5 * DAY)[1]["age"] == 1000


def test_las_queue_thresholds() -> None:
    assert [las_queue(x, (10, 100)) for x in (0, 9, 10, 99, 100, 10**9)] == [0, 0, 1, 1, 2, 2]


def test_age_size_exponent_weighs_the_age_of_big_jobs_more() -> None:
    engine = Engine(small_cluster(nodes=4), POLICIES["slurm"])
    one, gang = job(engine, 1, "root", gpus=1), job(engine, 2, "root", gpus=8, nodes=2)
    plugin = MultifactorPriority({"weight_age": 1000, "max_age_ms": DAY, "age_size_exponent": 0.5})
    # The 16-GPU gang's age weighs 16^0.5 = 4 times the 1-GPU job's.
    assert plugin.compute(gang, engine, 6 * HOUR)[1]["age"] == pytest.approx(1000)
    assert plugin.compute(one, engine, 6 * HOUR)[1]["age"] == pytest.approx(250)
    assert plugin.compute(gang, engine, 2 * DAY)[1]["age"] == 4000
    assert plugin.compute(one, engine, 2 * DAY)[1]["age"] == 1000


def test_a_requeued_job_counts_as_fully_aged_with_requeued_full_age() -> None:
    engine = Engine(small_cluster(nodes=4), POLICIES["slurm"])
    j = job(engine, 1, "root")
    plugin = MultifactorPriority({"weight_age": 1000, "max_age_ms": DAY, "requeued_full_age": True})
    assert plugin.compute(j, engine, 6 * HOUR)[1]["age"] == pytest.approx(250)
    j.restarts = 1
    assert plugin.compute(j, engine, 6 * HOUR)[1]["age"] == 1000


def test_short_cap_ms_counts_longer_limits_as_the_cap() -> None:
    engine = Engine(small_cluster(), POLICIES["slurm"])
    limits = (HOUR, DAY // 2, 3 * DAY, 7 * DAY)
    jobs = [job(engine, i, "root", time_limit=t) for i, t in enumerate(limits, 1)]
    hour, half_day, days, week = jobs
    params = {"weight_short": 7000, "short_horizon_ms": 7 * DAY}
    plain = MultifactorPriority(params)
    capped = MultifactorPriority({**params, "short_cap_ms": DAY})

    def short(plugin: MultifactorPriority, j: Job) -> float:
        return plugin.compute(j, engine, 0)[1]["short"]

    # Below the cap nothing changes; from it on every limit counts as one day (1000 per day).
    for j in (hour, half_day):
        assert short(capped, j) == pytest.approx(short(plain, j))
    assert short(plain, half_day) == pytest.approx(6500)
    assert short(plain, days) == pytest.approx(4000) and short(plain, week) == pytest.approx(0)
    assert short(capped, days) == pytest.approx(6000) and short(capped, week) == pytest.approx(6000)
    with pytest.raises(TypeError, match="short_cap_ms"):
        MultifactorPriority({**params, "short_cap_ms": 0})
