"""Slurm's association and QOS limits held as quotas by ``admit/clusterqueue`` in the ``slurm``
and ``phalanx`` profiles. The scenario is the one run on the reference Slurm 22.05
(``AccountingStorageEnforce=associations,limits,qos``; 2 nodes x 8 GPUs): account teama with
GrpTRES=gres/gpu=16, GrpJobs=8, MaxJobs=4; user alice in it with MaxJobs=2; QOS gpu16 with
MaxTRESPerUser=gres/gpu=8, MaxJobsPerUser=3. There ``squeue %R`` said AssocMaxJobsLimit for
alice's third job, QOSMaxGRESPerUser for her third 4-GPU job under gpu16 (which replaces her
MaxJobs), and AssocGrpGRES for a 4-GPU job once teama held 15 GPUs."""

from __future__ import annotations

import dataclasses
import textwrap

import pytest

from phalanx.config.clusterspec import cluster_from_yaml
from phalanx.config.queues import queues_from_yaml
from phalanx.domain.associations import format_tres, parse_tres
from phalanx.domain.cluster import Cluster
from phalanx.domain.state import JobState
from phalanx.domain.time import HOUR
from phalanx.errors import ConfigError
from phalanx.policies.clusterqueue.admission import ClusterQueueAdmission
from phalanx.testing import EngineDriver, make_job

BASE = """
nodes:
  - {names: "n[01-02]", gpus: 8, gpu_model: H100, cpus: 64, memory: 512G}
accounts:
  - {name: teama, shares: 2}
  - {name: teamb, parent: teama}
qos:
  - {name: gpu16, priority: 10, GrpTRES: "gres/gpu=16", MaxTRESPerUser: "gres/gpu=8",
     MaxJobsPerUser: 3, MaxSubmitJobsPerUser: 5}
associations:
  - {account: teama, GrpTRES: "gres/gpu=16", GrpJobs: 8, MaxJobs: 4, MaxSubmitJobs: 10}
  - {account: teama, user: alice, MaxJobs: 2, GrpTRES: "cpu=8,gres/gpu=40"}
"""


def cluster(extra: str = "") -> Cluster:
    return cluster_from_yaml(BASE + extra)


def submit(
    d: EngineDriver, gpus: int, *, user: str = "alice", account: str = "teama", qos: str = "normal"
) -> int:
    job_id = d.submit(make_job(gpus=gpus, account=account, user=user, qos=qos, time_limit=HOUR))[0]
    d.settle()
    return job_id


@pytest.mark.parametrize("profile", ["slurm", "phalanx"])
def test_the_reference_slurm_scenario_gives_slurms_reasons(profile: str) -> None:
    d = EngineDriver(cluster(), profile)
    first = [submit(d, g) for g in (1, 1, 1, 3)]
    assert [d.state(i) for i in first] == [JobState.RUNNING] * 2 + [JobState.PENDING] * 2
    third = d.job(first[2])
    assert third.reason == "AssocMaxJobsLimit"
    assert third.reason_plugin == "admit/clusterqueue"
    assert "user alice runs 2 jobs in account teama, MaxJobs 2" in third.reason_message
    # gpu16's MaxJobsPerUser (3) takes the place of alice's MaxJobs (2): two 4-GPU jobs
    # start, the third would pass MaxTRESPerUser=gres/gpu=8.
    under_qos = [submit(d, 4, qos="gpu16") for _ in range(3)]
    assert [d.state(i) for i in under_qos] == [JobState.RUNNING] * 2 + [JobState.PENDING]
    job = d.job(under_qos[2])
    assert job.reason == "QOSMaxGRESPerUser"
    assert "QOS gpu16 for user alice at its MaxTRESPerUser gres/gpu=8, 8 in use" in (
        job.reason_message
    )


def test_grp_tres_counts_the_whole_account_subtree() -> None:
    d = EngineDriver(cluster(), "slurm")
    # Users without an association of their own run under teama's (and teamb's, below it).
    held = [
        submit(d, 8, user="bob"),
        submit(d, 4, user="carol"),
        submit(d, 3, user="dave", account="teamb"),
    ]
    assert all(d.state(i) is JobState.RUNNING for i in held)
    blocked = submit(d, 4, user="erin", account="teamb")
    job = d.job(blocked)
    assert d.state(blocked) is JobState.PENDING
    assert job.reason == "AssocGrpGRES"
    assert "account teama at its GrpTRES gres/gpu=16, 15 in use, the job asks 4" in (
        job.reason_message
    )
    fits = submit(d, 1, user="erin", account="teamb")
    assert d.state(fits) is JobState.RUNNING
    d.finish(held[0])
    d.settle()
    assert d.state(blocked) is JobState.RUNNING


def test_max_jobs_is_inherited_from_the_parent_account_and_grp_jobs_is_not() -> None:
    d = EngineDriver(cluster(), "slurm")
    jobs = [submit(d, 0, user="root", account="teamb") for _ in range(5)]
    # teamb has no MaxJobs of its own: teama's 4 applies to each user below.
    assert [d.state(i) for i in jobs] == [JobState.RUNNING] * 4 + [JobState.PENDING]
    assert d.job(jobs[4]).reason == "AssocMaxJobsLimit"
    others = [submit(d, 0, user=f"u{k}", account="teamb") for k in range(5)]
    # teama's GrpJobs (8) caps the subtree: 4 + 4 run, the rest wait.
    assert sum(d.state(i) is JobState.RUNNING for i in others) == 4
    waiting = [d.job(i) for i in others if d.state(i) is JobState.PENDING]
    assert [j.reason for j in waiting] == ["AssocGrpJobsLimit"]


def test_qos_grp_tres_and_per_job_limits() -> None:
    d = EngineDriver(cluster(), "slurm")
    a = submit(d, 8, user="bob", qos="gpu16")
    b = submit(d, 8, user="carol", qos="gpu16")
    c = submit(d, 1, user="dave", account="root", qos="gpu16")
    assert d.state(a) is JobState.RUNNING and d.state(b) is JobState.RUNNING
    assert d.job(c).reason == "QOSGrpGRES"


def test_assoc_max_tres_per_job() -> None:
    text = BASE.replace(
        "  - {account: teama, user: alice",
        '  - {account: teamb, MaxTRES: "gres/gpu=2"}\n  - {account: teama, user: alice',
    )
    d = EngineDriver(cluster_from_yaml(textwrap.dedent(text)), "slurm")
    big = submit(d, 3, user="zed", account="teamb")
    small = submit(d, 2, user="zed", account="teamb")
    assert d.job(big).reason == "AssocMaxGRESPerJob"
    assert d.state(small) is JobState.RUNNING


def test_no_limits_no_effect() -> None:
    d = EngineDriver(cluster_from_yaml(BASE.split("qos:")[0]), "slurm")
    jobs = [submit(d, 1) for _ in range(6)]
    assert all(d.state(i) is JobState.RUNNING for i in jobs)


def test_tres_text_round_trips_as_sacctmgr_prints_it() -> None:
    assert parse_tres("gres/gpu=16,cpu=8,mem=500G") == (
        ("cpu", 8),
        ("mem", 512000),
        ("gres/gpu", 16),
    )
    assert format_tres(parse_tres("gres/gpu:h100=4,mem=1536M,node=2")) == (
        "mem=1536M,node=2,gres/gpu=4"
    )
    with pytest.raises(ValueError, match="unknown TRES 'license/x=1'"):
        parse_tres("license/x=1")


def test_bad_associations_are_config_errors_naming_the_field() -> None:
    with pytest.raises(ConfigError) as exc:
        cluster("  - {account: nosuch, MaxJobs: 1}\n")
    assert "associations[2].account" in str(exc.value) and "unknown account" in str(exc.value)
    with pytest.raises(ConfigError) as exc:
        cluster('  - {account: teamb, GrpTRES: "gres/gpu=lots"}\n')
    assert "associations[2].GrpTRES" in str(exc.value)


def test_the_slurm_profile_holds_limits_but_not_kueues_cluster_queues() -> None:
    kueue = "apiVersion: kueue.x-k8s.io/v1beta1\n"
    queues = queues_from_yaml(
        kueue
        + "kind: ResourceFlavor\nmetadata: {name: f}\n---\n"
        + kueue
        + "kind: ClusterQueue\nmetadata: {name: cq}\nspec:\n  namespaceSelector: {}\n"
        + "  resourceGroups:\n  - coveredResources: [nvidia.com/gpu, cpu, memory]\n"
        + "    flavors:\n    - name: f\n      resources:\n"
        + "      - {name: nvidia.com/gpu, nominalQuota: 1}\n"
        + "      - {name: cpu, nominalQuota: 100}\n      - {name: memory, nominalQuota: 1Ti}\n"
        + "---\n"
        + kueue
        + "kind: LocalQueue\nmetadata: {name: default, namespace: teamb}\n"
        + "spec: {clusterQueue: cq}\n"
    )
    limited = dataclasses.replace(cluster(), queues=queues)
    slurm = EngineDriver(limited, "slurm")
    jobs = [submit(slurm, 1, user="u", account="teamb") for _ in range(2)]
    assert all(slurm.state(i) is JobState.RUNNING for i in jobs)  # the ClusterQueue is not read
    phalanx = EngineDriver(limited, "phalanx")
    jobs = [submit(phalanx, 1, user="u", account="teamb") for _ in range(2)]
    assert [phalanx.state(i) for i in jobs] == [JobState.RUNNING, JobState.PENDING]


@pytest.mark.parametrize("profile", ["slurm", "phalanx"])
def test_admission_is_idle_only_with_nothing_to_check(profile: str) -> None:
    """``admit/clusterqueue`` says it is ``Idle`` (the pass then does not ask it) only on a
    cluster with no limit and no ClusterQueue."""

    def idle(cluster: Cluster) -> bool:
        engine = EngineDriver(cluster, profile).engine
        [plugin] = [p for p in engine.points.pre_filter if isinstance(p, ClusterQueueAdmission)]
        return plugin.idle(engine.view)

    assert idle(cluster_from_yaml(BASE.split("qos:")[0]))
    assert not idle(cluster())
