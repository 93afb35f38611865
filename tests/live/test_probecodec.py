"""A task's restart policy and probes in the journal (round trip; rows from before they
existed still load) and in the launch command the agent gets."""

from __future__ import annotations

import json

from phalanx.domain.jobspec import JobSpec, TaskLaunch
from phalanx.domain.probes import Exec, HttpGet, Probe, Probes, TcpSocket
from phalanx.domain.time import SECOND
from phalanx.engine import Submit
from phalanx.live.codec import decode, encode, spec_from_dict, spec_to_dict
from phalanx.live.probecodec import probes_wire

PROBES = Probes(
    startup=Probe(Exec(("cat", "/tmp/ready")), failure_threshold=30, period=SECOND),
    liveness=Probe(TcpSocket(8080, "10.1.2.3"), initial_delay=5 * SECOND, timeout=2 * SECOND),
    readiness=Probe(
        HttpGet(8080, "/healthz", None, "HTTPS", (("X-A", "1"),)), success_threshold=2
    ),
    grace=3 * SECOND,
)


def one_task(**launch: object) -> JobSpec:
    return JobSpec(command=("serve",), tasks=(TaskLaunch(("serve",), **launch),))  # type: ignore[arg-type]


def test_restart_and_probes_round_trip_through_the_journal() -> None:
    spec = one_task(restart="Always", probes=PROBES)
    kind, body = encode(Submit(1, spec, "pod/uid"))
    back = decode(kind, body)
    assert isinstance(back, Submit) and back.spec == spec
    row = json.loads(body)["spec"]["tasks"][0]
    assert row["restart"] == "Always"
    assert row["probes"]["liveness"] == {
        "action": {"tcp_socket": {"port": 8080, "host": "10.1.2.3"}},
        "initial_delay": 5000,
        "timeout": 2000,
    }  # defaults stay implicit


def test_rows_from_before_probes_still_load() -> None:
    old = {"command": ["serve"], "tasks": [{"command": ["serve"], "output": "/l"}]}
    spec = spec_from_dict(old)
    assert spec.tasks[0].restart == "Never" and spec.tasks[0].probes is None
    assert spec_to_dict(spec) == old  # and a task without them writes no new keys


def test_the_agent_gets_seconds_and_its_own_address_as_default_host() -> None:
    wire = probes_wire(PROBES)
    assert wire.grace_s == 3.0
    assert wire.startup is not None and wire.startup.kind == "exec"
    assert (wire.startup.command, wire.startup.period_s, wire.startup.failure_threshold) == (
        ["cat", "/tmp/ready"],
        1.0,
        30,
    )
    assert wire.liveness is not None and wire.liveness.host == "10.1.2.3"
    assert (wire.liveness.initial_delay_s, wire.liveness.timeout_s) == (5.0, 2.0)
    assert wire.readiness is not None and wire.readiness.host == ""  # the agent's address
    assert (wire.readiness.scheme, wire.readiness.path, wire.readiness.headers) == (
        "HTTPS",
        "/healthz",
        [["X-A", "1"]],
    )


def test_the_launch_command_carries_them_to_the_agent() -> None:
    from phalanx.config.clusterspec import regular_cluster
    from phalanx.engine import Launch
    from phalanx.live.launches import launch_commands
    from phalanx.sched.capacity import Allocation

    cluster = regular_cluster(1, 8, 1)
    spec = one_task(restart="OnFailure", probes=PROBES)
    cmd = Launch(job_id=9, run=1, alloc=Allocation((0,), ((0,),), 0, 1, 0), spec=spec,
                 time_limit=60_000)  # fmt: skip
    [command] = launch_commands(cluster, cmd, "127.0.0.1", as_user=False).values()
    [task] = command.tasks
    assert task.restart == "OnFailure" and task.probes == probes_wire(PROBES)
    # a Slurm job's task neither restarts nor is probed
    plain = Launch(job_id=9, run=1, alloc=cmd.alloc, spec=JobSpec(command=("x",)),
                   time_limit=60_000)  # fmt: skip
    [command] = launch_commands(cluster, plain, "127.0.0.1", as_user=False).values()
    assert (command.tasks[0].restart, command.tasks[0].probes) == ("Never", None)
