"""Golden tests: the environment of batch jobs and their srun steps, variable by variable, as a
real Slurm 22.05 set it (``out/85``-``out/90`` and ``out/99`` of the reference captures).

The jobs are those of ``capture.py``: ``env_job.sh`` (its batch step prints its Slurm
variables, then an srun step prints each task's) submitted five ways, and the job of ``out/99``
(``-n 2 --gres=gpu:2``, the full environment of its batch step and of each task of one srun
step). They run once, together, on a cluster of the reference's shape: 16 nodes ``n[01-16]``
of 8 H100s, 64 CPUs and 500G, four leaf switches under one spine, one default partition
``gpu``, named ``refcluster``.

What must differ between two clusters is normalized before comparing (see ``_normalized``);
what Phalanx does not set, or sets otherwise, on purpose is listed in ``MISSING``, ``EXTRA``
and ``DIFFERENT`` with the reason, and each entry must still be observed (a fixed difference
is taken off the list).
"""

from __future__ import annotations

import os
import pwd
import re
import time
from collections.abc import Iterator
from dataclasses import dataclass, field

import pytest
from slurm_cluster import YAML
from slurm_shell import REFERENCE, Capture, Shell, normalized, reference

from phalanx.domain.hostlist import expand
from phalanx.server.localcluster import LocalCluster
from phalanx.slurm.shims import write_shims

TOPOLOGY = """topology:
  leaves:
    - {name: leaf0, nodes: "n[01-04]"}
    - {name: leaf1, nodes: "n[05-08]"}
    - {name: leaf2, nodes: "n[09-12]"}
    - {name: leaf3, nodes: "n[13-16]"}
  spines:
    - {name: spine, leaves: [leaf0, leaf1, leaf2, leaf3]}
"""
"""The reference's topology.conf (``out/42_scontrol_show_topology``)."""

# capture.py's env_job.sh, word for word.
ENV_SCRIPT = (
    "#!/bin/bash\n"
    "echo '=== batch step env ==='\n"
    "env | grep -E '^(SLURM|SLURMD|CUDA|GPU_DEVICE|ROCR|ZE_)' | sort\n"
    "echo '=== srun steps (per task) ==='\n"
    'srun bash -c \'echo "--- task $SLURM_PROCID on $SLURMD_NODENAME"; env | grep -E '
    '"^(SLURM_(PROCID|LOCALID|NODEID|STEP_GPUS|JOB_GPUS|STEP_ID|STEPID|STEP_NODELIST|'
    "STEP_NUM_TASKS|STEP_TASKS_PER_NODE|GPUS_ON_NODE|NTASKS)|CUDA_VISIBLE_DEVICES|"
    "GPU_DEVICE_ORDINAL)=\" | sort'\n"
)
SUBMISSIONS = [
    "85_submit_env_1task",
    "86_submit_env_2task_gres2",
    "87_submit_env_2task_gpus_per_task",
    "88_submit_env_2node_gpus_per_node",
    "89_submit_env_array",
]
# The job of out/99 (its script is not in capture.py): the batch step's variables, then one
# srun step whose tasks write theirs to full_env_step_<task>.env.
FULL_GREP = "env | grep -E '^(SLURM|SLURMD|CUDA|GPU_DEVICE|ROCR|ZE_)' | sort"
FULL_JOB = (
    'sbatch --parsable -n 2 --gres=gpu:2 --wrap="'
    f"{FULL_GREP} > full_env_batch.env; "
    f'srun -o full_env_step_%t.env bash -c \\"{FULL_GREP}\\""'
)

# ---------------------------------------------------------------- documented differences
_SRUN_SOCKETS = (
    "where the tasks reach srun's I/O and PMI sockets; Phalanx's srun has none (the tasks' "
    "output reaches it through files), so an address would point at nothing"
)
MISSING: dict[str, str] = {
    "SLURM_CONF": "the slurm.conf slurmd read; Phalanx's agents read none (the cluster is the "
    "controller's), and a path to anything else would mislead the programs that open it",
    "SLURM_MEM_PER_CPU": "the reference's DefMemPerCPU=8000 gives a job without --mem 8000 MB "
    "a CPU; Phalanx has no default memory: a job that asks for none holds none and is told "
    "nothing (--mem gives SLURM_MEM_PER_NODE, --mem-per-cpu SLURM_MEM_PER_CPU, as in Slurm)",
    "SLURM_TASK_PID": "the task's own pid, which slurmstepd knows before it execs the task; "
    "the agents start tasks from their argv with subprocess, which cannot put a process's "
    "own pid in its environment without a shell in between",
    "SLURM_LAUNCH_NODE_IPADDR": _SRUN_SOCKETS,
    "SLURM_SRUN_COMM_HOST": _SRUN_SOCKETS,
    "SLURM_SRUN_COMM_PORT": _SRUN_SOCKETS,
    "SLURM_STEP_LAUNCHER_PORT": _SRUN_SOCKETS,
}
"""Set by Slurm in these jobs, not by Phalanx: variable -> why."""
_TASK_COUNT = (
    "Slurm sets it in a batch step only if -n or --ntasks-per-node was given; a Phalanx job "
    "always has a task count (the API asks for tasks per node: -n 2 on one node is 2 per "
    "node), and every step of it is told the count (1 for a plain sbatch)"
)
EXTRA: dict[str, str] = {
    "SLURM_NTASKS": _TASK_COUNT,
    "SLURM_NPROCS": _TASK_COUNT,
    "SLURM_NTASKS_PER_NODE": _TASK_COUNT,
}
"""Set by Phalanx where Slurm did not: variable -> why."""
DIFFERENT: dict[str, str] = {}
"""Set by both, to different values (after normalizing): variable -> why."""


# ---------------------------------------------------------------- parsing
Env = dict[str, str]


@dataclass
class JobOutput:
    """What one job printed: its batch step's variables and each srun task's, by rank."""

    batch: Env
    tasks: dict[int, Env] = field(default_factory=dict)


def _pairs(lines: list[str]) -> Env:
    return dict(line.split("=", 1) for line in lines if "=" in line)


def _task_blocks(lines: list[str]) -> dict[int, Env]:
    """The srun tasks' variables. Each task's are sorted, but tasks write at once, so their
    ``--- task`` lines and blocks interleave (as in the reference): a block starts wherever
    the sort order starts again."""
    blocks: list[list[str]] = []
    previous = ""
    for line in lines:
        if line.startswith("--- task") or "=" not in line:
            continue
        key = line.split("=", 1)[0]
        if not blocks or key <= previous:
            blocks.append([])
        blocks[-1].append(line)
        previous = key
    return {int(_pairs(b)["SLURM_PROCID"]): _pairs(b) for b in blocks}


def parse_job_output(text: str) -> JobOutput:
    head, _, steps = text.partition("=== srun steps (per task) ===\n")
    lines = head.splitlines()
    assert lines[0] == "=== batch step env ===", text
    return JobOutput(_pairs(lines[1:]), _task_blocks(steps.splitlines()))


def parse_listing(text: str) -> dict[str, str]:
    """``out/90``: ``##### file`` then its text, file by file."""
    files: dict[str, str] = {}
    for chunk in text.split("##### ")[1:]:
        name, _, body = chunk.partition("\n")
        files[name] = body
    return files


def parse_full(text: str) -> JobOutput:
    """``out/99``: the batch step, then ``=== srun step task file ...`` per task."""
    sections = re.split(r"(?m)^=== (.*)\n", text)[1:]
    batch: Env = {}
    tasks: dict[int, Env] = {}
    for title, body in zip(sections[::2], sections[1::2], strict=True):
        env = _pairs(body.splitlines())
        if title == "batch step":
            batch = env
        else:
            tasks[int(env["SLURM_PROCID"])] = env
    return JobOutput(batch, tasks)


# ---------------------------------------------------------------- normalizing
NODE_VARIABLES = ("SLURMD_NODENAME",)
NODELIST_VARIABLES = ("SLURM_JOB_NODELIST", "SLURM_NODELIST", "SLURM_STEP_NODELIST")
GPU_VARIABLES = (
    "CUDA_VISIBLE_DEVICES",
    "GPU_DEVICE_ORDINAL",
    "ROCR_VISIBLE_DEVICES",
    "ZE_AFFINITY_MASK",
    "SLURM_JOB_GPUS",
    "SLURM_STEP_GPUS",
)


@dataclass(frozen=True)
class Site:
    """What differs between the reference's run and ours, whatever Phalanx does: who ran
    the jobs, where, and from which directory."""

    user: str
    uid: str
    gid: str
    submit_dir: str
    submit_host: str


REFERENCE_SITE = Site("root", "0", "0", "/tmp/slurm-ref/captures/work", "vm")


def _normalized(job: JobOutput, site: Site) -> JobOutput:
    """The job's variables with what must differ between two clusters replaced by what it
    stands for:

    * job ids (``SLURM_JOB_ID``, ``SLURM_JOBID``, ``SLURM_ARRAY_JOB_ID``): ids are each
      cluster's own; the tests check them against what sbatch printed instead;
    * node names (``SLURMD_NODENAME``, the node lists, the last word of
      ``SLURM_TOPOLOGY_ADDR``): the reference's jobs ran where earlier jobs left room, so
      ``n13`` there may be ``n01`` here; each becomes its position in the job's node list;
    * leaf switch names in ``SLURM_TOPOLOGY_ADDR`` follow the node (``leaf3`` for ``n13``):
      digits dropped;
    * GPU indices: physical ones, which depend on the GPUs other jobs held on the node
      (``2,3`` there may be ``0,1`` here); each becomes its rank among the job's GPUs on
      that node (those its batch step or its tasks there see);
    * user, uid, gid, submit directory and submit host: the reference ran as root in
      ``/tmp/slurm-ref/captures/work`` on host ``vm``;
    * pids (``SLURM_TASK_PID``), and the controller's host and port in
      ``SLURM_WORKING_CLUSTER``.
    """
    nodes = expand(job.batch["SLURM_JOB_NODELIST"])
    gpus = _gpus_by_node(job)

    def node(name: str) -> str:
        return f"<node {nodes.index(name)}>" if name in nodes else name

    def one(env: Env) -> Env:
        out = dict(env)
        for key in ("SLURM_JOB_ID", "SLURM_JOBID", "SLURM_ARRAY_JOB_ID"):
            if key in out:
                out[key] = "<job id>"
        for key in NODE_VARIABLES:
            if key in out:
                out[key] = node(out[key])
        for key in NODELIST_VARIABLES:
            if key in out:
                out[key] = ",".join(node(n) for n in expand(out[key]))
        if "SLURM_TOPOLOGY_ADDR" in out:
            *switches, name = out["SLURM_TOPOLOGY_ADDR"].split(".")
            out["SLURM_TOPOLOGY_ADDR"] = ".".join([*(s.rstrip("0123456789") for s in switches)])
            out["SLURM_TOPOLOGY_ADDR"] += f".{node(name)}"
        mine = gpus.get(out.get("SLURM_NODEID", "0"), [])
        for key in GPU_VARIABLES:
            if key in out:
                out[key] = ",".join(
                    f"<gpu {mine.index(g)}>" if g in mine else g for g in out[key].split(",")
                )
        replace = {
            "SLURM_JOB_USER": site.user,
            "SLURM_JOB_UID": site.uid,
            "SLURM_JOB_GID": site.gid,
            "SLURM_SUBMIT_DIR": site.submit_dir,
            "SLURM_SUBMIT_HOST": site.submit_host,
        }
        for key, mine in replace.items():
            if out.get(key) == mine:
                out[key] = f"<{key.lower()}>"
        if "SLURM_TASK_PID" in out and out["SLURM_TASK_PID"].isdigit():
            out["SLURM_TASK_PID"] = "<pid>"
        if "SLURM_WORKING_CLUSTER" in out:
            name, *_, protocol, plugin = out["SLURM_WORKING_CLUSTER"].split(":")
            out["SLURM_WORKING_CLUSTER"] = f"{name}:<host>:<port>:{protocol}:{plugin}"
        return out

    return JobOutput(one(job.batch), {rank: one(env) for rank, env in job.tasks.items()})


def _gpus_by_node(job: JobOutput) -> dict[str, list[str]]:
    """The GPU indices the job's steps see on each node (by ``SLURM_NODEID``), sorted."""
    seen: dict[str, set[str]] = {}
    for env in [job.batch, *job.tasks.values()]:
        ids = env.get("CUDA_VISIBLE_DEVICES")
        if ids:
            seen.setdefault(env.get("SLURM_NODEID", "0"), set()).update(ids.split(","))
    return {node: sorted(ids, key=int) for node, ids in seen.items()}


@dataclass
class Differences:
    missing: set[str] = field(default_factory=set)
    extra: set[str] = field(default_factory=set)
    different: dict[str, tuple[str, str]] = field(default_factory=dict)


def compare(ref: Env, ours: Env) -> Differences:
    return Differences(
        set(ref) - set(ours),
        set(ours) - set(ref),
        {k: (ref[k], ours[k]) for k in set(ref) & set(ours) if ref[k] != ours[k]},
    )


# ---------------------------------------------------------------- the jobs
@dataclass
class Run:
    submissions: dict[str, Capture]
    listing: Capture
    full: JobOutput
    full_id: str
    site: Site


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Run]:
    state = tmp_path_factory.mktemp("phalanx")
    with LocalCluster(state, YAML + TOPOLOGY) as cluster:
        bin_dir = tmp_path_factory.mktemp("bin")
        write_shims(bin_dir)
        workdir = tmp_path_factory.mktemp("work")
        workdir.chmod(0o755)
        shell = Shell(cluster, bin_dir, workdir)
        (workdir / "env_job.sh").write_text(ENV_SCRIPT)
        submissions = {name: shell.run(reference(name).command) for name in SUBMISSIONS}
        full = shell.run(FULL_JOB)
        assert full.rc == 0, full
        _wait_idle(cluster)
        listing = shell.run(reference("90_env_outputs").command)
        batch = (workdir / "full_env_batch.env").read_text()
        steps = "".join(
            f"=== srun step task file full_env_step_{t}.env\n"
            + (workdir / f"full_env_step_{t}.env").read_text()
            for t in (0, 1)
        )
        user = pwd.getpwuid(os.getuid())
        site = Site(
            user.pw_name,
            str(user.pw_uid),
            str(user.pw_gid),
            str(workdir),
            os.uname().nodename.split(".")[0],
        )
        yield Run(
            submissions,
            listing,
            parse_full(f"=== batch step\n{batch}{steps}"),
            full.stdout.strip(),
            site,
        )
    log = cluster.log_tail("controller", 200)
    assert "Traceback" not in log, log


def _wait_idle(cluster: LocalCluster, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while True:
        jobs = cluster.call("GET", "/v1/jobs")["jobs"]
        if all(j["state"] not in ("PENDING", "RUNNING", "COMPLETING") for j in jobs):
            return
        assert time.monotonic() < deadline, jobs
        time.sleep(0.1)


# ---------------------------------------------------------------- tests
@pytest.mark.parametrize("name", SUBMISSIONS)
def test_submissions_print_what_slurm_prints(run: Run, name: str) -> None:
    ref, ours = reference(name), run.submissions[name]
    assert (normalized(ours.stdout), ours.stderr, ours.rc) == (
        normalized(ref.stdout),
        ref.stderr,
        ref.rc,
    )


def _job_files(text: str) -> dict[str, str]:
    """The listing's files by name with the job ids taken out."""
    files = parse_listing(text)
    return {re.sub(r"_\d+(?=(_\d+)?\.out$)", "_N", name, count=1): b for name, b in files.items()}


def test_the_jobs_wrote_the_files_slurm_did(run: Run) -> None:
    ref = reference("90_env_outputs")
    assert (run.listing.stderr, run.listing.rc) == (ref.stderr, ref.rc)
    assert list(_job_files(run.listing.stdout)) == list(_job_files(ref.stdout))


JOBS = [
    "env_1task_N.out",
    "env_2node_N.out",
    "env_2task_gpt_N.out",
    "env_2task_gres2_N.out",
    "env_array_N_3.out",
    "env_array_N_4.out",
    "99_full",
]


def _outputs(run: Run, job: str) -> tuple[JobOutput, JobOutput]:
    """The reference's output of ``job`` and ours, as printed."""
    if job == "99_full":
        text = (REFERENCE / "99_env_full_2task_gres2_batch_and_srun_step.txt").read_text()
        return parse_full(text), run.full
    ref = _job_files(reference("90_env_outputs").stdout)[job]
    return parse_job_output(ref), parse_job_output(_job_files(run.listing.stdout)[job])


def _undocumented(ref: Env, ours: Env) -> list[str]:
    found = compare(ref, ours)
    return [
        *(f"not set by Phalanx: {k}={ref[k]}" for k in sorted(found.missing - MISSING.keys())),
        *(f"set by Phalanx only: {k}={ours[k]}" for k in sorted(found.extra - EXTRA.keys())),
        *(
            f"{k}: Slurm {a!r}, Phalanx {b!r}"
            for k, (a, b) in sorted(found.different.items())
            if k not in DIFFERENT
        ),
    ]


def test_ids_are_the_ones_sbatch_printed(run: Run) -> None:
    """What normalizing takes out of the comparison, checked on its own."""
    printed = {name: run.submissions[name].stdout.strip() for name in SUBMISSIONS}
    for job in JOBS[:-1]:
        _, ours = _outputs(run, job)
        ids = {ours.batch["SLURM_JOB_ID"], ours.batch["SLURM_JOBID"]}
        ids |= {t["SLURM_JOB_ID"] for t in ours.tasks.values() if "SLURM_JOB_ID" in t}
        assert len(ids) == 1, (job, ids)
        if job.startswith("env_array"):
            assert ours.batch["SLURM_ARRAY_JOB_ID"] == printed["89_submit_env_array"]
            assert ours.batch["SLURM_ARRAY_TASK_ID"] == job.split("_")[-1].split(".")[0]
    _, full = _outputs(run, "99_full")
    assert full.batch["SLURM_JOB_ID"] == run.full_id
    assert {t["SLURMD_NODENAME"] for t in full.tasks.values()} == {full.batch["SLURMD_NODENAME"]}
    assert full.batch["SLURM_SUBMIT_DIR"] == run.site.submit_dir
    assert full.batch["SLURM_SUBMIT_HOST"] == run.site.submit_host
    assert full.batch["SLURM_JOB_USER"] == run.site.user
    assert (full.batch["SLURM_JOB_UID"], full.batch["SLURM_JOB_GID"]) == (
        run.site.uid,
        run.site.gid,
    )


@pytest.mark.parametrize("job", JOBS)
def test_batch_step_environment(run: Run, job: str) -> None:
    ref, ours = _outputs(run, job)
    ref, ours = _normalized(ref, REFERENCE_SITE), _normalized(ours, run.site)
    assert _undocumented(ref.batch, ours.batch) == []


@pytest.mark.parametrize("job", JOBS)
def test_srun_step_environment(run: Run, job: str) -> None:
    ref, ours = _outputs(run, job)
    ref, ours = _normalized(ref, REFERENCE_SITE), _normalized(ours, run.site)
    assert sorted(ours.tasks) == sorted(ref.tasks)
    for rank, env in ref.tasks.items():
        assert _undocumented(env, ours.tasks[rank]) == [], f"task {rank}"


def test_every_documented_difference_is_still_one(run: Run) -> None:
    """A difference fixed in Phalanx comes off the lists."""
    seen = Differences()
    for job in JOBS:
        ref, ours = _outputs(run, job)
        ref, ours = _normalized(ref, REFERENCE_SITE), _normalized(ours, run.site)
        pairs = [(ref.batch, ours.batch)] + [(e, ours.tasks[r]) for r, e in ref.tasks.items()]
        for a, b in pairs:
            found = compare(a, b)
            seen.missing |= found.missing
            seen.extra |= found.extra
            seen.different.update(found.different)
    assert MISSING.keys() <= seen.missing
    assert EXTRA.keys() <= seen.extra
    assert DIFFERENT.keys() <= seen.different.keys()
