"""select/topology (one leaf when possible, best fit, --switches) and the simple selects."""

from __future__ import annotations

from phalanx.domain.state import JobState, Reason
from phalanx.domain.time import MINUTE
from phalanx.policies.select_simple import BinpackSelect, SpreadSelect
from phalanx.policies.select_topology import TopologySelect, pick_best_fit
from phalanx.sched.capacity import Allocation
from phalanx.sched.occupancy import Occupancy
from phalanx.sched.shape import Shape
from phalanx.testing import EngineDriver, make_job, small_cluster

SELECT = TopologySelect({})


def shape(gpus: int, nodes: int = 1, **kw: object) -> Shape:
    return Shape.of(make_job(gpus=gpus, nodes=nodes, **kw), "gpu")  # type: ignore[arg-type]


def use(state: Occupancy, node: int, gpus: int, job_id: int) -> None:
    state.start(job_id, "root", Allocation((node,), (tuple(range(gpus)),), 0, 0, 0), 10**9)


def two_leaves() -> Occupancy:
    return Occupancy(small_cluster(nodes=16, gpus=8, per_leaf=8))


def test_eight_node_job_lands_in_one_leaf_when_one_has_room() -> None:
    state = two_leaves()
    use(state, 3, 1, 1)  # leaf 0 now has only 7 whole-free nodes for an 8-GPU-per-node gang
    chosen = SELECT.place(
        state, state.cap, shape(8, 8), state.eligible(state.cap, shape(8, 8)), 8, None
    )
    assert chosen is not None and len(set(chosen)) == 8
    assert {state.leaf_of[i] for i in chosen} == {1}


def test_eight_node_job_prefers_the_leaf_with_fewest_eligible_nodes() -> None:
    # Both leaves could hold a 4-node gang; the one with fewer free nodes is used (best fit).
    state = two_leaves()
    for node, job_id in ((9, 1), (10, 2)):
        use(state, node, 8, job_id)
    chosen = SELECT.place(
        state, state.cap, shape(8, 4), state.eligible(state.cap, shape(8, 4)), 4, None
    )
    assert chosen is not None and {state.leaf_of[i] for i in chosen} == {1}


def test_gang_straddles_the_fewest_leaves_only_when_it_must_and_max_leaves_forbids_it() -> None:
    state = two_leaves()
    use(state, 3, 1, 1)
    use(state, 12, 1, 2)  # 7 + 7 eligible nodes
    chosen = SELECT.place(
        state, state.cap, shape(8, 8), state.eligible(state.cap, shape(8, 8)), 8, None
    )
    assert chosen is not None and {state.leaf_of[i] for i in chosen} == {0, 1}
    assert (
        SELECT.place(state, state.cap, shape(8, 8), state.eligible(state.cap, shape(8, 8)), 8, 1)
        is None
    )
    assert (
        SELECT.place(state, state.cap, shape(8, 8), state.eligible(state.cap, shape(8, 8)), 8, 2)
        is not None
    )


def test_single_node_job_goes_to_the_fullest_node_that_fits() -> None:
    state = Occupancy(small_cluster(nodes=4, gpus=8, per_leaf=4))
    use(state, 2, 6, 1)  # 2 free
    use(state, 1, 4, 2)  # 4 free
    assert SELECT.place(
        state, state.cap, shape(2), state.eligible(state.cap, shape(2)), 1, None
    ) == [2]
    assert SELECT.place(
        state, state.cap, shape(3), state.eligible(state.cap, shape(3)), 1, None
    ) == [1]
    assert SELECT.place(
        state, state.cap, shape(5), state.eligible(state.cap, shape(5)), 1, None
    ) == [0]
    assert (
        SELECT.place(state, state.cap, shape(9), state.eligible(state.cap, shape(9)), 1, None)
        is None
    )


def test_best_fit_over_no_node_is_minus_one() -> None:
    # ``place`` asks ``pick_best_fit`` without testing the mask first: -1 says "none".
    state = Occupancy(small_cluster(nodes=4, gpus=8, per_leaf=2))
    none = state.eligible(state.cap, shape(9))
    assert pick_best_fit(state, state.cap, none, shape(9)) == -1
    assert pick_best_fit(state, state.cap, none, shape(0, gpu_milli=300)) == -1


def test_single_node_tie_goes_to_the_fuller_leaf() -> None:
    state = Occupancy(small_cluster(nodes=4, gpus=8, per_leaf=2))
    use(state, 3, 8, 1)  # leaf 1 is fuller; nodes 0, 1, 2 all have 8 free
    assert SELECT.place(
        state, state.cap, shape(1), state.eligible(state.cap, shape(1)), 1, None
    ) == [2]


def test_spread_and_binpack_order_nodes_by_free_gpus() -> None:
    state = Occupancy(small_cluster(nodes=3, gpus=8, per_leaf=3))
    use(state, 0, 2, 1)  # 6 free
    use(state, 1, 6, 2)  # 2 free
    spread, binpack = SpreadSelect({}), BinpackSelect({})
    assert spread.place(
        state, state.cap, shape(2), state.eligible(state.cap, shape(2)), 1, None
    ) == [2]
    assert binpack.place(
        state, state.cap, shape(2), state.eligible(state.cap, shape(2)), 1, None
    ) == [1]
    assert binpack.place(
        state, state.cap, shape(2, 2), state.eligible(state.cap, shape(2, 2)), 2, None
    ) == [1, 0]
    assert (
        spread.place(state, state.cap, shape(7, 2), state.eligible(state.cap, shape(7, 2)), 2, None)
        is None
    )


def test_switches_with_wait_holds_the_job_then_relaxes_after_switches_wait() -> None:
    d = EngineDriver(small_cluster(nodes=16, gpus=8, per_leaf=8), "fifo")
    d.node_down(3)
    d.node_down(12)  # 7 + 7 nodes up: an 8-node gang must straddle the two leaves
    [j] = d.submit(make_job(gpus=8, nodes=8, switches=1, switches_wait=10 * MINUTE))
    d.settle()
    assert d.state(j) is JobState.PENDING and d.job(j).reason == Reason.RESOURCES
    d.advance(10 * MINUTE - 1)
    assert d.state(j) is JobState.PENDING
    d.advance(10 * MINUTE)  # a periodic pass at the wait's end relaxes the limit
    assert d.state(j) is JobState.RUNNING
    alloc = d.job(j).alloc
    assert alloc is not None and len({d.engine.state.leaf_of[n] for n in alloc.nodes}) == 2


def test_switches_satisfied_starts_at_once_in_one_leaf() -> None:
    d = EngineDriver(small_cluster(nodes=16, gpus=8, per_leaf=8), "slurm")
    d.node_down(3)
    [j] = d.submit(make_job(gpus=8, nodes=8, switches=1, switches_wait=10 * MINUTE))
    d.settle()
    alloc = d.job(j).alloc
    assert alloc is not None and {d.engine.state.leaf_of[n] for n in alloc.nodes} == {1}
