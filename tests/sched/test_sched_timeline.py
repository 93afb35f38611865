"""Timeline: the earliest start of a blocked job, and what later jobs may use meanwhile."""

from __future__ import annotations

from phalanx.domain.jobspec import MILLI
from phalanx.policies.select_topology import TopologySelect
from phalanx.sched.capacity import Allocation, Capacity
from phalanx.sched.occupancy import Occupancy
from phalanx.sched.shape import Shape
from phalanx.sched.timeline import Reservation, Timeline
from phalanx.testing import make_job, small_cluster

SELECT = TopologySelect({})


def placer(state: Occupancy, gpus: int, nodes: int = 1):  # type: ignore[no-untyped-def]
    shape = Shape.of(make_job(gpus=gpus, nodes=nodes), "gpu")

    def place(cap: Capacity) -> Allocation | None:
        chosen = SELECT.place(state, cap, shape, state.eligible(cap, shape), nodes, None)
        return None if chosen is None else state.allocation(cap, shape, chosen)

    return place


def reserve(
    t: Timeline, job_id: int, gpus: int, duration: int, nodes: int = 1, horizon: int | None = None
) -> Reservation | None:
    shape = Shape.of(make_job(gpus=gpus, nodes=nodes), "gpu")
    return t.earliest(job_id, shape, duration, placer(t.state, gpus, nodes), horizon)


def busy(state: Occupancy, job_id: int, node: int, devices: range, end: int) -> Allocation:
    alloc = Allocation((node,), (tuple(devices),), 0, 0, 0)
    state.start(job_id, "root", alloc, end)
    return alloc


def test_earliest_is_the_first_end_after_which_the_job_fits() -> None:
    state = Occupancy(small_cluster(nodes=1, gpus=8, per_leaf=1))
    busy(state, 1, 0, range(0, 6), end=100)
    busy(state, 2, 0, range(6, 8), end=50)
    t = Timeline(state, now=0)
    assert reserve(t, 10, 2, 30).start == 50  # type: ignore[union-attr]
    t = Timeline(state, now=0)
    res = reserve(t, 11, 8, 30)
    assert res is not None and (res.start, res.end) == (100, 130)
    # Not within the horizon: no reservation.
    assert reserve(Timeline(state, now=0), 12, 8, 30, horizon=99) is None


def test_earliest_is_after_now_even_if_a_limit_has_passed() -> None:
    state = Occupancy(small_cluster(nodes=1, gpus=8, per_leaf=1))
    busy(state, 1, 0, range(8), end=100)
    res = reserve(Timeline(state, now=500), 2, 8, 10)
    assert res is not None and res.start == 501


def test_a_second_reservation_never_overlaps_the_first_on_its_devices() -> None:
    state = Occupancy(small_cluster(nodes=1, gpus=8, per_leaf=1))
    busy(state, 1, 0, range(8), end=100)
    t = Timeline(state, now=0)
    first = reserve(t, 2, 8, 50)
    second = reserve(t, 3, 8, 50)
    assert first is not None and (first.start, first.end) == (100, 150)
    assert second is None or second.start >= first.end


def test_a_second_reservation_starts_when_the_first_one_ends() -> None:
    # Contract of ``earliest``: None only beyond the horizon (here: none). The only instant
    # the second job fits is when the first reservation ends, which is not a running job's end.
    state = Occupancy(small_cluster(nodes=1, gpus=8, per_leaf=1))
    busy(state, 1, 0, range(8), end=100)
    t = Timeline(state, now=0)
    reserve(t, 2, 8, 50)
    second = reserve(t, 3, 8, 50)
    assert second is not None and second.start == 150


def test_view_and_consume_keep_reserved_resources_for_the_reservation() -> None:
    # Node 0 busy until 100 (8 GPUs), node 1 half busy until 1000.
    state = Occupancy(small_cluster(nodes=2, gpus=8, per_leaf=2))
    busy(state, 1, 0, range(8), end=100)
    busy(state, 2, 1, range(4), end=1000)
    t = Timeline(state, now=0)
    res = reserve(t, 3, 8, 100)
    assert res is not None and res.start == 100 and res.alloc.nodes == (0,)
    four = placer(state, 4)
    # A job ending before the reservation starts may use anything free now.
    assert t.view(state.cap, 100) is state.cap
    # A long job may use only what the reservation leaves: the free half of node 1.
    view = t.view(state.cap, 500)
    assert view.gpus.tolist() == [0, 4]
    alloc = four(view)
    assert alloc is not None and alloc.nodes == (1,)
    state.start(4, "root", alloc, 500)
    t.consume(alloc, 500)
    # Now nothing is left for another long job, though node 0 frees before it would end.
    assert four(t.view(state.cap, 500)) is None
    assert t.view(state.cap, 500).gpus.tolist() == [0, 0]
    # And the reservation still fits at its start: its node is untouched.
    assert res.extra.gpus.tolist() == [0, 0]


def test_view_never_offers_reserved_devices_even_if_free_now() -> None:
    # 8 GPUs free now on node 1; a blocked 2-node job reserves node 1 from when node 0 frees.
    state = Occupancy(small_cluster(nodes=2, gpus=8, per_leaf=2))
    busy(state, 1, 0, range(8), end=100)
    t = Timeline(state, now=0)
    res = reserve(t, 2, 8, 100, nodes=2)
    assert res is not None and sorted(res.alloc.nodes) == [0, 1] and res.start == 100
    assert t.view(state.cap, 101).gpus.tolist() == [0, 0]
    assert t.view(state.cap, 100).gpus.tolist() == [0, 8]


def test_view_counts_only_devices_free_both_now_and_at_the_reservation() -> None:
    # 4 GPUs: devices 2, 3 busy until 100. A 3-GPU job reserves devices 0-2 from 100, so
    # device 3 is the extra then; devices 0, 1 are free now. No device is free in both.
    state = Occupancy(small_cluster(nodes=1, gpus=4, per_leaf=1))
    busy(state, 1, 0, range(2, 4), end=100)
    t = Timeline(state, now=0)
    res = reserve(t, 2, 3, 100)
    assert res is not None and res.alloc.devices == ((0, 1, 2),)
    view = t.view(state.cap, 1000)
    assert view.gpus.tolist() == (view.dev == MILLI).sum(axis=1).tolist()
    alloc = placer(state, 1)(view)
    assert alloc is None or len(alloc.devices[0]) == 1
