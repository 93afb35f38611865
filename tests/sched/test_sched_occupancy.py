"""Occupancy: starting and finishing jobs keeps free GPUs, ends and account use exact."""

from __future__ import annotations

import random

import numpy as np

from phalanx.sched.capacity import Allocation
from phalanx.sched.occupancy import Occupancy
from phalanx.sched.shape import Shape
from phalanx.testing import make_job, small_cluster


def test_start_then_finish_restores_everything() -> None:
    state = Occupancy(small_cluster(nodes=3, gpus=8, per_leaf=3))
    free0 = state.cap.copy()
    a = Allocation((0, 2), ((0, 1, 2), (5, 6, 7)), 0, 4, 10)
    b = Allocation((2,), ((0,),), 0, 1, 0)
    state.start(1, "x", a, end=100)
    state.start(2, "y", b, end=50)
    assert state.free_gpus == 24 - 7
    assert state.cap.gpus.tolist() == [5, 8, 4]
    assert state.ends() == [(50, 2), (100, 1)]
    assert state.account_gpus == {"x": 6.0, "y": 1.0}
    assert state.gpus_in_use() == 7.0
    assert state.finish(1, "x") == a
    assert state.finish(2, "y") == b
    assert state.free_gpus == 24
    assert state.running == {} and state.ends() == []
    assert state.account_gpus == {"x": 0.0, "y": 0.0}
    for f in ("gpus", "cpus", "mem", "dev"):
        assert np.array_equal(getattr(state.cap, f), getattr(free0, f))


def test_fractional_job_takes_one_whole_gpu_out_of_free_until_it_ends() -> None:
    state = Occupancy(small_cluster(nodes=1, gpus=2, per_leaf=1))
    share = Allocation((0,), ((1,),), 300, 1, 0)
    state.start(7, "x", share, end=10)
    assert state.free_gpus == 1
    state.finish(7, "x")
    assert state.free_gpus == 2 and state.cap.dev[0].tolist() == [1000, 1000]


def test_node_down_leaves_free_count_and_eligibility() -> None:
    state = Occupancy(small_cluster(nodes=2, gpus=8, per_leaf=2))
    shape = Shape.of(make_job(gpus=4), "gpu")
    state.set_up(1, False)
    assert state.free_gpus == 8
    assert state.eligible(state.cap, shape).tolist() == [True, False]
    assert state.static_mask(shape).tolist() == [True, True]
    state.set_up(1, True)
    assert state.free_gpus == 16


def test_base_mask_is_kept_read_only_and_follows_nodes_going_down_and_up() -> None:
    # Kept between calls (callers combine it into new arrays, never change it in place).
    state = Occupancy(small_cluster(nodes=2, gpus=8, per_leaf=2))
    shape = Shape.of(make_job(gpus=1), "gpu")
    mask = state.base_mask(shape)
    assert not mask.flags.writeable
    assert state.base_mask(shape) is mask
    state.set_up(0, False)
    assert state.base_mask(shape).tolist() == [False, True]
    state.set_up(0, True)
    assert state.base_mask(shape).tolist() == [True, True]


def test_free_gpus_counts_only_nodes_that_are_up_when_a_job_there_finishes() -> None:
    # ``free_gpus`` is documented as whole free GPUs on nodes that are up.
    state = Occupancy(small_cluster(nodes=2, gpus=8, per_leaf=2))
    state.start(1, "x", Allocation((1,), (tuple(range(8)),), 0, 0, 0), end=100)
    state.set_up(1, False)
    assert state.free_gpus == 8
    state.finish(1, "x")
    assert state.free_gpus == int(state.cap.gpus[state.up].sum()) == 8


def test_an_exclusive_job_holds_its_nodes_whole() -> None:
    # Slurm's --exclusive: no other job shares the node, not even a CPU-only one.
    state = Occupancy(small_cluster(nodes=2, gpus=8, per_leaf=2))
    exclusive = Shape.of(make_job(gpus=1, exclusive=True), "gpu")
    alloc = state.allocation(state.cap, exclusive, [0])
    assert alloc.devices == (tuple(range(8)),)
    assert alloc.cpus == int(state.node_cpus[0]) and alloc.mem_mb == int(state.node_mem[0])
    state.start(1, "x", alloc, end=100)
    cpu_only = Shape.of(make_job(gpus=0), "gpu")
    assert state.eligible(state.cap, cpu_only).tolist() == [False, True]
    state.finish(1, "x")
    assert state.eligible(state.cap, cpu_only).tolist() == [True, True]


def test_kept_masks_survive_takes_and_gives_and_equal_fresh_ones() -> None:
    # ``eligible`` keeps its masks on the capacity across ``take``/``give`` and brings them
    # up to date on the nodes moved since: always the mask a fresh capacity gives.
    rng = random.Random(3)
    state = Occupancy(small_cluster(nodes=6, gpus=8, per_leaf=3))
    cap = state.cap
    shapes = [
        Shape.of(make_job(gpus=1), "gpu"),
        Shape.of(make_job(gpus=5), "gpu"),
        Shape.of(make_job(gpus=1, exclusive=True), "gpu"),
        Shape(
            "gpu",
            1,
            1,
            0,
            300,
            int(state.node_cpus[0]) // 2,
            int(state.node_mem[0]) // 3,
            frozenset(),
            frozenset(),
            False,
            None,
        ),
    ]
    held: list[Allocation] = []
    kept_through = 0
    for _ in range(400):
        if held and (rng.random() < 0.45 or len(held) > 12):
            cap.give(held.pop(rng.randrange(len(held))))
        else:
            shape = rng.choice(shapes)
            nodes = state.eligible(cap, shape).nonzero()[0].tolist()
            if not nodes:
                continue
            alloc = state.allocation(cap, shape, [rng.choice(nodes)])
            cap.take(alloc)
            held.append(alloc)
        kept_through += len(cap.masks) > 0  # kept through the change just made
        for shape in shapes:
            kept = state.eligible(cap, shape)
            assert kept.tolist() == state.eligible(cap.copy(), shape).tolist()
    assert kept_through > 300  # dropped only when many nodes moved since they were made
