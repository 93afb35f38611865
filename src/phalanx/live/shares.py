"""The fair-share tree as ``sshare`` shows it, computed from a controller's engine."""

from __future__ import annotations

import copy

from phalanx.domain.cluster import Cluster
from phalanx.domain.fairshare import ShareRow
from phalanx.domain.time import Instant
from phalanx.engine import Engine

__all__ = ["share_rows"]


def share_rows(cluster: Cluster, engine: Engine, now: Instant) -> list[ShareRow]:
    """Shares, usage and factor per account, with usage decayed to ``now``."""
    from phalanx.policies.fairshare_tree import FairShareTree

    # A copy brought to now: the engine's own usage moves only with its events, or a
    # replay of the journal would not find the state this query left behind.
    usage = copy.copy(engine.usage)
    usage.raw = dict(usage.raw)
    usage.advance(now, dict(engine.state.account_gpus))
    accounts = set(cluster.accounts) | {j.account for j in engine.jobs.values()}
    tree = FairShareTree(cluster, usage)
    tree.refresh(accounts)
    norm = tree.norm_shares()
    total = usage.of("root") or 1.0
    out = []
    for name in sorted(norm, key=lambda a: (len(usage.path(a)), a)):
        acct = cluster.accounts.get(name)
        parent = acct.parent if acct is not None else (None if name == "root" else "root")
        out.append(
            ShareRow(
                account=name,
                parent=parent,
                raw_shares=acct.shares if acct is not None else 1,
                norm_shares=norm[name],
                raw_usage=usage.of(name) / 1000.0,  # GPU-seconds, decayed
                effective_usage=usage.of(name) / total,
                fairshare=tree.factor(name),
            )
        )
    return out
