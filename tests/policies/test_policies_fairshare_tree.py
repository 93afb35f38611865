"""Fair Tree: factors follow Slurm's ranking by level fair share, whatever order the accounts
were first seen in (the tree places only accounts new since its last refresh)."""

from __future__ import annotations

import dataclasses
import random

from phalanx.domain.cluster import Account, Cluster
from phalanx.policies.fairshare_tree import FairShareTree
from phalanx.sched.usage import Usage
from phalanx.testing import small_cluster


def _cluster() -> Cluster:
    base = small_cluster()
    accounts = {
        "root": Account("root", None),
        "ml": Account("ml", "root", 3),
        "vision": Account("vision", "ml", 2),
        "speech": Account("speech", "ml", 1),
        "infra": Account("infra", "root", 1),
    }
    return dataclasses.replace(base, accounts=accounts)


def _reference(cluster: Cluster, raw: dict[str, float], seen: set[str]) -> dict[str, float]:
    """Fair Tree written plainly: trace accounts hang under root with one share; at each
    level siblings go by S/U highest first (no usage: first of all), then by name; leaves are
    ranked depth first, the first getting 1."""
    kids: dict[str, list[str]] = {}
    for acct in cluster.accounts.values():
        if acct.parent is not None:
            kids.setdefault(acct.parent, []).append(acct.name)
    for name in seen - set(cluster.accounts) - {"root"}:
        kids.setdefault("root", []).append(name)

    def shares(name: str) -> int:
        acct = cluster.accounts.get(name)
        return acct.shares if acct is not None else 1

    leaves: list[str] = []

    def walk(parent: str) -> None:
        below = kids.get(parent, [])
        if not below:
            leaves.append(parent)
            return
        s_total = sum(shares(k) for k in below)
        u_total = sum(raw.get(k, 0.0) for k in below)

        def level(k: str) -> float:
            u = raw.get(k, 0.0) / u_total if u_total > 0 else 0.0
            return (shares(k) / s_total) / u if u > 0 else float("inf")

        for k in sorted(below, key=lambda k: (-level(k), k)):
            walk(k)

    walk("root")
    return {a: (len(leaves) - i) / len(leaves) for i, a in enumerate(leaves)}


def _usage(cluster: Cluster, rng: random.Random, names: list[str]) -> Usage:
    usage = Usage(cluster)
    for name in names:
        usage.raw[name] = rng.choice([0.0, rng.uniform(1e6, 1e9)])
    return usage


def test_factors_match_the_plain_ranking_as_accounts_appear_over_refreshes() -> None:
    cluster = _cluster()
    rng = random.Random(7)
    trace = ["t-" + c for c in "qwertyuiop"]
    usage = Usage(cluster)
    tree = FairShareTree(cluster, usage)
    seen: set[str] = set()
    for step in range(12):
        # A few accounts more each time (in no sorted order), usage redrawn for all.
        seen |= set(rng.sample(trace, 3)) | {"vision", "speech", "infra"}
        usage.raw.clear()
        usage.raw.update(_usage(cluster, rng, sorted(seen)).raw)
        tree.refresh(set(usage.raw))
        expected = _reference(cluster, usage.raw, seen)
        for name in sorted(seen):
            assert tree.factor(name) == expected[name], (step, name)
        # A tree built now, seeing every account at once, agrees.
        fresh = FairShareTree(cluster, usage)
        fresh.refresh(set(usage.raw))
        assert {a: fresh.factor(a) for a in seen} == {a: tree.factor(a) for a in seen}


def test_an_account_with_no_usage_ranks_first_among_its_siblings() -> None:
    cluster = _cluster()
    usage = Usage(cluster)
    usage.raw.update({"vision": 5.0, "speech": 0.0, "infra": 1.0, "ml": 5.0})
    tree = FairShareTree(cluster, usage)
    tree.refresh(set(usage.raw))
    # Under ml, speech (no usage) comes before vision; ml (S 3/4, U 5/6 -> 0.9) comes after
    # infra (S 1/4, U 1/6 -> 1.5).
    assert tree.factor("infra") == 1.0
    assert tree.factor("speech") > tree.factor("vision")
