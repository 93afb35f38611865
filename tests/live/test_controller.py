"""The controller without sockets: a fake clock, a journal, agents played by the test."""

from __future__ import annotations

from pathlib import Path

import pytest

from phalanx.domain.caller import Caller
from phalanx.domain.clusterspec import regular_cluster
from phalanx.domain.job import JobSpec
from phalanx.errors import NotAllowed, NotFound, SpecError
from phalanx.live.clock import FakeClock
from phalanx.live.controller import Controller
from phalanx.live.journal import SqliteJournal
from phalanx.policies.catalog import profile

ALICE = Caller(1000, "alice")
BOB = Caller(1001, "bob")
ROOT = Caller(0, "root", admin=True)


def _controller(path: Path, clock: FakeClock, **kw: object) -> Controller:
    c = Controller(
        regular_cluster(2, 8, 2, prefix="n"),
        profile("phalanx"),
        SqliteJournal(str(path)),
        clock=clock,
        run_as_submitter=False,
        **kw,
    )  # type: ignore[arg-type]
    c.recover()
    for node in ("n001", "n002"):
        c.register({"node": node, "boot_id": f"b-{node}", "runs": []})
    return c


def _spec(user: str = "alice", **kw: object) -> JobSpec:
    return JobSpec(user=user, gpus_per_task=4, command=("true",), workdir="/tmp", **kw)  # type: ignore[arg-type]


def _tick(c: Controller, clock: FakeClock, ms: int = 1) -> None:
    clock.advance(ms)
    c.step()


def _end(c: Controller, job_id: int, code: int = 0) -> None:
    job = c.job(job_id)
    assert job.alloc is not None
    for i in job.alloc.nodes:
        node = c.cluster.nodes[i].name
        c.reports(node, [{"job_id": job_id, "run": job.run, "state": "exited", "exit_code": code}])


def test_the_epilog_is_time_in_completing_and_counts_against_eta(tmp_path: Path) -> None:
    clock = FakeClock(1_000_000)
    c = _controller(tmp_path / "db", clock, epilog_ms=2_000)
    [job_id] = c.submit([_spec()])[0]
    _tick(c, clock)
    assert c.job(job_id).state.value == "RUNNING"
    _tick(c, clock, 8_000)
    _end(c, job_id)
    _tick(c, clock)
    assert c.job(job_id).state.value == "COMPLETING"
    _tick(c, clock, 2_000)
    assert c.job(job_id).state.value == "COMPLETED"
    eta, theta = c.efficiency(60_000)
    assert eta == pytest.approx(8_001 / 10_001, rel=1e-3)
    assert theta == 0.0


def test_a_restarted_controller_knows_every_job_as_it_was(tmp_path: Path) -> None:
    clock = FakeClock(1_000_000)
    c = _controller(tmp_path / "db", clock)
    ids = [i for ids in c.submit([_spec(), _spec(), _spec(nodes_min=2, nodes_max=2)]) for i in ids]
    _tick(c, clock)
    _end(c, ids[0], code=3)
    _tick(c, clock, 10)
    before = {i: (c.job(i).state, c.job(i).run, c.job(i).exit_code) for i in ids}
    again = Controller(
        regular_cluster(2, 8, 2, prefix="n"),
        profile("phalanx"),
        SqliteJournal(str(tmp_path / "db")),
        clock=clock,
        run_as_submitter=False,
    )
    again.recover()
    assert {
        i: (again.job(i).state, again.job(i).run, again.job(i).exit_code) for i in ids
    } == before
    # Nothing is sent to agents until they say what they have.
    assert all(not a.outbox for a in again.fleet.agents.values())


def test_only_owners_and_administrators_cancel(tmp_path: Path) -> None:
    clock = FakeClock(1_000_000)
    c = _controller(tmp_path / "db", clock)
    [job_id] = c.submit([_spec("alice")])[0]
    with pytest.raises(NotAllowed):
        c.cancel(job_id, BOB)
    assert c.cancel(job_id, ALICE) == [job_id]
    [other] = c.submit([_spec("bob")])[0]
    assert c.cancel(other, ROOT) == [other]
    with pytest.raises(NotFound):
        c.cancel(999, ROOT)


def test_requests_that_can_never_run_are_refused_at_submission(tmp_path: Path) -> None:
    c = _controller(tmp_path / "db", FakeClock(0))
    with pytest.raises(SpecError, match="partition"):
        c.check(_spec(partition="nope"))
    with pytest.raises(SpecError, match="qos"):
        c.check(_spec(qos="gold"))
    with pytest.raises(SpecError, match="node configuration"):
        c.check(JobSpec(gpus_per_task=9, command=("true",)))
    c.check(_spec())  # fine
