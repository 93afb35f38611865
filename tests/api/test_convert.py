"""Between the wire and the domain: JobRequest -> JobSpec, and jobs -> JobInfo / AcctRecord."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from phalanx.api.convert import (
    JOB_FIELDS,
    acct_record,
    job_info,
    job_table,
    share_info,
    step_spec,
    to_spec,
)
from phalanx.api.wire import AcctRecord, JobInfo, JobRequest, StepRequest
from phalanx.config.queues import queues_from_yaml
from phalanx.domain.caller import Caller
from phalanx.domain.fairshare import ShareRow
from phalanx.domain.jobspec import SIGNALS, ArraySpec, Dependency, DepKind, JobSpec
from phalanx.domain.jobstep import StepSpec
from phalanx.domain.time import HOUR, MINUTE, SECOND
from phalanx.errors import InputError, SpecError
from phalanx.testing import EngineDriver, make_job, small_cluster

ALICE = Caller(1000, "alice")


def _req(**fields: Any) -> JobRequest:
    fields.setdefault("command", ["/usr/bin/python3", "train.py"])
    return JobRequest(**fields)


def test_every_request_field_reaches_the_spec() -> None:
    req = JobRequest(
        command=["/opt/bin/train", "--epochs", "3"],
        name="llm",
        workdir="/scratch/alice",
        nodes="2-4",
        ntasks_per_node=8,
        gpus_per_task=1,
        gpu_model="H100",
        cpus_per_task=6,
        mem="500G",
        partition="gpu",
        account="physics",
        qos="high",
        time="1-02:03:04",
        output="out-%j",
        error="err-%j",
        open_mode="append",
        environment={"B": "2", "A": "1"},
        array="0-6:2%2",
        dependency="afterok:10:11,singleton",
        signal="B:USR1@90",
        requeue=False,
        hold=True,
        exclusive=True,
        elastic=True,
        constraint=["ib", "nvlink"],
        switches=1,
        switches_wait="10",
        begin=1_700_000_000_000,
        nice=7,
        comment="hello",
        checkpoint_interval="0:30:00",
        checkpoint_on_signal=True,
    )
    assert to_spec(req, ALICE) == JobSpec(
        name="llm",
        user="alice",
        account="physics",
        partition="gpu",
        qos="high",
        nodes_min=2,
        nodes_max=4,
        tasks_per_node=8,
        gpus_per_task=1,
        cpus_per_task=6,
        mem_per_node_mb=500 * 1024,
        gpu_models=frozenset({"H100"}),
        features=frozenset({"ib", "nvlink"}),
        time_limit=26 * HOUR + 3 * MINUTE + 4 * SECOND,
        switches=1,
        switches_wait=10 * MINUTE,
        exclusive=True,
        elastic=True,
        requeue=False,
        checkpoint_interval=30 * MINUTE,
        checkpoint_on_signal=True,
        signal=SIGNALS["USR1"],
        signal_lead=90 * SECOND,
        dependencies=(Dependency(DepKind.AFTEROK, (10, 11)), Dependency(DepKind.SINGLETON)),
        array=ArraySpec((0, 2, 4, 6), 2),
        begin=1_700_000_000_000,
        hold=True,
        nice=7,
        comment="hello",
        command=("/opt/bin/train", "--epochs", "3"),
        workdir="/scratch/alice",
        output="out-%j",
        error="err-%j",
        environment=(("A", "1"), ("B", "2")),
        extra=(("open_mode", "append"),),
    )


def test_defaults_of_a_minimal_request() -> None:
    spec = to_spec(_req(), ALICE, home="/home/alice")
    assert spec.name == "python3"  # the basename of argv[0]
    assert spec.user == "alice"
    assert spec.account == "root"
    assert spec.partition is None
    assert spec.qos == "normal"
    assert (spec.nodes_min, spec.nodes_max, spec.tasks_per_node) == (1, 1, 1)
    assert spec.gpus_per_task == 0 and spec.mem_per_node_mb == 0
    assert spec.gpu_models == frozenset() and spec.features == frozenset()
    assert spec.time_limit is None  # the partition's default applies
    assert (spec.signal, spec.signal_lead) == (SIGNALS["TERM"], 0)
    assert spec.dependencies == () and spec.array is None
    assert spec.workdir == "/home/alice"  # no workdir: the caller's home
    assert spec.checkpoint_interval is None and spec.switches_wait == 0


def test_without_workdir_or_home_the_root_directory() -> None:
    assert to_spec(_req(), ALICE).workdir == "/"


def test_truncate_mode_leaves_no_extra() -> None:
    assert to_spec(_req(open_mode="truncate"), ALICE).extra == ()


def test_signal_without_lead_gets_slurms_sixty_seconds() -> None:
    spec = to_spec(_req(signal="USR2"), ALICE)
    assert (spec.signal, spec.signal_lead) == (SIGNALS["USR2"], 60 * SECOND)


def test_the_caller_is_the_user_whatever_the_request() -> None:
    root = Caller(0, "root", admin=True)
    assert to_spec(_req(), root).user == "root"
    assert to_spec(_req(), Caller(42, "bob")).user == "bob"


def test_name_falls_back_to_job_for_an_argv0_without_basename() -> None:
    assert to_spec(_req(command=["/usr/bin/"]), ALICE).name == "job"


@pytest.mark.parametrize(
    ("fields", "field"),
    [
        ({"time": "soon"}, "time"),
        ({"time": "0"}, "time"),
        ({"mem": "lots"}, "mem"),
        ({"mem": "4X"}, "mem"),
        ({"array": "5-1"}, "array"),
        ({"array": "0-5000"}, "array"),
        ({"dependency": "afterok:1?afterok:2"}, "dependency"),
        ({"dependency": "whenever:1"}, "dependency"),
        ({"signal": "NOPE"}, "signal"),
        ({"signal": "USR1@soon"}, "signal"),
        ({"nodes": "0"}, "nodes"),
        ({"nodes": "4-2"}, "nodes"),
        ({"nodes": "many"}, "nodes"),
        ({"workdir": "relative/dir"}, "workdir"),
        ({"workdir": "."}, "workdir"),
        ({"switches_wait": "later"}, "switches"),
        ({"checkpoint_interval": "often"}, "checkpoint_interval"),
    ],
)
def test_bad_values_name_the_field(fields: dict[str, Any], field: str) -> None:
    with pytest.raises(SpecError) as info:
        to_spec(_req(**fields), ALICE, home="/home/alice")
    assert info.value.field == field
    assert f"'{field}'" in str(info.value)


def test_relative_home_is_refused_too() -> None:
    with pytest.raises(SpecError) as info:
        to_spec(_req(), ALICE, home="home/alice")
    assert info.value.field == "workdir"


# ---------------------------------------------------------------------------- rows


def _driver() -> tuple[EngineDriver, int, int, int]:
    """Two 8-GPU nodes: a 2-node job runs 10 min; a 4-GPU job waits for it; one is held."""
    d = EngineDriver(small_cluster(nodes=2, gpus=8, per_leaf=2), "slurm")
    [big] = d.submit(
        make_job(
            gpus=8,
            nodes=2,
            name="big",
            user="alice",
            command=("/bin/train",),
            workdir="/w",
            comment="c",
            cpus_per_task=4,
        ),
        runtime=10 * MINUTE,
    )
    [small] = d.submit(make_job(gpus=4, name="small", user="bob", cpus_per_task=3), MINUTE)
    [held] = d.submit(make_job(gpus=1, name="held", hold=True))
    d.settle()
    return d, big, small, held


def test_job_info_of_a_running_job() -> None:
    d, big, _, _ = _driver()
    info = job_info(d.job(big), d.engine.cluster)
    JobInfo.model_validate(info)  # the plain dict is a valid JobInfo
    assert info["job_id"] == big
    assert info["name"] == "big" and info["user"] == "alice"
    assert info["account"] == "root" and info["partition"] == "gpu" and info["qos"] == "normal"
    assert info["state"] == "RUNNING" and info["reason"] == "None"
    assert info["nodes_requested"] == 2 and info["tasks"] == 2
    assert info["gpus"] == 16.0
    assert info["cpus"] == 2 * 4
    assert info["time_limit_ms"] == HOUR
    assert info["submit"] == 0 and info["start"] == 0 and info["end"] is None
    assert info["expected_start"] is None
    assert info["nodelist"] == "gpu[001-002]"
    assert info["command"] == ["/bin/train"] and info["workdir"] == "/w"
    assert info["comment"] == "c"
    assert info["array_job_id"] is None and info["array_task_id"] is None


def test_job_info_of_a_pending_job() -> None:
    d, _, small, held = _driver()
    info = job_info(d.job(small), d.engine.cluster)
    JobInfo.model_validate(info)
    assert info["state"] == "PENDING" and info["reason"] == "Resources"
    assert info["start"] is None and info["end"] is None
    assert info["expected_start"] == HOUR  # when the big job's limit ends
    assert info["nodelist"] == ""
    assert info["gpus"] == 4.0 and info["cpus"] == 3 and info["tasks"] == 1
    assert job_info(d.job(held), d.engine.cluster)["reason"] == "JobHeldUser"


def test_job_info_of_a_job_short_of_quota_says_why_in_quota_terms() -> None:
    """The reason stays Slurm's (squeue's %R); the message goes in ``reason_message``, only
    while the job is pending."""
    cluster = dataclasses.replace(
        small_cluster(nodes=1, gpus=8),
        queues=queues_from_yaml(
            "apiVersion: kueue.x-k8s.io/v1beta1\nkind: ResourceFlavor\nmetadata: {name: f}\n"
            "---\napiVersion: kueue.x-k8s.io/v1beta1\nkind: ClusterQueue\n"
            "metadata: {name: team-a}\nspec:\n  namespaceSelector: {}\n  resourceGroups:\n"
            "  - coveredResources: [nvidia.com/gpu, cpu, memory]\n    flavors:\n"
            "    - name: f\n      resources: [{name: nvidia.com/gpu, nominalQuota: 4},\n"
            "        {name: cpu, nominalQuota: 64}, {name: memory, nominalQuota: 1Ti}]\n"
            "---\napiVersion: kueue.x-k8s.io/v1beta1\nkind: LocalQueue\n"
            "metadata: {name: default, namespace: team-a}\nspec: {clusterQueue: team-a}\n"
        ),
    )
    d = EngineDriver(cluster, "phalanx")
    [first] = d.submit(make_job(gpus=4, account="team-a"))
    [second] = d.submit(make_job(gpus=4, account="team-a"))
    d.settle()
    info = job_info(d.job(second), d.engine.cluster)
    JobInfo.model_validate(info)
    assert info["reason"] == "AssocGrpGRES"
    assert info["reason_message"].startswith("couldn't assign flavors to ClusterQueue team-a")
    assert "uses 4 GPUs of its nominal 4 GPUs" in info["reason_message"]
    assert job_info(d.job(first), d.engine.cluster)["reason_message"] == ""
    d.finish(first)
    assert d.state(second).value == "RUNNING"
    assert job_info(d.job(second), d.engine.cluster)["reason_message"] == ""
    assert d.job(second).reason_message == ""  # not kept from the pass it waited in


def test_job_info_of_a_finished_job() -> None:
    d, big, small, _ = _driver()
    d.advance(HOUR)
    info = job_info(d.job(big), d.engine.cluster)
    JobInfo.model_validate(info)
    assert info["state"] == "COMPLETED" and info["reason"] == "None"
    assert info["start"] == 0 and info["end"] == 10 * MINUTE
    assert info["nodelist"] == "gpu[001-002]"
    assert info["exit_code"] == 0 and info["signal"] == 0
    done = job_info(d.job(small), d.engine.cluster)
    assert done["start"] == 10 * MINUTE and done["end"] == 11 * MINUTE


def test_job_info_of_a_cancelled_running_job_shows_the_signal() -> None:
    d, big, _, _ = _driver()
    d.advance(MINUTE)
    d.cancel(big, by="alice")
    d.advance(MINUTE + 30 * SECOND)  # SIGTERM, ignored by the fake job; SIGKILL at KillWait
    info = job_info(d.job(big), d.engine.cluster)
    assert info["state"] == "CANCELLED"
    assert info["signal"] == 9
    assert info["end"] == MINUTE + 30 * SECOND


def test_acct_record_has_exactly_the_wire_fields() -> None:
    d, big, small, held = _driver()
    d.advance(HOUR)
    d.cancel(held)
    cluster = d.engine.cluster
    for job_id in (big, small, held):
        record = acct_record(d.job(job_id), cluster)
        assert set(record) == set(AcctRecord.model_fields)
        AcctRecord.model_validate(record)
    big_record = acct_record(d.job(big), cluster)
    assert big_record["state"] == "COMPLETED"
    assert (big_record["start"], big_record["end"]) == (0, 10 * MINUTE)
    assert big_record["gpus"] == 16.0 and big_record["nodelist"] == "gpu[001-002]"
    held_record = acct_record(d.job(held), cluster)
    assert held_record["state"] == "CANCELLED"
    assert held_record["start"] is None and held_record["nodelist"] == ""
    assert held_record["end"] == HOUR


def test_job_info_of_array_tasks() -> None:
    d = EngineDriver(small_cluster(nodes=1, gpus=8, per_leaf=1), "slurm")
    ids = d.submit(make_job(gpus=1, array=ArraySpec((3, 5))))
    d.settle()
    infos = [job_info(d.job(i), d.engine.cluster) for i in ids]
    assert [i["array_task_id"] for i in infos] == [3, 5]
    assert {i["array_job_id"] for i in infos} == {ids[0]}


# ---------------------------------------------------------------------------- tables


def _varied() -> tuple[EngineDriver, list[int]]:
    """Jobs in many states and shapes: finished, cancelled while running, running, pending
    (resources, dependency, held), array tasks, with models, features and memory."""
    d = EngineDriver(small_cluster(nodes=2, gpus=8, per_leaf=2), "slurm")
    [done] = d.submit(make_job(gpus=2, name="done", command=("/bin/a", "b")), MINUTE)
    d.advance(2 * MINUTE)
    [killed] = d.submit(make_job(gpus=1, name="killed"), runtime=HOUR)
    d.settle()
    d.cancel(killed, by="user")
    [big] = d.submit(make_job(gpus=8, nodes=2, cpus_per_task=4, comment="c"), runtime=HOUR)
    [after] = d.submit(
        make_job(gpus=1, dependencies=(Dependency(DepKind.AFTEROK, (big,)),), time_limit=None)
    )
    [held] = d.submit(make_job(gpus=1, hold=True, mem_per_node_mb=4096, features=frozenset("ba")))
    tasks = d.submit(make_job(gpus=4, array=ArraySpec((0, 1, 2), throttle=1)))
    d.advance(4 * MINUTE)
    return d, [done, killed, big, after, held, *tasks]


def test_table_rows_hold_the_job_info_values() -> None:
    d, ids = _varied()
    cluster = d.engine.cluster
    assert tuple(JobInfo.model_fields) == JOB_FIELDS
    states = {job_info(d.job(i), cluster)["state"] for i in ids}
    assert {"COMPLETED", "CANCELLED", "RUNNING", "PENDING"} <= states
    jobs = [d.job(i) for i in ids]
    for fields in (
        JOB_FIELDS,
        ("state", "job_id"),
        ("nodelist",),
        ("job_id",),
        (),
        ("name", "user", "priority", "nodelist", "state", "start", "expected_start"),
    ):
        rows = job_table(jobs, fields, cluster)
        assert len(rows) == len(jobs)
        for job, row in zip(jobs, rows, strict=True):
            info = job_info(job, cluster)
            assert row == tuple(info[n] for n in fields)


def test_table_refuses_an_unknown_field() -> None:
    d, _ = _varied()
    with pytest.raises(InputError) as info:
        job_table([], ["job_id", "colour"], d.engine.cluster)
    assert info.value.field == "fields" and "colour" in str(info.value)


def test_a_step_request_keeps_every_field_and_leaves_the_rest_to_the_job() -> None:
    req = StepRequest(
        command=["a", "b"],
        ntasks=4,
        nodes=2,
        ntasks_per_node=2,
        environment={"X": "1"},
        workdir="/w",
        output="o-%t",
        error="e-%t",
    )
    assert step_spec(req) == StepSpec(
        command=("a", "b"),
        ntasks=4,
        nodes=2,
        ntasks_per_node=2,
        environment=(("X", "1"),),
        workdir="/w",
        output="o-%t",
        error="e-%t",
    )
    assert step_spec(StepRequest(command=["a"])) == StepSpec(command=("a",))
    # An empty environment is the job's, as srun without --export.
    assert step_spec(StepRequest(command=["a"], environment={})).environment is None


def test_a_share_row_as_sshare_reads_it() -> None:
    row = ShareRow("ml", "root", 3, 0.75, 12.5, 0.25, 0.8)
    assert share_info(row).model_dump() == {
        "account": "ml",
        "parent": "root",
        "raw_shares": 3,
        "norm_shares": 0.75,
        "raw_usage": 12.5,
        "effective_usage": 0.25,
        "fairshare": 0.8,
    }
