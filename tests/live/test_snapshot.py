"""Snapshots on both stores: a restart restores the last one and replays only the tail,
to the state the controller that never stopped has; ended jobs are accounted for in the
store as they end, and past MinJobAge leave memory, where ``archived`` still finds them."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from phalanx.config.clusterspec import regular_cluster
from phalanx.domain.jobspec import ArraySpec, JobSpec
from phalanx.engine import Launch, Submit, TimerFired
from phalanx.engine.timers import is_stale
from phalanx.live.controller import Controller
from phalanx.live.snapshot import Cadence, Saved, dump, load
from phalanx.live.store import Store, open_journal
from phalanx.policies.catalog import profile
from phalanx.protocol.agent import AgentHello, AgentReports, RunReport
from phalanx.runtime import FakeClock
from phalanx.sched.capacity import Allocation
from phalanx.sched.job import Job

NODES = ("n001", "n002")


def _record(job: Job) -> str:
    return json.dumps({"job_id": job.id, "state": job.state.value, "user": job.spec.user})


def _controller(store: Store, clock: FakeClock, **kw: Any) -> Controller:
    c = Controller(
        regular_cluster(2, 8, 2, prefix="n"),
        profile("phalanx"),
        store.journal,
        clock=clock,
        run_as_submitter=False,
        accounting=store.accounting,
        record=_record,
        **kw,
    )
    c.recover()
    for node in NODES:
        c.register(AgentHello(node=node, boot_id=f"b-{node}", cpus=64, memory_mb=1024, gpus=8))
    return c


def _spec(gpus: int = 4, user: str = "alice") -> JobSpec:
    return JobSpec(user=user, gpus_per_task=gpus, command=("true",), workdir="/tmp")


def _tick(c: Controller, clock: FakeClock, ms: int = 1) -> None:
    clock.advance(ms)
    c.step()


def _end(c: Controller, job_id: int, code: int = 0) -> None:
    job = c.job(job_id)
    assert job.alloc is not None
    for i in job.alloc.nodes:
        node = c.cluster.nodes[i].name
        agent = c.fleet.registry.agents[node]
        report = RunReport(job_id=job_id, run=job.run, state="exited", exit_code=code)
        c.reports(node, AgentReports(boot_id=agent.boot_id, epoch=agent.epoch, reports=[report]))


def _view(c: Controller) -> dict[int, tuple[Any, ...]]:
    return {
        j.id: (j.state, j.run, j.exit_code, j.start, j.end, j.reason) for j in c.jobs(finished=True)
    }


def _some_work(c: Controller, clock: FakeClock, rounds: int) -> None:
    """Jobs submitted, started, ended (one in three failing), round after round."""
    for r in range(rounds):
        ids = [i for ids in c.submit([_spec(), _spec(), _spec(8)]) for i in ids]
        _tick(c, clock)
        for job_id in ids:
            if c.job(job_id).state.value == "RUNNING":
                _end(c, job_id, code=r % 3 == 0)
        _tick(c, clock, 50)


def test_a_restart_replays_only_the_tail_after_the_snapshot(
    stores: Callable[[], Store],
) -> None:
    clock = FakeClock(1_000_000)
    c = _controller(stores(), clock)
    _some_work(c, clock, 4)
    assert c.save_snapshot()
    at_snapshot = c.snapshots.position
    _some_work(c, clock, 2)
    tail = stores().journal.position()
    assert tail > at_snapshot
    tail_inputs = len(list(stores().journal.read(at_snapshot)))

    again = _controller(stores(), clock)
    assert again.recovered == tail_inputs
    assert again.snapshots.position == at_snapshot
    assert _view(again) == _view(c) and again.engine.next_id == c.engine.next_id
    # And it goes on as the first would: the same ids, the same placements.
    for ctl in (c, again):
        ctl.submit([_spec(8), _spec(4)])
        _tick(ctl, clock, 0)
    assert _view(again) == _view(c)


def test_running_jobs_survive_a_restart_from_a_snapshot(stores: Callable[[], Store]) -> None:
    clock = FakeClock(1_000_000)
    c = _controller(stores(), clock)
    [job_id] = c.submit([_spec(8)])[0]
    _tick(c, clock)
    assert c.job(job_id).state.value == "RUNNING"
    assert c.save_snapshot()

    again = _controller(stores(), clock)
    assert again.recovered == 0
    assert (job_id, again.job(job_id).run) in again.fleet.runs  # its agent may report it
    _end(again, job_id, code=3)
    _tick(again, clock)
    assert (again.job(job_id).state.value, again.job(job_id).exit_code) == ("FAILED", 3)


def test_jobs_past_min_job_age_move_to_accounting_at_a_snapshot(
    stores: Callable[[], Store],
) -> None:
    clock = FakeClock(1_000_000)
    c = _controller(stores(), clock, cadence=Cadence(min_job_age=60_000))
    _some_work(c, clock, 2)
    ended = sorted(j.id for j in c.jobs(finished=True) if j.state.is_final)
    assert ended
    clock.advance(30_000)
    assert c.save_snapshot()
    # Not old enough to be forgotten, but accounted for already, as each ended.
    assert all(i in c.engine.jobs for i in ended)
    assert [json.loads(r)["job_id"] for r in c.archived()] == ended
    clock.advance(30_000)
    [late] = c.submit([_spec(user="bob")])[0]
    _tick(c, clock)
    assert c.save_snapshot()
    assert all(i not in c.engine.jobs for i in ended) and late in c.engine.jobs
    records = [json.loads(r) for r in c.archived()]
    assert [r["job_id"] for r in records] == ended
    assert [json.loads(r)["job_id"] for r in c.archived(ids=[ended[0]])] == [ended[0]]
    assert c.archived(user="bob") == []

    again = _controller(stores(), clock)
    assert all(i not in again.engine.jobs for i in ended)
    assert [json.loads(r)["job_id"] for r in again.archived()] == ended
    assert again.job(late).state.value == "RUNNING"


def test_a_snapshot_is_due_every_n_inputs(stores: Callable[[], Store]) -> None:
    clock = FakeClock(1_000_000)
    c = _controller(stores(), clock, cadence=Cadence(every=5, seconds=1e9))
    c.submit([_spec(1)] * 4)
    _tick(c, clock)
    assert c.snapshots.position == 0
    c.submit([_spec(1)])
    _tick(c, clock)
    assert c.snapshots.position == stores().journal.position() > 0


def test_a_snapshot_of_another_format_means_a_full_replay(stores: Callable[[], Store]) -> None:
    clock = FakeClock(1_000_000)
    c = _controller(stores(), clock)
    c.submit([_spec(), _spec()])
    _tick(c, clock)
    store = stores()
    store.journal.save_snapshot(store.journal.position(), b"not a snapshot")
    again = _controller(stores(), clock)
    assert again.recovered == store.journal.count() and _view(again) == _view(c)


def test_without_a_store_that_keeps_snapshots_nothing_is_saved() -> None:
    from phalanx.runtime import MemoryJournal

    clock = FakeClock(1_000_000)
    journal = MemoryJournal()
    c = Controller(regular_cluster(1, 8, 1), profile("phalanx"), journal, clock=clock)
    c.recover()
    c.submit([_spec()])
    assert not c.save_snapshot()
    assert c.snapshots.position == 0 and isinstance(journal.events[0], Submit)


def test_a_snapshot_saved_in_the_background_is_restored_alike(
    stores: Callable[[], Store],
) -> None:
    clock = FakeClock(1_000_000)
    first = stores()
    c = _controller(first, clock, reopen=lambda: open_journal(first.url))
    _some_work(c, clock, 3)
    assert c.save_snapshot(background=True)
    c.submit([_spec()])  # the parent goes on while the child saves
    _tick(c, clock)
    assert c.snapshots.reap(wait=True)
    assert 0 < c.snapshots.position < stores().journal.position()
    again = _controller(stores(), clock)
    assert again.recovered == 1 and _view(again) == _view(c)


def _timers(c: Controller) -> list[tuple[int, int, int, object]]:
    return sorted(c.loop.checkpoint().heap, key=lambda e: e[2])


def test_a_snapshot_drops_timers_of_runs_that_are_over_here_and_in_the_copy(
    stores: Callable[[], Store],
) -> None:
    clock = FakeClock(1_000_000)
    c = _controller(stores(), clock)
    _some_work(c, clock, 3)  # runs end long before their limit: their limit timers stay
    jobs = c.engine.jobs
    stale = [e for e in _timers(c) if isinstance(e[3], TimerFired) and is_stale(e[3].key, jobs)]
    assert stale
    assert c.save_snapshot()
    assert not [e for e in _timers(c) if e in stale]
    again = _controller(stores(), clock)
    assert again.recovered == 0 and _timers(again) == _timers(c)
    for ctl in (c, again):
        ctl.submit([_spec(8), _spec(4)])
        _tick(ctl, clock, 0)
    assert _view(again) == _view(c) and _timers(again) == _timers(c)


def test_idempotency_keys_survive_a_snapshot(stores: Callable[[], Store]) -> None:
    clock = FakeClock(1_000_000)
    c = _controller(stores(), clock)
    ids = c.submit([_spec(), _spec(2)], key="k1")
    _tick(c, clock)
    assert c.save_snapshot()
    again = _controller(stores(), clock)
    assert again.recovered == 0
    assert again.submit([_spec(), _spec(2)], key="k1") == ids
    assert again.engine.next_id == c.engine.next_id


def test_frozen_dataclasses_come_back_equal_fields_computed_in_post_init_too() -> None:
    alloc = Allocation((0, 3), ((0, 1), (2, 3)), 0, 4, 1024)
    spec = JobSpec(user="alice", gpus_per_task=2, array=ArraySpec((1, 2, 5)), command=("x",))
    launch = Launch(7, 2, alloc, spec, 3_600_000, None, None)
    saved = Saved(42, None, [launch, launch])  # type: ignore[arg-type]
    copy = load(dump(saved))
    assert copy is not None and copy.position == 42
    assert copy.launches == [launch, launch] and copy.launches[0] is copy.launches[1]
    assert copy.launches[0].alloc.gpus == 4.0 and hash(copy.launches[0].spec) == hash(spec)


def test_the_snapshot_child_lets_go_of_the_parents_sockets(tmp_path: Any) -> None:
    """Or a killed leader's database session (and its lock) would outlive it in the child."""
    import os
    import socket

    from phalanx.live.snapshot import _close_sockets

    a, b = socket.socketpair()
    kept = open(tmp_path / "file", "w")  # noqa: SIM115
    try:
        pid = os.fork()
        if pid == 0:
            code = 1
            try:
                _close_sockets()
                os.fstat(kept.fileno())  # files stay open
                try:
                    os.fstat(a.fileno())
                except OSError:
                    code = 0
            finally:
                os._exit(code)
        _, status = os.waitpid(pid, 0)
        assert os.waitstatus_to_exitcode(status) == 0
        a.sendall(b"x")  # the parent's socket is its own still
        assert b.recv(1) == b"x"
    finally:
        a.close()
        b.close()
        kept.close()
