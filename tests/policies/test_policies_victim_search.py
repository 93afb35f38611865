"""The victim search tries a placement only where one could exist: while no node would have
the GPUs the job asks once the victims so far are gone, the job cannot fit, and its search
asks the pass for no placement (which, without a leaf limit, would only have said no)."""

from __future__ import annotations

from dataclasses import dataclass, field

from phalanx.domain.state import JobState
from phalanx.domain.time import HOUR
from phalanx.engine.scheduling.context import PassView
from phalanx.policies.victim_search import search
from phalanx.sched.capacity import Allocation, Capacity
from phalanx.sched.job import Job
from phalanx.sched.occupancy import Occupancy
from phalanx.testing import EngineDriver, make_job, small_cluster


@dataclass
class _Counting:
    """The engine's pass view, counting the placements asked of it."""

    view: PassView
    places: list[int] = field(default_factory=list)

    @property
    def now(self) -> int:
        return self.view.now

    @property
    def state(self) -> Occupancy:
        return self.view.state

    def leaf_limit(self, job: Job) -> int | None:
        return self.view.leaf_limit(job)

    def place(self, job: Job, cap: Capacity | None = None) -> Allocation | None:
        self.places.append(job.id)
        return self.view.place(job, cap)


def _full_of_one_gpu_runs() -> tuple[EngineDriver, list[Job]]:
    d = EngineDriver(small_cluster(nodes=2, gpus=8, per_leaf=2), "slurm")
    ids = [d.submit(make_job(gpus=1, time_limit=10 * HOUR))[0] for _ in range(16)]
    d.settle()
    runs = [d.job(i) for i in ids]
    assert all(r.state is JobState.RUNNING for r in runs)
    return d, runs


def _on(runs: list[Job], node: int) -> list[Job]:
    return [r for r in runs if r.alloc is not None and r.alloc.nodes == (node,)]


def test_no_placement_is_tried_while_no_node_could_hold_the_job() -> None:
    d, runs = _full_of_one_gpu_runs()
    job = d.job(d.submit(make_job(gpus=8))[0])
    ctx = _Counting(d.engine.view)
    # Eight GPUs come back, four on each node: enough in all, on no node.
    scattered = _on(runs, 0)[:4] + _on(runs, 1)[:4]
    assert len(scattered) == 8
    assert search(job, ctx, scattered, True, None, None, None) is None  # type: ignore[arg-type]
    assert ctx.places == []
    # A whole node comes back: the placement is tried, and the victims are that node's.
    whole = _on(runs, 1)
    assert len(whole) == 8
    found = search(job, ctx, _on(runs, 0)[:4] + whole, True, None, None, None)  # type: ignore[arg-type]
    assert found is not None and set(found) == set(whole)
    # Tried once node 1 is whole, then for each of node 0's victims dropped: the victims
    # of node 1 dropped leave no node whole, and are kept without a placement tried.
    assert len(ctx.places) == 1 + 4
