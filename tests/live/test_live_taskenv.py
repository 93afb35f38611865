"""Task environments and output names, checked against what a real Slurm sets."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from phalanx.config.clusterspec import regular_cluster
from phalanx.domain.jobspec import ArraySpec, JobSpec
from phalanx.live.taskenv import (
    expand_pattern,
    step_environment,
    task_environment,
    task_places,
)
from phalanx.sched.capacity import Allocation

NAMES = Path(__file__).resolve().parents[3] / "shared" / "slurm" / "reference"
TORCH = {"MASTER_ADDR", "MASTER_PORT", "WORLD_SIZE", "RANK", "LOCAL_RANK", "LOCAL_WORLD_SIZE"}


def _two_nodes() -> tuple[JobSpec, Allocation]:
    spec = JobSpec(
        name="train",
        user="ada",
        account="ml",
        nodes_min=2,
        nodes_max=2,
        tasks_per_node=2,
        gpus_per_task=2,
        cpus_per_task=4,
    )
    alloc = Allocation((4, 5), ((0, 1, 2, 3), (4, 5, 6, 7)), 0, 8, 0)
    return spec, alloc


def test_ranks_are_laid_out_node_by_node() -> None:
    _, alloc = _two_nodes()
    places = task_places(alloc, 2)
    assert [(p.node_position, p.local_rank, p.global_rank) for p in places] == [
        (0, 0, 0),
        (0, 1, 1),
        (1, 0, 2),
        (1, 1, 3),
    ]


def test_environment_of_the_last_task_of_a_two_node_gang() -> None:
    spec, alloc = _two_nodes()
    cluster = regular_cluster(8, 8, 4)
    place = task_places(alloc, 2)[3]
    env = task_environment(
        job_id=42,
        spec=spec,
        alloc=alloc,
        cluster=cluster,
        place=place,
        submit_dir="/home/ada",
        master_port=29500,
    )
    assert env["SLURM_JOB_NODELIST"] == "gpu[005-006]"
    assert env["SLURM_PROCID"] == "3" and env["RANK"] == "3"
    assert env["SLURM_LOCALID"] == "1" and env["LOCAL_RANK"] == "1"
    assert env["SLURM_NODEID"] == "1" and env["SLURMD_NODENAME"] == "gpu006"
    assert env["SLURM_NTASKS"] == "4" and env["WORLD_SIZE"] == "4"
    assert env["SLURM_TASKS_PER_NODE"] == "2(x2)"
    assert env["CUDA_VISIBLE_DEVICES"] == "4,5,6,7"
    assert env["MASTER_ADDR"] == "gpu005" and env["MASTER_PORT"] == "29500"
    assert env["SLURM_CPUS_PER_TASK"] == "4"
    assert "SLURM_ARRAY_JOB_ID" not in env


def test_every_slurm_variable_set_is_one_a_real_slurm_sets() -> None:
    path = NAMES / "slurm_env_var_names.txt"
    if not path.exists():
        pytest.skip("shared/slurm/reference is not beside the repository")
    # SLURM_CPUS_PER_TASK is Slurm's for --cpus-per-task, which the reference jobs did not use.
    real = set(path.read_text().split()) | {"SLURM_CPUS_PER_TASK"}
    spec, alloc = _two_nodes()
    env = task_environment(
        job_id=7,
        spec=spec,
        alloc=alloc,
        cluster=regular_cluster(8, 8, 4),
        place=task_places(alloc, 2)[0],
        submit_dir="/",
        master_port=1,
        array_job_id=7,
        array_task_id=0,
    )
    assert set(env) - TORCH <= real


@pytest.mark.parametrize(
    ("pattern", "expected"),
    [
        ("slurm-%j.out", "slurm-42.out"),
        ("slurm-%A_%a.out", "slurm-40_2.out"),
        ("%x-%u-%N-%t.log", "train-ada-gpu005-3.log"),
        ("%5j 100%% %q", "00042 100% %q"),
    ],
)
def test_output_patterns(pattern: str, expected: str) -> None:
    name = expand_pattern(
        pattern,
        job_id=42,
        name="train",
        user="ada",
        node="gpu005",
        task=3,
        array_job_id=40,
        array_task_id=2,
    )
    assert name == expected


def test_an_srun_step_binds_gpus_per_task_only_when_asked_to() -> None:
    _, alloc = _two_nodes()
    cluster = regular_cluster(8, 8, 4)
    places = task_places(alloc, 2)[:3]  # srun -n 3 over the two nodes: 2 + 1

    def step(place_index: int, environment: dict[str, str]) -> dict[str, str]:
        return step_environment(
            step=0,
            alloc=alloc,
            cluster=cluster,
            ntasks=3,
            nodes=2,
            per_node=2,
            place=places[place_index],
            job_nodes=alloc.nodes,
            environment=environment,
        )

    shared = step(1, {})
    assert shared["CUDA_VISIBLE_DEVICES"] == shared["SLURM_STEP_GPUS"] == "0,1,2,3"
    assert shared["SLURM_STEP_TASKS_PER_NODE"] == "2,1" and shared["SLURM_GTIDS"] == "0,1"
    bound = step(1, {"SLURM_GPUS_PER_TASK": "2"})
    assert bound["CUDA_VISIBLE_DEVICES"] == bound["ROCR_VISIBLE_DEVICES"] == "2,3"
    last = step(2, {"SLURM_GPUS_PER_TASK": "h100:2"})
    assert (last["SLURM_STEP_GPUS"], last["SLURM_GTIDS"]) == ("4,5", "2")


def test_topology_cluster_and_array_variables() -> None:
    spec, alloc = _two_nodes()
    cluster = regular_cluster(8, 8, 4)  # leaves of 8 nodes under a spine
    env = task_environment(
        job_id=7,
        spec=dataclasses.replace(spec, array=ArraySpec((1, 4, 7))),
        alloc=alloc,
        cluster=cluster,
        place=task_places(alloc, 2)[2],
        submit_dir="/",
        master_port=1,
        array_job_id=6,
        array_task_id=4,
        uid=1000,
        gid=100,
    )
    leaf = cluster.leaves[cluster.nodes[5].leaf]
    assert leaf.parent is not None
    spine = cluster.spines[leaf.parent].name
    assert env["SLURM_TOPOLOGY_ADDR"] == f"{spine}.{leaf.name}.gpu006"
    assert env["SLURM_TOPOLOGY_ADDR_PATTERN"] == "switch.switch.node"
    assert env["SLURM_JOB_PARTITION"] == cluster.default_partition().name
    assert env["SLURM_CLUSTER_NAME"] == cluster.name
    assert (env["SLURM_JOB_UID"], env["SLURM_JOB_GID"], env["SLURM_GTIDS"]) == (
        "1000",
        "100",
        "2,3",
    )
    assert [env[f"SLURM_ARRAY_TASK_{k}"] for k in ("COUNT", "MIN", "MAX", "STEP")] == [
        "3",
        "1",
        "7",
        "3",
    ]
