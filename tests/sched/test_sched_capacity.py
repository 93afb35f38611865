"""Capacity take/give is an exact undo, for whole GPUs and for shares of one GPU."""

from __future__ import annotations

import random

import numpy as np

from phalanx.domain.jobspec import MILLI
from phalanx.sched.capacity import Allocation, Capacity
from phalanx.sched.occupancy import Occupancy
from phalanx.testing import small_cluster


def fresh() -> Capacity:
    return Occupancy(small_cluster(nodes=2, gpus=4, per_leaf=2)).cap.copy()


def same(a: Capacity, b: Capacity) -> bool:
    return all(np.array_equal(getattr(a, f), getattr(b, f)) for f in ("gpus", "cpus", "mem", "dev"))


def test_whole_gpus_take_and_give_back_exactly() -> None:
    cap, before = fresh(), fresh()
    alloc = Allocation(nodes=(0, 1), devices=((0, 1), (2,)), milli=0, cpus=3, mem_mb=100)
    cap.take(alloc)
    assert cap.gpus.tolist() == [2, 3]
    assert cap.dev[0].tolist() == [0, 0, MILLI, MILLI]
    assert cap.dev[1].tolist() == [MILLI, MILLI, 0, MILLI]
    assert cap.cpus.tolist() == [before.cpus[0] - 3, before.cpus[1] - 3]
    assert cap.mem.tolist() == [before.mem[0] - 100, before.mem[1] - 100]
    cap.give(alloc)
    assert same(cap, before)


def test_fractional_shares_count_the_device_as_used_until_all_given_back() -> None:
    cap, before = fresh(), fresh()
    half = Allocation(nodes=(0,), devices=((1,),), milli=500, cpus=1, mem_mb=0)
    quarter = Allocation(nodes=(0,), devices=((1,),), milli=250, cpus=1, mem_mb=0)
    cap.take(half)
    assert cap.gpus[0] == 3 and cap.dev[0, 1] == 500
    cap.take(quarter)
    assert cap.gpus[0] == 3 and cap.dev[0, 1] == 250
    cap.give(half)
    assert cap.gpus[0] == 3 and cap.dev[0, 1] == 750  # still shared: not a whole free GPU
    cap.give(quarter)
    assert same(cap, before)
    assert half.gpus == 0.5 and quarter.gpus_on(0) == 0.25


def test_take_devices_lowest_whole_or_best_fitting_share() -> None:
    cap = fresh()
    cap.take(Allocation((0,), ((0,),), 0, 0, 0))
    assert cap.take_devices(0, 2, 0) == (1, 2)
    assert cap.take_devices(0, 0, 0) == ()
    cap.take(Allocation((0,), ((2,),), 600, 0, 0))  # device 2 has 400 left
    assert cap.take_devices(0, 1, 300) == (2,)  # the fullest device that still fits
    assert cap.take_devices(0, 1, 500) == (1,)


def test_copy_is_independent_and_minimum_is_elementwise() -> None:
    a = fresh()
    b = a.copy()
    b.take(Allocation((1,), ((0, 1, 2, 3),), 0, 0, 0))
    assert a.gpus.tolist() == [4, 4] and b.gpus.tolist() == [4, 0]
    m = a.minimum(b)
    assert m.gpus.tolist() == [4, 0] and m.dev[1].tolist() == [0, 0, 0, 0]


def test_whole_gpu_count_follows_the_devices_through_takes_and_gives() -> None:
    # Whole GPUs, shares, CPU-only: after every step the count of whole free GPUs per node
    # is the number of devices with all MILLI free, and giving everything back restores all.
    cap, before = fresh(), fresh()
    allocs = [
        Allocation((0, 1), ((0, 3), (1,)), 0, 2, 10),
        Allocation((1,), ((0,),), 300, 1, 0),
        Allocation((0,), ((),), 0, 4, 50),  # CPU-only: no device changes
        Allocation((1,), ((0,),), 700, 0, 0),  # fills device 0 of node 1 with the 300
        Allocation((0,), ((1, 2),), 0, 0, 0),
    ]
    for alloc in allocs:
        cap.take(alloc)
        assert cap.gpus.tolist() == (cap.dev == MILLI).sum(axis=1).tolist()
    assert cap.gpus.tolist() == [0, 2]
    assert cap.dev[1, 0] == 0
    assert cap.cpus[0] == before.cpus[0] - 6
    for alloc in reversed(allocs[:3]):
        cap.give(alloc)
        assert cap.gpus.tolist() == (cap.dev == MILLI).sum(axis=1).tolist()
    for alloc in allocs[3:]:
        cap.give(alloc)
    assert same(cap, before)


def test_gpu_rows_are_kept_through_takes_and_gives_and_equal_fresh_ones() -> None:
    rng = random.Random(11)
    state = Occupancy(small_cluster(nodes=6, gpus=8, per_leaf=2))
    cap = state.cap
    held: list[Allocation] = []
    kept_through = 0
    for _ in range(300):
        if held and (rng.random() < 0.45 or len(held) > 10):
            cap.give(held.pop(rng.randrange(len(held))))
        else:
            node = rng.randrange(6)
            free = [d for d, left in enumerate(cap.dev[node].tolist()) if left == MILLI]
            if not free:
                continue
            devices = tuple(rng.sample(free, rng.randint(1, len(free))))
            alloc = Allocation((node,), (devices,), 0, 1, 1)
            cap.take(alloc)
            held.append(alloc)
        kept_through += cap.rows is not None  # kept through the change just made
        gpus, in_leaf = cap.gpu_rows(state.leaf_list, state.n_leaves)
        fresh = cap.copy().gpu_rows(state.leaf_list, state.n_leaves)
        assert (gpus, in_leaf) == fresh
        assert gpus == cap.gpus.tolist()
        assert in_leaf == [sum(gpus[2 * leaf : 2 * leaf + 2]) for leaf in range(3)]
    assert kept_through > 200
