"""The pass is one recipe: each extension point is called in the documented order, empty
points cost nothing, and every job that did not start carries a status from a point."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sequence

import pytest

from phalanx.domain.state import JobState, Reason
from phalanx.policies import catalog
from phalanx.policies.filter_fit import FitFilter
from phalanx.policies.priority_simple import BasicPriority
from phalanx.policies.select_topology import TopologySelect
from phalanx.sched.capacity import Allocation, Capacity
from phalanx.sched.context import PassContext
from phalanx.sched.job import Job
from phalanx.sched.occupancy import BoolArray, Occupancy
from phalanx.sched.shape import Shape
from phalanx.sched.status import OK, Status
from phalanx.testing import EngineDriver, make_job, small_cluster

calls: list[tuple[object, ...]] = []


class Order(BasicPriority):
    def order(self, jobs: Sequence[Job], ctx: PassContext) -> Iterable[Job]:
        calls.append(("queue sort", tuple(j.id for j in jobs)))
        return jobs


class Admit:
    def __init__(self, params: Mapping[str, object]) -> None:
        self.refuse = params.get("refuse")

    def pre_filter(self, job: Job, ctx: PassContext) -> Status:
        calls.append(("pre-filter", job.id))
        return Status.wait(Reason.QOS_QUOTA, "admit/log") if job.id == self.refuse else OK


class Filter(FitFilter):
    def filter(self, state: Occupancy, cap: Capacity, shape: Shape) -> BoolArray:
        calls.append(("filter",))
        return super().filter(state, cap, shape)


class Score(TopologySelect):
    def place(
        self,
        state: Occupancy,
        cap: Capacity,
        shape: Shape,
        mask: BoolArray,
        nodes: int,
        max_leaves: int | None,
    ) -> list[int] | None:
        calls.append(("score",))
        return super().place(state, cap, shape, mask, nodes, max_leaves)


class Victims:
    def __init__(self, params: Mapping[str, object]) -> None:
        pass

    def victims(self, job: Job, ctx: PassContext) -> list[Job] | None:
        calls.append(("post-filter", job.id))
        return None


@pytest.fixture
def logging_profile(monkeypatch: pytest.MonkeyPatch) -> catalog.Profile:
    reg = catalog.REGISTRY
    monkeypatch.setattr(reg, "_factories", dict(reg._factories))
    for plugin_id, factory in [
        ("priority/log", Order),
        ("admit/log", Admit),
        ("filter/log", Filter),
        ("select/log", Score),
        ("preempt/log", Victims),
    ]:
        reg.register(plugin_id, factory)
    calls.clear()
    return catalog.Profile(
        name="log",
        queue_sort="priority/log",
        pre_filter=("admit/log",),
        filter=("filter/log",),
        score="select/log",
        post_filter="preempt/log",
        reservation="sched/greedy",
        params={"sched/greedy": {"victim_search_depth": "all"}, "admit/log": {"refuse": 3}},
        calc_period=0,
    )


def test_points_are_called_in_the_order_of_the_recipe(logging_profile: catalog.Profile) -> None:
    d = EngineDriver(small_cluster(nodes=1, gpus=8, per_leaf=1), logging_profile)
    ids = [d.submit(make_job(gpus=g))[0] for g in (8, 8, 1)]
    d.settle()
    first, blocked, refused = ids
    assert d.state(first) is JobState.RUNNING
    # The second fits nowhere once the first started: no placement is even tried (no GPU
    # is free), so it goes straight to the post-filter; the third is refused before filter.
    assert calls == [
        ("queue sort", (first, blocked, refused)),
        ("pre-filter", first),
        ("filter",),
        ("score",),
        ("pre-filter", blocked),
        ("post-filter", blocked),
        ("pre-filter", refused),
    ]
    # Not reserved for (sched/greedy reserves nothing): it waits behind higher jobs.
    assert (d.job(blocked).reason, d.job(blocked).reason_plugin) == (
        Reason.PRIORITY,
        "sched/greedy",
    )
    assert (d.job(refused).reason, d.job(refused).reason_plugin) == (
        Reason.QOS_QUOTA,
        "admit/log",
    )


def test_a_profile_without_post_filter_never_searches_for_victims(
    logging_profile: catalog.Profile,
) -> None:
    profile = dataclasses.replace(logging_profile, post_filter=None)
    d = EngineDriver(small_cluster(nodes=1, gpus=8, per_leaf=1), profile)
    d.submit(make_job(gpus=8))
    d.submit(make_job(gpus=8))
    d.settle()
    assert not [e for e in calls if e[0] == "post-filter"]


def test_filters_are_combined_and_every_one_is_asked(logging_profile: catalog.Profile) -> None:
    profile = dataclasses.replace(logging_profile, filter=("filter/fit", "filter/log"))
    d = EngineDriver(small_cluster(nodes=2, gpus=8, per_leaf=2), profile)
    [job] = d.submit(make_job(gpus=4))
    d.settle()
    assert d.state(job) is JobState.RUNNING and ("filter",) in calls


def test_volcano_order_is_lazy_drf_between_accounts() -> None:
    """After each start the account with the lowest GPU share goes next (Volcano's DRF)."""
    d = EngineDriver(small_cluster(nodes=1, gpus=8, per_leaf=1), "volcano")
    a = [d.submit(make_job(gpus=2, account="a"))[0] for _ in range(3)]
    b = [d.submit(make_job(gpus=2, account="b"))[0] for _ in range(2)]
    d.settle()
    started = {j for j in a + b if d.state(j) is JobState.RUNNING}
    # 8 GPUs, 2 each: a, b, a, b by share (FIFO would start a, a, a, b).
    assert started == {a[0], a[1], b[0], b[1]}


class Reserve:
    def __init__(self, params: Mapping[str, object]) -> None:
        self.name = str(params["name"])
        self.refuse = params.get("refuse")

    def reserve(self, job: Job, alloc: Allocation, ctx: PassContext) -> Status:
        calls.append(("reserve", self.name, job.id))
        if job.id == self.refuse:
            return Status.wait(Reason.RESOURCES, f"reserve/{self.name}")
        return OK

    def unreserve(self, job: Job, ctx: PassContext) -> None:
        calls.append(("unreserve", self.name, job.id))


def test_a_refused_reservation_is_undone_in_reverse_and_the_job_waits(
    logging_profile: catalog.Profile,
) -> None:
    catalog.REGISTRY.register("reserve/a", Reserve)
    catalog.REGISTRY.register("reserve/b", Reserve)
    profile = dataclasses.replace(
        logging_profile,
        reserve=("reserve/a", "reserve/b"),
        params={"reserve/a": {"name": "a"}, "reserve/b": {"name": "b", "refuse": 2}},
    )
    d = EngineDriver(small_cluster(nodes=1, gpus=8, per_leaf=1), profile)
    one, two = (d.submit(make_job(gpus=1))[0] for _ in range(2))
    d.settle()
    assert [c for c in calls if c[0] in ("reserve", "unreserve")] == [
        ("reserve", "a", one),
        ("reserve", "b", one),
        ("reserve", "a", two),
        ("reserve", "b", two),
        ("unreserve", "a", two),
    ]
    assert d.state(one) is JobState.RUNNING and d.state(two) is JobState.PENDING
    assert d.job(two).reason_plugin == "reserve/b"
    assert d.engine.state.free_gpus == 7  # the refused placement was never taken


class Quiet:
    """A pre-filter and reserve plugin that says, per its ``idle`` parameter, whether it has
    anything to check (``Idle``); it refuses job 2 wherever it is asked."""

    def __init__(self, params: Mapping[str, object]) -> None:
        self.idle_now = bool(params["idle"])

    def idle(self, ctx: PassContext) -> bool:
        calls.append(("idle",))
        return self.idle_now

    def pre_filter(self, job: Job, ctx: PassContext) -> Status:
        calls.append(("pre-filter", job.id))
        return Status.wait(Reason.QOS_QUOTA, "admit/quiet") if job.id == 2 else OK

    def reserve(self, job: Job, alloc: Allocation, ctx: PassContext) -> Status:
        calls.append(("reserve", job.id))
        return OK

    def unreserve(self, job: Job, ctx: PassContext) -> None:
        pass


@pytest.mark.parametrize("idle", [True, False])
def test_an_idle_pre_filter_and_reserve_plugin_is_not_called_in_that_pass(
    logging_profile: catalog.Profile, idle: bool
) -> None:
    catalog.REGISTRY.register("admit/quiet", Quiet)
    profile = dataclasses.replace(
        logging_profile,
        pre_filter=("admit/quiet",),
        reserve=("admit/quiet",),
        params={"admit/quiet": {"idle": idle}},
    )
    d = EngineDriver(small_cluster(nodes=1, gpus=8, per_leaf=1), profile)
    one, two = (d.submit(make_job(gpus=1))[0] for _ in range(2))
    d.settle()
    asked = [c for c in calls if c[0] in ("pre-filter", "reserve")]
    assert ("idle",) in calls  # asked once per pass, at its start
    if idle:
        assert asked == []
        assert d.state(one) is JobState.RUNNING and d.state(two) is JobState.RUNNING
    else:
        assert asked == [("pre-filter", one), ("reserve", one), ("pre-filter", two)]
        assert d.state(one) is JobState.RUNNING and d.state(two) is JobState.PENDING
        assert d.job(two).reason_plugin == "admit/quiet"
