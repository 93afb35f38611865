"""ClusterQueue quotas hold whatever happens (issue 11's properties):

- a ClusterQueue never uses more than nominalQuota + borrowingLimit;
- it never lends more than its lendingLimit allows: the others of its cohort together never
  use more than their own nominal quotas plus what it may lend;
- what it keeps from lending (nominal - lendingLimit) stays available to it;
- no admitted workload lacks a feasible placement: quota is held across passes only by
  running jobs, each on nodes of the flavor its quota is counted in.

First on the quota tree alone (random admissions and releases, each taken only when
``available`` allows), then through the engine (random jobs of random ClusterQueues run to
completion on a small cluster with two flavors), checked after every event.
"""

from __future__ import annotations

import dataclasses

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from phalanx.config.clusterspec import cluster_from_yaml
from phalanx.domain.queues import (
    ClusterQueue,
    FlavorQuotas,
    LabelSelector,
    LocalQueue,
    Queues,
    ResourceFlavor,
    ResourceGroup,
    ResourceQuota,
)
from phalanx.domain.queues.quota import QuotaTree
from phalanx.domain.state import JobState
from phalanx.domain.time import MINUTE
from phalanx.testing import EngineDriver, make_job

GPU = "nvidia.com/gpu"
FLAVORS = ("h100", "a100")


@st.composite
def resource_quotas(draw: st.DrawFn, name: str, cohort: bool) -> ResourceQuota:
    nominal = draw(st.integers(0, 16)) * 1000
    borrowing = draw(st.none() | st.integers(0, 16)) if cohort else None
    lending = draw(st.none() | st.integers(0, nominal // 1000)) if cohort else None
    return ResourceQuota(
        name,
        nominal,
        None if borrowing is None else borrowing * 1000,
        None if lending is None else lending * 1000,
    )


@st.composite
def cluster_queues(draw: st.DrawFn) -> list[ClusterQueue]:
    """2-4 ClusterQueues, most in cohort ``c``; GPUs in flavors h100 then a100 (some queues
    have only one), CPUs in the same group with room to spare."""
    queues = []
    for i in range(draw(st.integers(2, 4))):
        in_cohort = draw(st.booleans()) or i < 2
        flavors = draw(st.sampled_from([FLAVORS, FLAVORS[:1], FLAVORS[1:]]))
        quotas = tuple(
            FlavorQuotas(
                f,
                (
                    draw(resource_quotas(GPU, in_cohort)),
                    ResourceQuota("cpu", 10_000_000),
                ),
            )
            for f in flavors
        )
        queues.append(
            ClusterQueue(
                f"q{i}",
                (ResourceGroup((GPU, "cpu"), quotas),),
                cohort="c" if in_cohort else None,
                namespace_selector=LabelSelector(),
            )
        )
    return queues


def _queues(cqs: list[ClusterQueue]) -> Queues:
    labels = {"h100": "H100", "a100": "A100"}
    return Queues(
        flavors={f: ResourceFlavor(f, (("nvidia.com/gpu.product", labels[f]),)) for f in FLAVORS},
        cluster_queues={cq.name: cq for cq in cqs},
        local_queues={
            (f"ns{i}", "default"): LocalQueue(f"ns{i}", "default", cq.name)
            for i, cq in enumerate(cqs)
        },
    )


def _check_limits(cqs: list[ClusterQueue], usage: dict[tuple[str, str], int]) -> None:
    """The limits, for every flavor's GPUs, given each queue's usage (queue, flavor)."""
    for flavor in FLAVORS:
        quota = {
            cq.name: q
            for cq in cqs
            for fq in cq.resource_groups[0].flavors
            if fq.name == flavor
            for q in fq.resources
            if q.name == GPU
        }
        cohort = [cq.name for cq in cqs if cq.cohort == "c" and cq.name in quota]
        for name, q in quota.items():
            used = usage.get((name, flavor), 0)
            if q.borrowing_limit is not None:
                assert used <= q.nominal + q.borrowing_limit
            if name not in cohort:
                assert used <= q.nominal
        for name in cohort:
            q = quota[name]
            lendable = q.nominal if q.lending_limit is None else q.lending_limit
            others = [o for o in cohort if o != name]
            used_by_others = sum(usage.get((o, flavor), 0) for o in others)
            assert used_by_others <= sum(quota[o].nominal for o in others) + lendable


@settings(max_examples=200, deadline=None)
@given(cqs=cluster_queues(), data=st.data())
def test_the_quota_tree_never_passes_a_limit(cqs: list[ClusterQueue], data: st.DataObject) -> None:
    tree = QuotaTree(_queues(cqs))
    held: list[tuple[str, tuple[str, str], int]] = []
    usage: dict[tuple[str, str], int] = {}
    for _ in range(data.draw(st.integers(1, 40))):
        if held and data.draw(st.booleans()):
            name, fr, amount = held.pop(data.draw(st.integers(0, len(held) - 1)))
            tree.queues[name].remove(fr, amount)
            usage[(name, fr[0])] -= amount
        else:
            cq = data.draw(st.sampled_from(cqs))
            flavor = data.draw(st.sampled_from([f.name for f in cq.resource_groups[0].flavors]))
            fr = (flavor, GPU)
            node = tree.queues[cq.name]
            amount = data.draw(st.integers(1, 12)) * 1000
            if amount > node.available(fr):
                continue  # what admission refuses
            node.add(fr, amount)
            held.append((cq.name, fr, amount))
            usage[(cq.name, flavor)] = usage.get((cq.name, flavor), 0) + amount
        _check_limits(cqs, usage)
        for cq in cqs:  # what a queue keeps from lending stays available to it
            for fq in cq.resource_groups[0].flavors:
                q = fq.resources[0]
                kept = q.nominal - (q.lending_limit if q.lending_limit is not None else q.nominal)
                used = usage.get((cq.name, fq.name), 0)
                if cq.cohort is not None and used < kept:
                    assert tree.queues[cq.name].available((fq.name, GPU)) >= kept - used


TWO_POOLS = """\
nodes:
  - {names: "gpu[1-2]", gpus: 8, gpu_model: H100, cpus: 64, memory: 512G}
  - {names: "gpu[3-4]", gpus: 8, gpu_model: A100, cpus: 64, memory: 512G}
"""


@st.composite
def jobs(draw: st.DrawFn, queues: int) -> list[tuple[int, int, int, int, int]]:
    """(namespace index, GPUs per node, nodes, extra nodes it may take, runtime in
    minutes), submitted at once."""
    return draw(
        st.lists(
            st.tuples(
                st.integers(0, queues - 1),
                st.sampled_from([1, 2, 4, 8]),
                st.sampled_from([1, 1, 1, 2]),
                st.sampled_from([0, 0, 1]),
                st.integers(1, 60),
            ),
            min_size=1,
            max_size=25,
        )
    )


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cqs=cluster_queues(), data=st.data())
def test_admitted_jobs_keep_every_limit_and_run_in_their_flavor(
    cqs: list[ClusterQueue], data: st.DataObject
) -> None:
    queues = _queues(cqs)
    cluster = dataclasses.replace(cluster_from_yaml(TWO_POOLS, "two-pools.yaml"), queues=queues)
    d = EngineDriver(cluster, "kueue")
    namespace_of: dict[int, int] = {}
    for ns, gpus, nodes, more, minutes in data.draw(jobs(len(cqs))):
        spec = make_job(gpus=gpus, nodes=nodes, nodes_max=nodes + more, account=f"ns{ns}")
        [job_id] = d.submit(spec, minutes * MINUTE)
        namespace_of[job_id] = ns
    model_flavor = {"H100": "h100", "A100": "a100"}
    for _ in range(2_000):
        if d.step() is None:
            break
        usage: dict[tuple[str, str], int] = {}
        for job_id, ns in namespace_of.items():
            job = d.job(job_id)
            if job.state is not JobState.RUNNING:
                continue
            assert job.alloc is not None
            cq = cqs[ns]
            models = {cluster.nodes[n].gpu_model for n in job.alloc.nodes}
            assert len(models) == 1  # one flavor: never spread over two pools
            flavor = model_flavor[models.pop()]
            assert flavor in [f.name for f in cq.resource_groups[0].flavors]
            usage[(cq.name, flavor)] = usage.get((cq.name, flavor), 0) + int(job.alloc.gpus * 1000)
        _check_limits(cqs, usage)
