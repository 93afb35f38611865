"""``scontrol`` against Slurm's own output (``/work/shared/slurm/reference/out``), on a live
Phalanx with the reference's jobs, topology (four leaves of four nodes) and accounts.

Records are compared key by key: every line must carry the same keys in the same order and
the same values, except the values listed in ``VARIES`` (times, ids, the user, where jobs
landed, what Phalanx does not know or computes its own way), each with its reason.
"""

from __future__ import annotations

import os
import re
import shlex
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from slurm_cluster import YAML, reference, reference_scene, run, submit, wait_until

from phalanx.server.localcluster import LocalCluster
from phalanx.slurm import scontrol
from phalanx.slurm.shims import write_shims

CONFIG = (
    YAML
    + """topology:
  leaves:
    - {name: leaf0, nodes: "n[01-04]"}
    - {name: leaf1, nodes: "n[05-08]"}
    - {name: leaf2, nodes: "n[09-12]"}
    - {name: leaf3, nodes: "n[13-16]"}
  spines:
    - {name: spine, leaves: [leaf0, leaf1, leaf2, leaf3]}
accounts:
  - {name: research, parent: root}
"""
)

Scene = tuple[LocalCluster, dict[int, int], Path]

TIMES = {
    "RunTime",
    "SubmitTime",
    "EligibleTime",
    "AccrueTime",
    "StartTime",
    "EndTime",
    "LastSchedEval",
}
VARIES = TIMES | {
    "UserId",  # the test's user, not root
    "GroupId",
    "Priority",  # Phalanx's own weights (and its "short" factor)
    "Scheduler",  # Main or Backfill: which pass started a job is not on the wire
    "AllocNode:Sid",  # the submitting session is not on the wire
    "NodeList",  # Phalanx places jobs elsewhere
    "BatchHost",
    "TRES",  # no DefMemPerCPU in Phalanx: no mem= unless asked for
    "MinMemoryNode",  # idem (the reference's MinMemoryCPU=8000M)
    "Command",  # jobs submitted over REST: argv, not a script
    "JobId",  # the reference's tasks got new ids when they started
    "NumNodes",  # "4-4" for -N 4: the maximum node count is not on the wire
    "JOB_GRES",  # gpu:h100:4 for --gres=gpu:h100:4; submitted here without a model
    "TresPerNode",
    "CPU_IDs",  # which CPUs/GPUs of a node a job holds is not on the wire
    "GRES",
    "Mem",
    "Nodes",
}


@pytest.fixture(scope="module")
def scene(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Scene]:
    state = tmp_path_factory.mktemp("scontrol")
    work = state / "work"
    work.mkdir()
    work.chmod(0o755)
    cluster = LocalCluster(state, CONFIG).start()
    try:
        ids, _ = reference_scene(cluster, work)
        yield cluster, ids, work
    finally:
        cluster.stop()


def _scontrol(scene: Scene, argv: list[str]) -> tuple[str, str, int]:
    return run(scontrol.main, argv, scene[0].state_dir)


def _phalanx_id(scene: Scene, ref: int) -> int:
    return min(i for i, r in scene[1].items() if r == ref)


PAIR = re.compile(r"(\S+?)=(.*?)(?= \S+?=|$)")


def _fields(text: str, work: str) -> list[list[tuple[str, str]]]:
    """Each line as its (key, value) pairs; paths under the work directory as WORK/."""
    text = text.replace("/tmp/slurm-ref/captures/work", "WORK").replace(work, "WORK")
    text = re.sub(r"slurm-\d+(_\d+)?\.out", "slurm-ID.out", text)
    text = text.replace("MinMemoryCPU=", "MinMemoryNode=")
    return [PAIR.findall(line.strip()) for line in text.splitlines()]


def _same(got: str, want: str, work: Path, varies: set[str] = VARIES) -> None:
    have, expect = _fields(got, str(work)), _fields(want, str(work))
    assert [[k for k, _ in line] for line in have] == [[k for k, _ in line] for line in expect]
    for line_have, line_want in zip(have, expect, strict=True):
        for (key, value), (_, wanted) in zip(line_have, line_want, strict=True):
            if key not in varies:
                assert value == wanted, (key, got)


def _compare(scene: Scene, capture: str, ref: int) -> tuple[str, str]:
    command, out, _, err, rc = reference(capture)
    argv = shlex.split(command)[1:]
    argv = [str(_phalanx_id(scene, ref)) if a == str(ref) else a for a in argv]
    got, got_err, got_rc = _scontrol(scene, argv)
    assert (got_err, got_rc) == (err, rc)
    _same(got, out, scene[2])
    return got, out


def test_running_job(scene: Scene) -> None:
    got, out = _compare(scene, "32_scontrol_show_job_running.txt", 2)
    # The layout, blank lines and trailing spaces included, is Slurm's.
    assert got.endswith("   Power=\n   \n\n") and out.endswith("   Power=\n   \n\n")


def test_gpu_job(scene: Scene) -> None:
    _compare(scene, "33_scontrol_show_job_gpu.txt", 4)


def test_pending_job(scene: Scene) -> None:
    # Slurm prints the nodes it plans on: SchedNodeList is not on the wire.
    _command, out, _, err, rc = reference("34_scontrol_show_job_pending.txt")
    out = out.replace(" SchedNodeList=n[01-04]", "")
    got, got_err, got_rc = _scontrol(scene, ["show", "job", str(_phalanx_id(scene, 5))])
    assert (got_err, got_rc) == (err, rc)
    _same(got, out, scene[2])


def test_array_job(scene: Scene) -> None:
    _compare(scene, "35_scontrol_show_job_array.txt", 9)


def test_one_liner(scene: Scene) -> None:
    got, _out = _compare(scene, "36_scontrol_show_job_oneliner.txt", 2)
    assert got.count("\n") == 1 and got.endswith("Power= \n")


def test_details(scene: Scene) -> None:
    _compare(scene, "37_scontrol_show_job_details.txt", 4)


def test_small_gpu_job(scene: Scene) -> None:
    _compare(scene, "38_scontrol_show_job_priority_pending.txt", 6)


def test_failed_job(scene: Scene) -> None:
    _compare(scene, "101_scontrol_show_job_failed.txt", 34)


def test_unknown_job(scene: Scene) -> None:
    _compare(scene, "43_scontrol_show_job_unknown.txt", 0)


NODE_VARIES = {
    # The machine's and the moment's: its agent tells them.
    "Arch",
    "CPULoad",
    "NodeAddr",
    "OS",
    "FreeMem",
    "BootTime",
    "SlurmdStartTime",
    "CoresPerSocket",  # sockets are not on the wire: one socket of all cores
    "Sockets",
    "CPUAlloc",  # the filler job holds all CPUs (and memory) of the reference's nodes
    "AllocMem",
    "AllocTRES",
    "NodeHostName",  # the node's name: several emulated nodes share a host here
    "LastBusyTime",
}


def _node_fields(text: str) -> str:
    # Agents poll the controller and listen on no port: Port dropped from the reference.
    return re.sub(r" Port=\d+", "", text)


@pytest.mark.parametrize(
    "capture", ["39_scontrol_show_node.txt", "40_scontrol_show_node_oneliner.txt"]
)
def test_node(scene: Scene, capture: str) -> None:
    command, out, _, err, rc = reference(capture)
    got, got_err, got_rc = _scontrol(scene, shlex.split(command)[1:])
    assert (got_err, got_rc) == (err, rc)
    _same(got, _node_fields(out), scene[2], NODE_VARIES)
    assert got.endswith("\n\n") == out.endswith("\n\n")


def test_node_facts_come_from_its_agent(scene: Scene) -> None:
    got, _, rc = _scontrol(scene, ["show", "node", "n01"])
    fields = dict(pair for line in _fields(got, str(scene[2])) for pair in line)
    assert rc == 0
    assert fields["Arch"] == os.uname().machine
    assert fields["OS"].startswith(f"{os.uname().sysname} {os.uname().release} ")
    assert re.fullmatch(r"\d+\.\d\d", fields["CPULoad"])
    assert fields["FreeMem"].isdigit()
    assert fields["NodeAddr"] == "127.0.0.1"
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d", fields["SlurmdStartTime"])
    # n01 is held whole by the --exclusive filler, its memory too, as in the reference.
    assert fields["AllocMem"] == "512000"


def test_partition(scene: Scene) -> None:
    command, out, _, err, rc = reference("41_scontrol_show_partition.txt")
    got, got_err, got_rc = _scontrol(scene, shlex.split(command)[1:])
    assert (got_err, got_rc) == (err, rc)
    # Phalanx preempts by requeueing unless configured otherwise (not on the wire).
    assert got == out.replace("PreemptMode=OFF", "PreemptMode=REQUEUE")


def test_topology(scene: Scene) -> None:
    command, out, _, err, rc = reference("42_scontrol_show_topology.txt")
    got, got_err, got_rc = _scontrol(scene, shlex.split(command)[1:])
    assert (got_err, got_rc) == (err, rc)
    # Spine switches are not on the wire (GET /v1/nodes names a node's leaf only).
    assert got == "".join(x + "\n" for x in out.splitlines() if "Level=0" in x)


@pytest.mark.parametrize("capture", ["44_scontrol_hostnames.txt", "45_scontrol_hostlist.txt"])
def test_host_lists(scene: Scene, capture: str) -> None:
    command, out, _, err, rc = reference(capture)
    assert _scontrol(scene, shlex.split(command)[1:]) == (out, err, rc)


def test_hostnames_from_the_job_environment(scene: Scene) -> None:
    os.environ["SLURM_JOB_NODELIST"] = "gpu[1-2],x"
    try:
        assert _scontrol(scene, ["show", "hostname"]) == ("gpu1\ngpu2\nx\n", "", 0)
    finally:
        del os.environ["SLURM_JOB_NODELIST"]
    _, err, rc = _scontrol(scene, ["show", "hostnames"])
    assert (err, rc) == ("scontrol: error: host list is empty\n", 1)


def test_config_and_ping(scene: Scene) -> None:
    out, err, rc = _scontrol(scene, ["show", "config"])
    assert rc == 0 and err == ""
    pairs = [line.split(" = ", 1) for line in out.splitlines() if " = " in line]
    conf = {key.strip(): value for key, value in pairs}
    assert conf["SchedulerType"] == "sched/backfill"
    assert conf["PriorityType"] == "priority/multifactor"
    assert conf["NodeCount"] == "16"
    assert out.splitlines()[-1].endswith(" is UP")
    out, err, rc = _scontrol(scene, ["ping"])
    assert re.fullmatch(r"Slurmctld\(primary\) at \S+ is UP\n", out) and rc == 0


# ------------------------------------------------------------------------------ actions
def _job(scene: Scene, job_id: int) -> dict[str, object]:
    answer: dict[str, object] = scene[0].call("GET", f"/v1/jobs/{job_id}")
    return answer


def test_hold_and_release(scene: Scene) -> None:
    cluster, _, work = scene
    after = _phalanx_id(scene, 2)
    [job] = submit(cluster, work, command=["true"], name="h", dependency=f"afterok:{after}")
    assert _scontrol(scene, ["hold", str(job)]) == ("", "", 0)
    assert _job(scene, job)["reason"] in ("JobHeldUser", "JobHeldAdmin")  # admin: Admin
    assert _scontrol(scene, ["release", f"JobId={job}"]) == ("", "", 0)
    assert _job(scene, job)["reason"] == "Dependency"
    cluster.call("DELETE", f"/v1/jobs/{job}")


def test_hold_errors(scene: Scene) -> None:
    assert _scontrol(scene, ["hold", "999999"]) == (
        "",
        "Invalid job id specified for job 999999\n",
        1,
    )
    running = _phalanx_id(scene, 2)
    _, err, rc = _scontrol(scene, ["hold", str(running)])
    assert (err, rc) == (f"Job is no longer pending execution for job {running}\n", 1)


def test_update_time_limit_and_priority(scene: Scene) -> None:
    cluster, _, work = scene
    [job] = submit(cluster, work, command=["true"], name="u", hold=True, time="2:00:00")
    assert _scontrol(scene, ["update", f"jobid={job}", "TimeLimit=1:00:00"]) == ("", "", 0)
    assert _job(scene, job)["time_limit_ms"] == 3_600_000
    assert _scontrol(scene, ["UPDATE", f"JobId={job}", "priority=100"]) == ("", "", 0)
    out, _, _ = _scontrol(scene, ["show", "job", str(job)])
    assert "TimeLimit=01:00:00" in out
    _, err, rc = _scontrol(scene, ["update", f"JobId={job}", "TimeLimit=abc"])
    assert (err, rc) == ("scontrol: error: Invalid TimeLimit value\n", 1)
    _, err, rc = _scontrol(scene, ["update", f"JobId={job}", "Nice=5"])
    assert rc == 1 and "not supported: Nice=5" in err
    cluster.call("DELETE", f"/v1/jobs/{job}")


def test_requeue(scene: Scene) -> None:
    cluster, _, work = scene
    [job] = submit(cluster, work, command=["sleep", "300"], name="rq")
    cluster.wait([job], ("RUNNING",), final=False)
    assert _scontrol(scene, ["requeue", str(job)]) == ("", "", 0)
    wait_until(lambda: _job(scene, job)["restarts"] == 1)
    cluster.call("DELETE", f"/v1/jobs/{job}")


def test_permission_denied(scene: Scene, monkeypatch: pytest.MonkeyPatch) -> None:
    """A non-administrator raising a limit: the controller answers 403."""
    from phalanx.client.wirecall import WireCaller

    def refuse(self: WireCaller, method: str, path: str, **kw: object) -> tuple[int, object]:
        return 403, {"error": "only an administrator may raise a time limit"}

    monkeypatch.setattr(WireCaller, "call", refuse)
    _, err, rc = _scontrol(scene, ["update", "JobId=5", "TimeLimit=9:00:00"])
    assert (err, rc) == ("slurm_update error: Access/permission denied\n", 1)
    _, err, rc = _scontrol(scene, ["release", "5"])
    assert (err, rc) == ("Access/permission denied for job 5\n", 1)


def test_shims(scene: Scene, tmp_path: Path) -> None:
    import subprocess

    write_shims(tmp_path)
    env = {"PATH": os.environ.get("PATH", ""), "PHALANX_STATE_DIR": str(scene[0].state_dir)}
    done = subprocess.run(
        [str(tmp_path / "scontrol"), "show", "hostnames", "n[01-02]"],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert (done.stdout, done.returncode) == ("n01\nn02\n", 0)
    started = time.monotonic()
    done = subprocess.run(
        [str(tmp_path / "scontrol"), "show", "job", "999999"],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert (done.stderr, done.returncode) == (
        "slurm_load_jobs error: Invalid job id specified\n",
        1,
    )
    assert time.monotonic() - started < 10


def test_one_cluster_options_and_no_ops_change_nothing(scene: Scene) -> None:
    plain = _scontrol(scene, ["-o", "show", "partition"])
    for extra in (["-M", "all"], ["--federation"], ["--local"], ["--sibling"], ["-a"], ["-F"]):
        assert _scontrol(scene, [*extra, "-o", "show", "partition"]) == plain, extra
    _, err, rc = _scontrol(scene, ["--uid=0", "show", "partition"])
    assert rc == 1 and err.startswith("scontrol: error: --uid:")
    _, err, rc = _scontrol(scene, ["-M", "elsewhere", "show", "partition"])
    assert rc == 1 and "can't be reached now" in err
