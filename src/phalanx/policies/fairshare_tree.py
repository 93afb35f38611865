"""Fair share over the account tree: the classic factor and Fair Tree ordering.

Classic (Slurm's original): F = 2^(-U/S), with S the account's normalised shares (product of
its share fraction at each level) and U its decayed usage as a fraction of all usage.

Fair Tree (Slurm's default since 19.05): at every level siblings are ranked by level fair
share LF = S_level / U_level; a depth-first walk in that order ranks the leaf accounts, and an
account's factor is its rank normalised to (0, 1] (the best ranked gets 1).
"""

from __future__ import annotations

from mypy_extensions import mypyc_attr

from phalanx.domain.cluster import Cluster
from phalanx.domain.fairshare import classic_factor
from phalanx.sched.usage import Usage

__all__ = ["FairShareTree"]

_INF = float("inf")


@mypyc_attr(allow_interpreted_subclasses=True)
class FairShareTree:
    """Factors for every account, recomputed from a ``Usage`` on demand."""

    def __init__(self, cluster: Cluster, usage: Usage, algorithm: str = "fair_tree") -> None:
        self.cluster = cluster
        self.usage = usage
        self.algorithm = algorithm
        self._children: dict[str, list[str]] = {}
        for acct in cluster.accounts.values():
            if acct.parent is not None:
                self._children.setdefault(acct.parent, []).append(acct.name)
        self._factors: dict[str, float] = {}

    def _ensure(self, account: str) -> None:
        # Accounts seen only in jobs (trace teams) hang under root with one share.
        if account in self.cluster.accounts or account == "root":
            return
        kids = self._children.setdefault("root", [])
        if account not in kids:
            kids.append(account)

    def _shares(self, account: str) -> int:
        acct = self.cluster.accounts.get(account)
        return acct.shares if acct is not None else 1

    _ensured: set[str] | None = None
    """Accounts ``refresh`` has placed in the tree already (a class default, so a tree
    pickled before it existed makes its own on first use)."""

    def refresh(self, accounts: set[str]) -> None:
        # Only accounts new since the last refresh can change the tree (a placed one stays),
        # and they are placed in the same sorted order as ever.
        ensured = self._ensured
        if ensured is None:
            ensured = self._ensured = set()
        new = accounts - ensured
        if new:
            for a in sorted(new):
                self._ensure(a)
            ensured |= new
        if self.algorithm == "classic":
            self._factors = self._classic()
        else:
            self._factors = self._fair_tree()

    def factor(self, account: str) -> float:
        return self._factors.get(account, 1.0)

    def norm_shares(self) -> dict[str, float]:
        """Each account's share of the whole cluster (root 1.0)."""
        return self._norm_shares()

    def _norm_shares(self) -> dict[str, float]:
        out: dict[str, float] = {"root": 1.0}
        stack = ["root"]
        while stack:
            parent = stack.pop()
            kids = self._children.get(parent, [])
            total = sum(self._shares(k) for k in kids) or 1
            for k in kids:
                out[k] = out[parent] * self._shares(k) / total
                stack.append(k)
        return out

    def _classic(self) -> dict[str, float]:
        total = self.usage.of("root") or 1.0
        shares = self._norm_shares()
        return {a: classic_factor(self.usage.of(a) / total, s) for a, s in shares.items()}

    def _fair_tree(self) -> dict[str, float]:
        leaves: list[str] = []
        children = self._children
        accounts = self.cluster.accounts
        raw = self.usage.raw

        def walk(parent: str) -> None:
            kids = children.get(parent, [])
            if not kids:
                leaves.append(parent)
                return
            # Each kid's shares and usage read once (``_shares``, ``Usage.of``), the sums over
            # them in the same order: the same floats as computing them per comparison.
            shares = [a.shares if (a := accounts.get(k)) is not None else 1 for k in kids]
            uses = [raw.get(k, 0.0) for k in kids]
            share_total = sum(shares) or 1
            use_total = sum(uses)
            ranked = []
            for k, sh, us in zip(kids, shares, uses, strict=True):
                s = sh / share_total
                u = us / use_total if use_total > 0 else 0.0
                # Siblings by level fair share S/U, highest first, then by name (unique).
                ranked.append((-(s / u) if u > 0 else -_INF, k))
            ranked.sort()
            for _, k in ranked:
                if children.get(k):
                    walk(k)
                else:
                    leaves.append(k)  # ``walk``'s own first step, without the call

        walk("root")
        n = len(leaves)
        return {a: (n - i) / n for i, a in enumerate(leaves)}
