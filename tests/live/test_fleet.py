"""The fleet: launches split per node, ends gathered over a gang, agents reconciled."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from phalanx.config.clusterspec import regular_cluster
from phalanx.domain.jobspec import JobSpec
from phalanx.engine import Event, Kill, Launch, LaunchFailed, Requeue, Resize, TasksExited
from phalanx.live.fleet import Fleet, master_port
from phalanx.live.journal import JournalError
from phalanx.protocol.agent import RunReport
from phalanx.sched.capacity import Allocation

CLUSTER = regular_cluster(3, 8, 2, prefix="n")


class Recorder:
    def __init__(self) -> None:
        self.events: list[Event] = []
        self.fail = False

    def __call__(self, event: Event) -> None:
        if self.fail:
            raise JournalError("full")
        self.events.append(event)


def _fleet() -> tuple[Fleet, Recorder]:
    reports = Recorder()
    fleet = Fleet(CLUSTER, reports, reports, run_as_submitter=False)
    for name in ("n001", "n002", "n003"):
        fleet.register(name, f"boot-{name}", "127.0.0.1", [], 0)
    return fleet, reports


def _launch(job_id: int = 7, run: int = 1, nodes: tuple[int, ...] = (0, 1)) -> Launch:
    spec = JobSpec(
        name="t",
        user="alice",
        nodes_min=len(nodes),
        nodes_max=len(nodes),
        tasks_per_node=2,
        gpus_per_task=1,
        command=("train", "--x"),
        workdir="/work",
        output="o-%j-%t.txt",
        environment=(("A", "1"),),
    )
    alloc = Allocation(nodes, tuple((0, 1, 2, 3) for _ in nodes), 0, 2, 0)
    return Launch(job_id, run, alloc, spec, 60_000)


def _ended(job_id: int, run: int, **kw: Any) -> RunReport:
    return RunReport(job_id=job_id, run=run, state="exited", **kw)


def _running(job_id: int, run: int = 1) -> RunReport:
    return RunReport(job_id=job_id, run=run, state="running")


def test_a_launch_becomes_one_command_per_node_with_each_tasks_environment() -> None:
    fleet, _ = _fleet()
    fleet.launch(_launch(), 0)
    [a] = fleet.registry.take("n001", 0, 1)
    [b] = fleet.registry.take("n002", 0, 1)
    assert fleet.registry.take("n003", 0, 1) == []
    assert (a.kind, a.job_id, a.run) == ("launch", 7, 1)
    ranks = [t.rank for t in a.tasks] + [t.rank for t in b.tasks]
    assert ranks == [0, 1, 2, 3]
    task = b.tasks[1]
    assert task.argv == ["train", "--x"] and task.cwd == "/work"
    assert task.stdout == "/work/o-7-3.txt" and task.stderr is None
    env = task.env
    assert env["A"] == "1" and env["SLURM_PROCID"] == "3" and env["SLURM_NODEID"] == "1"
    assert env["MASTER_PORT"] == str(master_port(7)) and env["CUDA_VISIBLE_DEVICES"] == "0,1,2,3"
    # The first node truncates the output; the others share the file and append.
    assert a.tasks[0].open_mode == "truncate" and task.open_mode == "append"


def test_commands_up_to_after_are_acknowledged_and_dropped() -> None:
    fleet, _ = _fleet()
    fleet.launch(_launch(1, nodes=(0,)), 0)
    fleet.launch(_launch(2, nodes=(0,)), 0)
    first, second = fleet.registry.take("n001", 0, 1)
    assert fleet.registry.take("n001", first.seq, 2) == [second]
    assert fleet.registry.take("n001", second.seq, 3) == []


def test_a_gang_ends_when_every_node_has_reported_with_the_highest_code() -> None:
    fleet, reports = _fleet()
    fleet.launch(_launch(), 0)
    assert fleet.reports("n001", [_ended(7, 1, exit_code=3)], 10) == []  # not yet journaled
    assert reports.events == []
    assert fleet.reports("n002", [_ended(7, 1, exit_code=1, signal=0)], 12) == [(7, 1)]
    assert reports.events == [TasksExited(12, 7, 1, 3, 0)]
    # A report that comes again (the agent did not hear the answer) is acknowledged again.
    assert fleet.reports("n001", [_ended(7, 1, exit_code=3)], 13) == [(7, 1)]
    assert len(reports.events) == 1


def test_a_failed_start_on_one_node_kills_the_rest_and_fails_the_launch() -> None:
    fleet, reports = _fleet()
    fleet.launch(_launch(), 0)
    fleet.registry.take("n002", 0, 1)
    fleet.reports("n001", [RunReport(job_id=7, run=1, state="failed", reason="no such file")], 5)
    kill = fleet.registry.take("n002", 1, 6)
    assert [c.kind for c in kill] == ["kill"]
    fleet.reports("n002", [_ended(7, 1, signal=9)], 7)
    assert reports.events == [LaunchFailed(7, 7, 1, "no such file")]


def test_an_end_that_cannot_be_journaled_is_kept_for_the_next_report() -> None:
    fleet, reports = _fleet()
    fleet.launch(_launch(nodes=(0,)), 0)
    reports.fail = True
    with pytest.raises(JournalError):
        fleet.reports("n001", [_ended(7, 1)], 5)
    reports.fail = False
    assert fleet.reports("n001", [_ended(7, 1)], 6) == [(7, 1)]
    assert reports.events == [TasksExited(6, 7, 1, 0, 0)]


def test_after_a_restart_agents_get_only_the_launches_they_never_took() -> None:
    reports = Recorder()
    fleet = Fleet(CLUSTER, reports, reports, run_as_submitter=False)
    fleet.replaying = True  # the journal's replay repeats launches and kills
    fleet.launch(_launch(1, nodes=(0,)), 0)  # still running on n001
    fleet.launch(_launch(2, nodes=(0,)), 0)  # never reached n001
    fleet.launch(_launch(3, nodes=(0,)), 0)  # ended while the controller was down
    fleet.launch(_launch(4, nodes=(1,)), 0)  # running on n002, to be killed
    fleet.kill(Kill(4, 1), 0)
    fleet.finish_replay()
    assert fleet.registry.take("n001", 0, 1) == [] and fleet.registry.take("n002", 0, 1) == []
    acked = fleet.register(
        "n001",
        "b1",
        "127.0.0.1",
        [
            _running(1),
            _ended(3, 1, exit_code=5),
            _running(99),  # unknown: already over here
        ],
        10,
    )
    assert sorted(acked) == [(3, 1), (99, 1)]
    sent = fleet.registry.take("n001", 0, 11)
    assert [(c.kind, c.job_id) for c in sent] == [("launch", 2), ("kill", 99)]
    assert reports.events == [TasksExited(10, 3, 1, 5, 0)]
    fleet.register("n002", "b2", "127.0.0.1", [_running(4)], 12)
    assert [(c.kind, c.job_id) for c in fleet.registry.take("n002", 0, 13)] == [("kill", 4)]


def test_an_agent_that_restarted_lost_its_runs() -> None:
    fleet, reports = _fleet()
    fleet.launch(_launch(nodes=(0,)), 0)
    fleet.registry.take("n001", 0, 1)  # delivered to boot-n001
    acked = fleet.register("n001", "another-boot", "127.0.0.1", [], 20, epoch=2)
    assert acked == [(7, 1)]
    # As on a node failure: requeued (it may be), then its end, after the requeue.
    assert reports.events == [Requeue(20, 7, "root"), TasksExited(21, 7, 1, 0, 9)]
    assert fleet.registry.take("n001", 0, 21) == []  # not started a second time


def test_a_lost_run_that_may_not_be_requeued_is_killed_on_its_other_nodes() -> None:
    fleet, reports = _fleet()
    launch = _launch()
    fleet.launch(launch.replace(spec=dataclasses.replace(launch.spec, requeue=False)), 0)
    fleet.registry.take("n001", 0, 1)
    [first] = fleet.registry.take("n002", 0, 1)
    fleet.register("n001", "another-boot", "127.0.0.1", [], 20, epoch=2)
    assert reports.events == []  # n002 still runs its part
    assert [c.kind for c in fleet.registry.take("n002", first.seq, 21)] == ["kill"]
    fleet.reports("n002", [_ended(7, 1, signal=9)], 22)
    assert reports.events == [TasksExited(22, 7, 1, 0, 9)]


def test_commands_carry_the_epoch_of_the_incarnation_they_are_for() -> None:
    fleet, _ = _fleet()
    fleet.register("n001", "boot-n001", "127.0.0.1", [], 1, epoch=4)
    fleet.launch(_launch(nodes=(0,)), 2)
    assert [c.epoch for c in fleet.registry.take("n001", 0, 3)] == [4]


def test_a_new_incarnation_gets_only_launches_the_old_one_never_took() -> None:
    fleet, reports = _fleet()
    fleet.launch(_launch(nodes=(0,)), 0)  # queued for boot-n001, never taken
    fleet.register("n001", "another-boot", "127.0.0.1", [], 5, epoch=2)
    [launch] = fleet.registry.take("n001", 0, 6)
    assert (launch.kind, launch.job_id, launch.epoch) == ("launch", 7, 2)
    assert reports.events == []


def test_after_a_controller_restart_a_new_incarnation_never_gets_what_the_old_may_run() -> None:
    reports = Recorder()
    fleet = Fleet(CLUSTER, reports, reports, run_as_submitter=False)
    fleet.registry.holder("n001", 3, "old-boot")  # from the epoch store: not heard from since
    fleet.replaying = True
    fleet.launch(_launch(nodes=(0,)), 0)
    fleet.finish_replay()
    fleet.register("n001", "new-boot", "127.0.0.1", [], 10, epoch=4)
    assert fleet.registry.take("n001", 0, 11) == []
    assert reports.events == [Requeue(10, 7, "root"), TasksExited(11, 7, 1, 0, 9)]


def test_the_inventory_ends_the_runs_the_agent_took_and_has_not() -> None:
    fleet, reports = _fleet()
    fleet.launch(_launch(1, nodes=(0,)), 0)
    fleet.launch(_launch(2, nodes=(0,)), 0)
    first, second = fleet.registry.take("n001", 0, 1)
    fleet.inventory("n001", [(1, 1)], first.seq, 5)  # the second not carried out yet
    assert reports.events == []
    fleet.inventory("n001", [(1, 1), (2, 1)], second.seq, 6)
    assert reports.events == []
    fleet.inventory("n001", [(1, 1)], second.seq, 7)  # job 2 is gone
    assert reports.events == [Requeue(7, 2, "root"), TasksExited(8, 2, 1, 0, 9)]
    fleet.reports("n001", [_ended(1, 1)], 9)
    fleet.inventory("n001", [], second.seq, 10)  # an end already told is no loss
    assert [type(e).__name__ for e in reports.events] == ["Requeue", "TasksExited", "TasksExited"]


def test_signals_go_to_every_node_still_running_the_run() -> None:
    from phalanx.engine import Signal

    fleet, _ = _fleet()
    fleet.launch(_launch(), 0)
    fleet.reports("n001", [_ended(7, 1)], 3)
    fleet.signal(Signal(7, 1, 10), 4)
    assert [c.kind for c in fleet.registry.take("n001", 1, 5)] == []
    assert [(c.kind, c.signal) for c in fleet.registry.take("n002", 1, 5)] == [("signal", 10)]


def test_a_lost_node_ends_its_part_of_every_run() -> None:
    fleet, reports = _fleet()
    fleet.launch(_launch(), 0)
    fleet.reports("n002", [_ended(7, 1)], 3)
    fleet.node_lost("n001", 9)
    assert reports.events == [TasksExited(9, 7, 1, 0, 9)]
    assert not fleet.registry.agents["n001"].registered


def test_runs_that_ended_before_the_crash_are_forgotten_after_the_replay() -> None:
    reports = Recorder()
    fleet = Fleet(CLUSTER, reports, reports, run_as_submitter=False)
    fleet.replaying = True
    fleet.launch(_launch(1, nodes=(0,)), 0)  # ended before the crash (journaled)
    fleet.launch(_launch(2, nodes=(0,)), 0)  # still running
    fleet.finish_replay(running=[(2, 1)])
    fleet.register("n001", "b1", "127.0.0.1", [], 10)
    assert [(c.kind, c.job_id) for c in fleet.registry.take("n001", 0, 11)] == [("launch", 2)]
    fleet.inventory("n001", [(2, 1)], 99, 12)
    assert reports.events == []  # nothing lost: job 1 is not this fleet's any more


def test_a_launch_resent_after_a_reregistration_counts_by_its_new_seq() -> None:
    fleet, reports = _fleet()
    fleet.launch(_launch(1, nodes=(0,)), 0)
    [lost_in_flight] = fleet.registry.take("n001", 0, 1)  # the answer never reached the agent
    fleet.register("n001", "boot-n001", "127.0.0.1", [], 2)  # the same incarnation, again
    fleet.launch(_launch(2, nodes=(0,)), 3)
    resent, other = fleet.registry.take("n001", 0, 4)
    assert (resent.job_id, other.job_id) == (1, 2) and resent.seq > lost_in_flight.seq
    # Carried out up to before the resent launch: job 1 is not missing yet.
    fleet.inventory("n001", [], lost_in_flight.seq, 5)
    assert reports.events == []


def test_an_elastic_run_grows_and_shrinks_node_by_node_and_goes_on() -> None:
    fleet, reports = _fleet()
    launch = _launch(nodes=(0,))
    launch = launch.replace(spec=dataclasses.replace(launch.spec, nodes_max=3, elastic=True))
    fleet.launch(launch, 0)
    fleet.registry.take("n001", 0, 1)
    grown = Allocation((0, 2), ((0, 1, 2, 3), (0, 1, 2, 3)), 0, 2, 0)
    fleet.resize(Resize(7, 1, grown, (2,), (), launch.spec, 60_000), 2)
    assert fleet.registry.take("n002", 0, 3) == []
    [new] = fleet.registry.take("n003", 0, 3)
    assert new.kind == "launch" and [t.rank for t in new.tasks] == [2, 3]
    assert new.tasks[0].env["SLURM_NNODES"] == "2" and new.tasks[0].env["SLURM_NODEID"] == "1"
    # Shrunk off n003: SIGTERM there, and its end neither ends the run nor counts.
    shrunk = Allocation((0,), ((0, 1, 2, 3),), grown.milli, grown.cpus, grown.mem_mb)
    fleet.resize(Resize(7, 1, shrunk, (), (2,), launch.spec, 60_000), 4)
    [term] = fleet.registry.take("n003", new.seq, 5)
    assert (term.kind, term.signal) == ("signal", 15)
    assert fleet.reports("n003", [_ended(7, 1, exit_code=1, signal=9)], 6) == [(7, 1)]
    assert reports.events == []
    fleet.resize(Resize(7, 1, shrunk, (), (2,), launch.spec, 60_000, kill=True), 7)
    assert fleet.registry.take("n003", term.seq, 8) == []  # its end is in: nothing to kill
    assert fleet.reports("n001", [_ended(7, 1)], 9) == [(7, 1)]
    [end] = reports.events
    assert isinstance(end, TasksExited) and (end.exit_code, end.signal) == (0, 0)


def test_the_removed_node_of_an_elastic_run_is_killed_after_its_grace() -> None:
    fleet, _ = _fleet()
    launch = _launch(nodes=(0, 1))
    spec = dataclasses.replace(launch.spec, nodes_min=1, elastic=True)
    fleet.launch(launch.replace(spec=spec), 0)
    [started] = fleet.registry.take("n002", 0, 1)
    held = launch.alloc
    alloc = Allocation((0,), ((0, 1, 2, 3),), held.milli, held.cpus, held.mem_mb)
    fleet.resize(Resize(7, 1, alloc, (), (1,), spec, 60_000), 2)
    fleet.resize(Resize(7, 1, alloc, (), (1,), spec, 60_000, kill=True), 3)
    kinds = [c.kind for c in fleet.registry.take("n002", started.seq, 4)]
    assert kinds == ["signal", "kill"]
    assert [c.kind for c in fleet.registry.take("n001", 0, 4)] == ["launch"]
