"""Kueue's quota tree: borrowing within nominal + borrowingLimit, lending within
lendingLimit, Cohort quota shared by a subtree (numbers from Kueue's documentation)."""

from __future__ import annotations

from phalanx.domain.queues import (
    ClusterQueue,
    Cohort,
    FlavorQuotas,
    Queues,
    ResourceGroup,
    ResourceQuota,
)
from phalanx.domain.queues.quota import QuotaTree

CPU = ("default-flavor", "cpu")


def _cq(name: str, nominal: int, cohort: str | None = "team-ab", **limits: int) -> ClusterQueue:
    quota = ResourceQuota("cpu", nominal * 1000, **{k: v * 1000 for k, v in limits.items()})
    group = ResourceGroup(("cpu",), (FlavorQuotas("default-flavor", (quota,)),))
    return ClusterQueue(name, (group,), cohort=cohort)


def _tree(*cqs: ClusterQueue, cohorts: tuple[Cohort, ...] = ()) -> QuotaTree:
    return QuotaTree(
        Queues(
            cluster_queues={cq.name: cq for cq in cqs},
            cohorts={c.name: c for c in cohorts},
        )
    )


def test_borrowing_example() -> None:
    """cluster_queue.md, "Borrowing example": team-a-cq (9 CPUs) may take 9+12=21 while
    team-b-cq (12) is idle."""
    tree = _tree(_cq("team-a-cq", 9), _cq("team-b-cq", 12))
    assert tree.queues["team-a-cq"].available(CPU) == 21_000
    tree.queues["team-b-cq"].add(CPU, 12_000)
    assert tree.queues["team-a-cq"].available(CPU) == 9_000


def test_borrowing_limit_example() -> None:
    """cluster_queue.md, "BorrowingLimit": team-a-cq (9, borrowingLimit 1) may take 9+1=10
    while team-b-cq is idle; team-b-cq (no limit) may take 12+9."""
    tree = _tree(_cq("team-a-cq", 9, borrowing_limit=1), _cq("team-b-cq", 12))
    assert tree.queues["team-a-cq"].available(CPU) == 10_000
    assert tree.queues["team-b-cq"].available(CPU) == 21_000


def test_lending_limit_example() -> None:
    """cluster_queue.md, "LendingLimit": team-b-cq (12, lendingLimit 1) lends at most 1, so
    team-a-cq (9) may take 9+1=10; team-b-cq keeps 12-1=11 for itself whatever a uses."""
    tree = _tree(_cq("team-a-cq", 9), _cq("team-b-cq", 12, lending_limit=1))
    a, b = tree.queues["team-a-cq"], tree.queues["team-b-cq"]
    assert a.available(CPU) == 10_000
    a.add(CPU, 10_000)
    assert a.available(CPU) == 0
    assert b.available(CPU) == 11_000


def test_no_cohort_means_nominal_only() -> None:
    tree = _tree(_cq("alone", 9, cohort=None), _cq("team-b-cq", 12))
    assert tree.queues["alone"].available(CPU) == 9_000
    assert tree.queues["alone"].potential(CPU) == 9_000


def test_a_cohort_object_brings_quota_its_members_share() -> None:
    """cohort.md: a Cohort's own resourceGroups are shared by its subtree; a child cohort's
    borrowingLimit bounds what its subtree takes from its parent."""
    root_quota = ResourceGroup(
        ("cpu",), (FlavorQuotas("default-flavor", (ResourceQuota("cpu", 10_000),)),)
    )
    child_limit = ResourceGroup(
        ("cpu",),
        (FlavorQuotas("default-flavor", (ResourceQuota("cpu", 0, borrowing_limit=4_000),)),),
    )
    tree = _tree(
        _cq("a", 2, cohort="child"),
        _cq("b", 3, cohort="root"),
        cohorts=(
            Cohort("root", resource_groups=(root_quota,)),
            Cohort("child", parent="root", resource_groups=(child_limit,)),
        ),
    )
    a, b = tree.queues["a"], tree.queues["b"]
    assert a.available(CPU) == 2_000 + 4_000  # its own 2, and at most 4 through child
    assert b.available(CPU) == 3_000 + 10_000 + 2_000  # root's 10 and a's unused 2
    a.add(CPU, 6_000)
    assert b.available(CPU) == 9_000
    a.remove(CPU, 6_000)
    assert b.available(CPU) == 15_000
