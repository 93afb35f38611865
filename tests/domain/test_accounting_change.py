"""``sacctmgr modify account ... set parent=P`` keeps the accounts a tree.

Found with hostile sacctmgr input: ``set parent=root`` on root, or moving an account under its
own child, was applied as given; the fair-share walk from root then recursed without end, so
every ``sshare`` answered 500 (RecursionError in ``policies/fairshare_tree``)."""

from __future__ import annotations

import pytest

from phalanx.config.clusterspec import cluster_from_yaml
from phalanx.domain.accounting import AccountingError, change
from phalanx.domain.cluster import Cluster
from phalanx.server.localcluster import cluster_yaml


def _tree() -> Cluster:
    """root > a > b > c."""
    cluster = cluster_from_yaml(cluster_yaml(2, 8))
    for name, parent in (("a", "root"), ("b", "a"), ("c", "b")):
        cluster, _ = change(cluster, "add", "account", [name], [], [("parent", parent)])
    return cluster


def _parents(cluster: Cluster) -> dict[str, str | None]:
    return {n: a.parent for n, a in cluster.accounts.items() if n in ("root", "a", "b", "c")}


def test_an_account_moved_under_its_own_descendant_swaps_as_slurmdbd_does() -> None:
    # slurmdbd's _move_parent: the descendant (c) first goes up to a's old parent (root).
    cluster, _ = change(_tree(), "modify", "account", ["a"], [], [("parent", "c")])
    assert _parents(cluster) == {"root": None, "a": "c", "b": "a", "c": "root"}
    cluster, _ = change(_tree(), "modify", "account", ["b"], [], [("parent", "c")])
    assert _parents(cluster) == {"root": None, "a": "root", "b": "c", "c": "a"}


@pytest.mark.parametrize(
    ("name", "parent", "message"),
    [
        ("root", "root", "root account can't be given a parent"),
        ("root", "a", "root account can't be given a parent"),
        ("a", "a", "can't be its own parent"),
        ("a", "nosuch", "The parent account nosuch doesn't exist."),
    ],
)
def test_a_parent_that_breaks_the_tree_is_refused(name: str, parent: str, message: str) -> None:
    before = _tree()
    with pytest.raises(AccountingError, match=message):
        change(before, "modify", "account", [name], [], [("parent", parent)])
    assert _parents(before) == {"root": None, "a": "root", "b": "a", "c": "b"}


def test_a_plain_move_still_moves() -> None:
    cluster, lines = change(_tree(), "modify", "account", ["c"], [], [("parent", "a")])
    assert _parents(cluster)["c"] == "a"
    assert any("A = c of a" in line for line in lines)
