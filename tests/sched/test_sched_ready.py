"""ReadyIndex: the lower bound it keeps across changes is the timeline walk's first instant."""

from __future__ import annotations

import pickle
import random

from phalanx.domain.jobspec import MILLI
from phalanx.policies.select_topology import TopologySelect
from phalanx.sched.occupancy import Occupancy
from phalanx.sched.ready import ReadyIndex
from phalanx.sched.shape import Shape
from phalanx.sched.timeline import Timeline
from phalanx.testing import make_job, small_cluster

SELECT = TopologySelect({})


def _shape(gpus: int, nodes: int = 1, cpus: int = 0, mem: int = 0, milli: int = 0) -> Shape:
    shape = Shape.of(make_job(gpus=gpus, nodes=nodes), "gpu")
    return Shape(
        shape.partition, nodes, nodes, gpus, milli, cpus, mem, shape.models, shape.features,
        False, None,
    )  # fmt: skip


def _walk(state: Occupancy, shape: Shape, now: int, resolution: int) -> int | None:
    return next((t for t, _ in Timeline(state, now, resolution)._candidates(shape)), None)


SHAPES = [
    _shape(1),
    _shape(4),
    _shape(8),
    _shape(8, nodes=3),
    _shape(2, nodes=2, cpus=24),
    _shape(1, cpus=40, mem=100_000),
    _shape(0, milli=MILLI // 2),
]


def _start(state: Occupancy, rng: random.Random, job_id: int, now: int) -> bool:
    shape = _shape(
        rng.choice([1, 1, 2, 4, 8]), cpus=rng.choice([0, 4, 16]), mem=rng.choice([0, 50_000])
    )
    if rng.random() < 0.1:
        shape = _shape(0, milli=MILLI // 4)
    chosen = SELECT.place(state, state.cap, shape, state.eligible(state.cap, shape), 1, None)
    if chosen is None:
        return False
    alloc = state.allocation(state.cap, shape, chosen)
    state.start(job_id, "root", alloc, now + rng.randrange(1, 500) * 7)
    return True


def test_the_kept_bound_is_the_walks_first_instant_through_starts_ends_and_nodes_down() -> None:
    rng = random.Random(7)
    state = Occupancy(small_cluster(nodes=6, gpus=8, per_leaf=2))
    index = ReadyIndex(state)
    now, next_id, checked = 0, 1, 0
    for _ in range(600):
        roll = rng.random()
        if roll < 0.45:
            next_id += _start(state, rng, next_id, now)
        elif roll < 0.8 and state.running:
            state.finish(rng.choice(sorted(state.running)), "root")
        elif roll < 0.88 and state.running:
            job_id = rng.choice(sorted(state.running))
            state.expect_end(job_id, now + rng.randrange(0, 50))
        elif roll < 0.93:
            state.set_up(rng.randrange(state.n), rng.random() < 0.6)
        else:
            now += rng.randrange(0, 300)
        for shape in SHAPES:
            for resolution in (0, 60):
                want = _walk(state, shape, now, resolution)
                assert index.lower_bound(shape, resolution, now + 1) == want, (shape, resolution)
                checked += want is not None
    assert checked > 500  # most answers are instants, not "never"


def test_an_occupancy_saved_before_the_runs_were_kept_rebuilds_them() -> None:
    state = Occupancy(small_cluster(nodes=2, gpus=8, per_leaf=2))
    rng = random.Random(1)
    for job_id in range(1, 6):
        _start(state, rng, job_id, 0)
    saved = state.__getstate__()  # a copy (compiled, an Occupancy has no __dict__)
    for key in ("node_runs", "node_version", "ready"):
        del saved[key]
    old = Occupancy.__new__(Occupancy)
    old.__setstate__(saved)
    assert old.node_runs == state.node_runs
    again = pickle.loads(pickle.dumps(state))
    assert again.node_runs == state.node_runs
    for shape in SHAPES:
        assert ReadyIndex(old).lower_bound(shape, 0, 1) == _walk(state, shape, 0, 0)
