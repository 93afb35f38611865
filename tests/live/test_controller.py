"""The controller without sockets: a fake clock, a journal, agents played by the test."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from phalanx.config.clusterspec import regular_cluster
from phalanx.domain.caller import Caller
from phalanx.domain.jobspec import JobSpec
from phalanx.domain.jobstep import StepSpec
from phalanx.domain.rusage import RunUsage
from phalanx.domain.time import HOUR
from phalanx.errors import Conflict, NotAllowed, NotFound, SpecError
from phalanx.live.controller import Controller
from phalanx.live.fleet import step_run
from phalanx.live.journal import SqliteJournal
from phalanx.live.store import Store
from phalanx.policies.catalog import profile
from phalanx.protocol.agent import AgentHello, AgentReports, RunReport, Usage
from phalanx.runtime import FakeClock

ALICE = Caller(1000, "alice")
BOB = Caller(1001, "bob")
ROOT = Caller(0, "root", admin=True)


def _controller(where: Path | Callable[[], Store], clock: FakeClock, **kw: object) -> Controller:
    """A controller on the SQLite file ``where`` or a store ``where()`` opens, recovered,
    with both nodes' agents registered."""
    journal = SqliteJournal(str(where)) if isinstance(where, Path) else where().journal
    c = Controller(
        regular_cluster(2, 8, 2, prefix="n"),
        profile("phalanx"),
        journal,
        clock=clock,
        run_as_submitter=False,
        **kw,
    )  # type: ignore[arg-type]
    c.recover()
    for node in ("n001", "n002"):
        c.register(hello(node))
    return c


def hello(node: str, boot_id: str = "", **kw: Any) -> AgentHello:
    """A registration of ``node``'s agent (boot id ``b-NODE`` unless given)."""
    return AgentHello(
        node=node, boot_id=boot_id or f"b-{node}", cpus=64, memory_mb=1024, gpus=8, **kw
    )


def told(c: Controller, node: str, *reports: RunReport, **kw: Any) -> AgentReports:
    """Reports from ``node``'s registered agent."""
    agent = c.fleet.registry.agents[node]
    return AgentReports(boot_id=agent.boot_id, epoch=agent.epoch, reports=list(reports), **kw)


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
        c.reports(
            node,
            told(c, node, RunReport(job_id=job_id, run=job.run, state="exited", exit_code=code)),
        )


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


def test_a_restarted_controller_knows_every_job_as_it_was(stores: Callable[[], Store]) -> None:
    clock = FakeClock(1_000_000)
    c = _controller(stores, clock)
    ids = [i for ids in c.submit([_spec(), _spec(), _spec(nodes_min=2, nodes_max=2)]) for i in ids]
    _tick(c, clock)
    _end(c, ids[0], code=3)
    _tick(c, clock, 10)
    before = {i: (c.job(i).state, c.job(i).run, c.job(i).exit_code) for i in ids}
    again = Controller(
        regular_cluster(2, 8, 2, prefix="n"),
        profile("phalanx"),
        stores().journal,
        clock=clock,
        run_as_submitter=False,
    )
    again.recover()
    assert {
        i: (again.job(i).state, again.job(i).run, again.job(i).exit_code) for i in ids
    } == before
    # Nothing is sent to agents until they say what they have.
    assert all(not a.outbox for a in again.fleet.registry.agents.values())


def _exited(c: Controller, node: str, job_id: int, run: int, *used: int) -> None:
    """The agent of ``node`` reports the run ended, having used ``user_ms, system_ms,
    max_rss_kb``."""
    usage = Usage(**dict(zip(("user_ms", "system_ms", "max_rss_kb"), used, strict=True)))
    c.reports(node, told(c, node, RunReport(job_id=job_id, run=run, state="exited", usage=usage)))


def test_measured_usage_is_kept_with_the_end_and_survives_a_restart(
    stores: Callable[[], Store],
) -> None:
    clock = FakeClock(1_000_000)
    c = _controller(stores, clock)
    [job_id] = c.submit([_spec(nodes_min=2, nodes_max=2)])[0]
    _tick(c, clock)
    job = c.job(job_id)
    step = c.start_step(job_id, ALICE, StepSpec(command=("true",), nodes=1, ntasks=1))
    _exited(c, "n001", job_id, step_run(job.run, step.step), 200, 10, 4_096)
    assert step.usage == RunUsage(200, 10, 4_096)
    # A gang over two nodes: CPU adds up, the peak is one task's.
    _exited(c, "n001", job_id, job.run, 300, 20, 51_200)
    _exited(c, "n002", job_id, job.run, 100, 5, 20_000)
    _tick(c, clock, 10)
    job = c.job(job_id)
    assert (job.usage, job.steps_usage) == (RunUsage(400, 25, 51_200), RunUsage(200, 10, 4_096))
    again = Controller(
        regular_cluster(2, 8, 2, prefix="n"),
        profile("phalanx"),
        stores().journal,
        clock=clock,
        run_as_submitter=False,
    )
    again.recover()
    replayed = again.job(job_id)
    assert (replayed.usage, replayed.steps_usage) == (job.usage, job.steps_usage)


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
    with pytest.raises(SpecError, match="node configuration"):
        c.check(JobSpec(gpus_per_task=9, command=("true",)))
    c.check(_spec())  # fine
    # As Slurm without EnforcePartLimits and AccountingStorageEnforce=qos: queued.
    c.check(_spec(qos="gold"))
    c.check(_spec(nodes_min=3, nodes_max=3))


def test_an_unknown_qos_runs_as_normal_and_keeps_its_name(tmp_path: Path) -> None:
    clock = FakeClock(1_000_000)
    c = _controller(tmp_path / "db", clock)
    spec = _spec(qos="gold")
    c.check(spec)
    [job_id] = c.submit([spec])[0]
    _tick(c, clock)
    job = c.job(job_id)
    assert job.state.value == "RUNNING" and job.spec.qos == "gold"
    assert job.factors["qos"] == 0.0  # normal's, in this cluster priority 0


def test_a_job_over_its_partition_waits_for_partition_config(tmp_path: Path) -> None:
    clock = FakeClock(1_000_000)
    c = _controller(tmp_path / "db", clock)
    [big] = c.submit([_spec(nodes_min=3, nodes_max=3)])[0]
    [small] = c.submit([_spec()])[0]
    _tick(c, clock)
    assert c.job(big).state.value == "PENDING" and c.job(big).reason == "PartitionConfig"
    assert c.job(small).state.value == "RUNNING"


def test_an_enforcing_cluster_refuses_unknown_qos_and_partition_limits(tmp_path: Path) -> None:
    cluster = dataclasses.replace(
        regular_cluster(2, 8, 2, prefix="n"), enforce_part_limits=True, enforce_qos=True
    )
    part = dataclasses.replace(cluster.partitions["gpu"], max_time=HOUR)
    cluster = dataclasses.replace(cluster, partitions={"gpu": part})
    c = Controller(
        cluster,
        profile("phalanx"),
        SqliteJournal(str(tmp_path / "db")),
        clock=FakeClock(0),
        run_as_submitter=False,
    )
    for spec, field in [
        (_spec(qos="gold"), "qos"),
        (_spec(nodes_min=3, nodes_max=3), "nodes"),
        (_spec(time_limit=2 * HOUR), "time"),
    ]:
        with pytest.raises(SpecError) as info:
            c.check(spec)
        assert info.value.field == field
    c.check(_spec(qos="normal", nodes_min=2, nodes_max=2, time_limit=HOUR))


def test_a_submission_retried_with_its_idempotency_key_is_not_doubled(tmp_path: Path) -> None:
    clock = FakeClock(1_000)
    c = _controller(tmp_path / "db", clock)
    first = c.submit([_spec()], key="req-1")
    assert c.submit([_spec()], key="req-1") == first  # the retry: same ids, no new job
    other = c.submit([_spec(user="bob")], key="req-1")  # another user's key is another key
    c.loop.settle()
    assert other != first and len(c.engine.jobs) == 2
    with pytest.raises(Conflict):
        c.submit([_spec(), _spec()], key="req-1")  # a different request under a used key
    _tick(c, clock, 10)
    # A controller that replays the journal (a restart, a standby taking over) knows the key.
    again = _controller(tmp_path / "db", clock)  # it replays the journal
    assert again.submit([_spec()], key="req-1") == first
    assert len(again.engine.jobs) == 2


def test_requests_each_with_its_key_share_one_journal_write(tmp_path: Path) -> None:
    clock = FakeClock(1_000)
    c = _controller(tmp_path / "db", clock)
    first = c.submit([_spec()], key="pod-a")[0]
    writes: list[int] = []
    journal = c.loop.journal
    real = journal.write
    journal.write = lambda events: (writes.append(len(events)), real(events))[1]  # type: ignore[method-assign]
    got = c.submit_each(
        [(_spec(), "pod-a"), (_spec(), "pod-b"), (_spec(user="bob"), "pod-a"), (_spec(), "pod-b")]
    )
    assert writes == [2]  # one write: pod-b and bob's pod-a are new; alice's pod-a is known
    assert got[0] == first and got[1] == got[3]  # a key twice: submitted once, same ids
    assert len({tuple(ids) for ids in got}) == 3
    c.loop.settle()
    assert len(c.engine.jobs) == 3
    assert c.submit_each([(_spec(), "pod-b"), (_spec(), "")])[0] == got[1]
    assert writes == [2, 1]  # only the request without a key is new
    _tick(c, clock, 10)
    again = _controller(tmp_path / "db", clock)  # a restart replays the journal: keys known
    assert again.submit_each([(_spec(user="bob"), "pod-a")]) == [got[2]]
    assert len(again.engine.jobs) == 4


def test_sacctmgr_changes_are_journaled_and_survive_a_restart(
    stores: Callable[[], Store],
) -> None:
    clock = FakeClock(1_000_000)
    c = _controller(stores, clock)
    with pytest.raises(NotAllowed):
        c.change_accounting(ALICE, "add", "account", ["team"], [], [])
    lines = c.change_accounting(
        ROOT, "add", "account", ["team"], [], [("GrpTRES", "gres/gpu=8"), ("MaxJobs", "5")]
    )
    assert lines[:2] == [" Adding Account(s)", "  team"]
    with pytest.raises(SpecError, match="Nothing modified"):
        c.change_accounting(ROOT, "modify", "account", ["nosuch"], [], [("MaxJobs", "1")])
    c.change_accounting(ROOT, "add", "user", ["alice"], [("account", "team")], [])
    ids = [c.submit([_spec(account="team")])[0][0] for _ in range(3)]  # 4 GPUs each
    _tick(c, clock)
    assert [c.job(i).reason for i in ids[2:]] == ["AssocGrpGRES"]
    again = Controller(
        regular_cluster(2, 8, 2, prefix="n"),
        profile("phalanx"),
        stores().journal,
        clock=clock,
        run_as_submitter=False,
    )
    again.recover()
    limits = again.cluster.associations.by_key[("team", "")].limits
    assert (limits.grp_tres, limits.max_jobs) == ((("gres/gpu", 8),), 5)
    assert ("team", "alice") in again.cluster.associations.by_key
    assert again.job(ids[2]).reason == "AssocGrpGRES"
