"""Quota accounting over the cohort tree, as Kueue keeps it (``pkg/cache/scheduler/
resource_node.go``): what each ClusterQueue may still take of each flavor's resource.

Every ClusterQueue and Cohort is a node with, per (flavor, resource):

- ``subtree``: its own nominal quota plus what its children lend it (each child's subtree
  less its ``local`` quota);
- ``local``: the part of its subtree it keeps from its parent (``subtree - lendingLimit``,
  0 with no lending limit);
- ``usage``: for a ClusterQueue, what its admitted workloads hold; for a Cohort, what its
  children use beyond their ``local`` quotas.

What a node may still take (``available``) is its unused local quota plus what its parent has
available, that parent share bounded by the node's ``borrowingLimit``. So a ClusterQueue
never holds more than ``nominalQuota + borrowingLimit``, and never lends more than its
``lendingLimit`` (the property tests in ``tests/properties`` hold both). A ClusterQueue with
no cohort is a root: it has its nominal quota and nothing else.

Quantities are integers (thousandths of the unit, ``phalanx.domain.quantity``). Usage changes
(``add``, ``remove``) walk up the tree; ``available`` walks up too: cheap for shallow trees.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from phalanx.domain.queues.kueue import ResourceQuota
from phalanx.domain.queues.model import Queues

__all__ = ["FlavorResource", "QuotaNode", "QuotaTree"]

FlavorResource = tuple[str, str]
"""(flavor name, resource name)."""


class QuotaNode:
    """One ClusterQueue or Cohort of the tree."""

    __slots__ = (
        "children",
        "is_queue",
        "lendable",
        "name",
        "parent",
        "plain",
        "quotas",
        "subtree",
        "usage",
    )

    def __init__(
        self, name: str, is_queue: bool, quotas: Iterable[tuple[str, ResourceQuota]]
    ) -> None:
        self.name = name
        self.is_queue = is_queue
        self.parent: QuotaNode | None = None
        self.children: list[QuotaNode] = []
        self.quotas: dict[FlavorResource, ResourceQuota] = {
            (flavor, q.name): q for flavor, q in quotas
        }
        self.subtree: dict[FlavorResource, int] = {}
        self.usage: dict[FlavorResource, int] = {}
        self.plain = False
        """No lending or borrowing limit on any of its quotas (set by ``QuotaTree``, once
        ``subtree`` is known): then its ``local`` quota is 0 everywhere, so what it may take is
        its parent's, and all it uses counts in the parent too (the methods' short way).
        """
        self.lendable: dict[str, int] = {}
        """What the root of this node's tree holds of each resource, over its flavors (its
        subtree quota, lending limits applied): what fair sharing's shares are of."""

    def nominal(self, fr: FlavorResource) -> int:
        q = self.quotas.get(fr)
        return q.nominal if q is not None else 0

    def local(self, fr: FlavorResource) -> int:
        """Quota this node keeps from its parent (Kueue's ``localQuota``)."""
        q = self.quotas.get(fr)
        if q is None or q.lending_limit is None:
            return 0
        return max(0, self.subtree.get(fr, 0) - q.lending_limit)

    def local_available(self, fr: FlavorResource) -> int:
        return max(0, self.local(fr) - self.usage.get(fr, 0))

    def available(self, fr: FlavorResource) -> int:
        """What this node may still take of ``fr`` (negative after over-admission)."""
        parent = self.parent
        if parent is None:
            return self.subtree.get(fr, 0) - self.usage.get(fr, 0)
        if self.plain:  # ``local`` is 0: ``local_available`` is 0 unless usage went below
            return max(0, -self.usage.get(fr, 0)) + parent.available(fr)
        from_parent = parent.available(fr)
        q = self.quotas.get(fr)
        if q is not None and q.borrowing_limit is not None:
            local = self.local(fr)
            stored_in_parent = self.subtree.get(fr, 0) - local
            used_in_parent = max(0, self.usage.get(fr, 0) - local)
            from_parent = min(stored_in_parent - used_in_parent + q.borrowing_limit, from_parent)
        return self.local_available(fr) + from_parent

    def potential(self, fr: FlavorResource) -> int:
        """The most this node could take with no usage anywhere (``potentialAvailable``)."""
        parent = self.parent
        if parent is None:
            return self.subtree.get(fr, 0)
        most = self.local(fr) + parent.potential(fr)
        q = self.quotas.get(fr)
        if q is not None and q.borrowing_limit is not None:
            most = min(self.subtree.get(fr, 0) + q.borrowing_limit, most)
        return most

    def add(self, fr: FlavorResource, amount: int) -> None:
        """Take ``amount`` more: what exceeds the unused local quota counts in the parent."""
        if self.plain:
            used = self.usage.get(fr, 0)
            self.usage[fr] = used + amount
            local_available = max(0, -used)  # ``local`` is 0
            if self.parent is not None and amount > local_available:
                self.parent.add(fr, amount - local_available)
            return
        local_available = self.local_available(fr)
        self.usage[fr] = self.usage.get(fr, 0) + amount
        if self.parent is not None and amount > local_available:
            self.parent.add(fr, amount - local_available)

    def remove(self, fr: FlavorResource, amount: int) -> None:
        """Give back ``amount``: the parent gets back what was counted there."""
        if self.plain:
            stored = self.usage.get(fr, 0)  # ``local`` is 0: all of it counted in the parent
            self.usage[fr] = stored - amount
            if stored > 0 and self.parent is not None:
                self.parent.remove(fr, min(amount, stored))
            return
        stored_in_parent = self.usage.get(fr, 0) - self.local(fr)
        self.usage[fr] = self.usage.get(fr, 0) - amount
        if stored_in_parent > 0 and self.parent is not None:
            self.parent.remove(fr, min(amount, stored_in_parent))

    def cohort_root(self) -> QuotaNode:
        node = self
        while node.parent is not None:
            node = node.parent
        return node


class QuotaTree:
    """Every ClusterQueue and Cohort of ``queues`` as quota nodes, with no usage.

    A cohort a ClusterQueue or Cohort names without a Cohort object is a root with no
    quota of its own, as in Kueue. Cohort parents must not loop (``config.queues`` refuses
    that)."""

    def __init__(self, queues: Queues) -> None:
        self.queues: dict[str, QuotaNode] = {}
        self.cohorts: dict[str, QuotaNode] = {}
        for cohort in queues.cohorts.values():
            self.cohorts[cohort.name] = QuotaNode(cohort.name, False, cohort.quotas())
        for cohort in queues.cohorts.values():
            if cohort.parent is not None:
                self._attach(self.cohorts[cohort.name], cohort.parent)
        for cq in queues.cluster_queues.values():
            node = self.queues[cq.name] = QuotaNode(cq.name, True, cq.quotas())
            if cq.cohort is not None:
                self._attach(node, cq.cohort)
        roots = [n for n in self.cohorts.values() if n.parent is None]
        roots += [n for n in self.queues.values() if n.parent is None]
        for root in roots:
            _fill_subtree(root)
        for node in (*self.cohorts.values(), *self.queues.values()):
            node.plain = all(
                q.lending_limit is None and q.borrowing_limit is None for q in node.quotas.values()
            )
        for root in roots:
            lendable: dict[str, int] = {}
            for (_, resource), amount in root.subtree.items():
                lendable[resource] = lendable.get(resource, 0) + amount
            _fill_lendable(root, lendable)

    def _attach(self, node: QuotaNode, cohort: str) -> None:
        parent = self.cohorts.get(cohort)
        if parent is None:
            parent = self.cohorts[cohort] = QuotaNode(cohort, False, ())
        node.parent = parent
        parent.children.append(node)

    def usage_of(self, queue: str) -> Mapping[FlavorResource, int]:
        return self.queues[queue].usage


def _fill_lendable(node: QuotaNode, lendable: dict[str, int]) -> None:
    node.lendable = lendable
    for child in node.children:
        _fill_lendable(child, lendable)


def _fill_subtree(node: QuotaNode) -> None:
    """Subtree quotas bottom up (Kueue's ``updateCohortResourceNode``)."""
    node.subtree = {fr: q.nominal for fr, q in node.quotas.items()}
    for child in node.children:
        _fill_subtree(child)
        for fr, amount in child.subtree.items():
            node.subtree[fr] = node.subtree.get(fr, 0) + amount - child.local(fr)
