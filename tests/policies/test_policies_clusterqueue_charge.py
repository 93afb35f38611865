"""The ClusterQueue plugins' shortcuts give what the long way gives: per-queue sums kept from
pass to pass (``charge.retally``) equal the sums worked out afresh, and ``quota_start``'s
cheap no-room test answers as calling the flavor assignment after every end does."""

from __future__ import annotations

import random

import numpy as np

from phalanx.config.queues import queues_from_yaml
from phalanx.domain.queues import ClusterQueue, Queues
from phalanx.domain.queues.quota import FlavorResource, QuotaNode, QuotaTree
from phalanx.domain.time import Instant
from phalanx.policies.clusterqueue.assign import Assignment, assign
from phalanx.policies.clusterqueue.charge import Charge, Run, retally
from phalanx.policies.clusterqueue.forecast import Ending, quota_start
from phalanx.sched.capacity import Allocation

KUEUE = "apiVersion: kueue.x-k8s.io/v1beta1\n"
GPU = "nvidia.com/gpu"


def queue(name: str, a: tuple[int, str], b: tuple[int, str]) -> str:
    """A ClusterQueue of cohort ``all`` taking CPUs and GPUs from flavors ``a`` then ``b``
    (nominal quota and extra fields of each)."""
    flavors = ""
    for flavor, (nominal, extra) in (("a", a), ("b", b)):
        flavors += (
            f"    - name: {flavor}\n      resources:\n"
            f"      - {{name: cpu, nominalQuota: {nominal}{extra}}}\n"
            f"      - {{name: {GPU}, nominalQuota: {nominal}{extra}}}\n"
        )
    return (
        KUEUE + f"kind: ClusterQueue\nmetadata: {{name: {name}}}\nspec:\n"
        "  namespaceSelector: {}\n  cohort: all\n"
        f"  resourceGroups:\n  - coveredResources: [cpu, {GPU}]\n    flavors:\n" + flavors
    )


def queues() -> Queues:
    return queues_from_yaml(
        "---\n".join(
            [
                KUEUE + "kind: ResourceFlavor\nmetadata: {name: a}\n",
                KUEUE + "kind: ResourceFlavor\nmetadata: {name: b}\n",
                queue("q1", (4, ""), (2, ", borrowingLimit: 3")),
                queue("q2", (6, ", lendingLimit: 2"), (0, "")),
                queue("q3", (2, ", borrowingLimit: 1"), (5, ", lendingLimit: 4")),
            ]
        )
    )


def charge(rng: random.Random) -> dict[FlavorResource, int]:
    out: dict[FlavorResource, int] = {}
    for resource in ("cpu", GPU):
        amount = rng.randint(0, 3) * 1000
        if amount:
            out[(rng.choice("ab"), resource)] = amount
    return out


def test_retally_keeps_each_queues_sum_of_the_runs_counted() -> None:
    rng = random.Random(11)
    cqs = list(queues().cluster_queues.values())
    alloc = Allocation((0,), ((0,),), 0, 1, 1)
    totals: dict[str, dict[FlavorResource, int]] = {}
    counted: dict[Run, Charge] = {}
    for _ in range(300):
        after: dict[Run, Charge] = {}
        replaced: list[tuple[Run, Charge]] = []
        for run in rng.sample([(i, 0) for i in range(40)], rng.randint(0, 40)):
            before = counted.get(run)
            if before is not None and rng.random() < 0.8:
                after[run] = before
                continue
            after[run] = Charge(alloc, object(), rng.choice(cqs), charge(rng))  # type: ignore[arg-type]
            if before is not None:
                replaced.append((run, before))
        retally(totals, counted, after, replaced)
        counted = after
        expected: dict[str, dict[FlavorResource, int]] = {}
        for c in counted.values():
            for fr, amount in c.charge.items():
                total = expected.setdefault(c.cq.name, {})
                total[fr] = total.get(fr, 0) + amount
        assert totals == expected


def quota_start_long_way(
    cq: ClusterQueue, node: QuotaNode, request: dict[str, int], q: Queues, endings: list[Ending]
) -> tuple[Instant, int] | None:
    """``quota_start`` as it was: the flavor assignment tried after every end."""
    masks = {name: np.ones(4, dtype=np.bool_) for name in q.flavors}
    allowed = np.ones(4, dtype=np.bool_)
    root = node.cohort_root()
    undo = []
    try:
        for end, job_id, holder, held in endings:
            if holder.cohort_root() is not root:
                continue
            for fr, amount in held.items():
                holder.remove(fr, amount)
                undo.append((holder, fr, amount))
            found = assign(cq, node, request, q.flavors, masks, allowed, lambda m: True, {})
            if isinstance(found, Assignment):
                return end, job_id
        return None
    finally:
        for holder, fr, amount in reversed(undo):
            holder.add(fr, amount)


def test_quota_start_answers_as_assigning_after_every_end_does() -> None:
    rng = random.Random(5)
    q = queues()
    tree = QuotaTree(q)
    masks = {name: np.ones(4, dtype=np.bool_) for name in q.flavors}
    allowed = np.ones(4, dtype=np.bool_)
    answers = set()
    for _ in range(400):
        for n in [*tree.queues.values(), *tree.cohorts.values()]:
            n.usage.clear()
        endings: list[Ending] = []
        for job_id in range(rng.randint(0, 12)):
            holder = tree.queues[rng.choice(sorted(tree.queues))]
            held = charge(rng)
            for fr, amount in held.items():
                holder.add(fr, amount)
            endings.append((rng.randint(0, 100), job_id, holder, held))
        endings.sort(key=lambda e: (e[0], e[1]))
        cq = q.cluster_queues[rng.choice(sorted(q.cluster_queues))]
        node = tree.queues[cq.name]
        request = {"cpu": rng.randint(1, 9) * 1000, GPU: rng.randint(0, 9) * 1000}
        request = {r: a for r, a in request.items() if a}
        usage = {n.name: dict(n.usage) for n in tree.queues.values()}
        want = quota_start_long_way(cq, node, request, q, endings)
        got = quota_start(cq, node, request, q, masks, allowed, endings, {})
        assert got == want
        assert {n.name: dict(n.usage) for n in tree.queues.values()} == usage  # put back
        answers.add(got is None)
    assert answers == {True, False}  # both outcomes were met
