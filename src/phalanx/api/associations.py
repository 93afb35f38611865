"""What ``GET /v1/associations`` answers: the associations and QOS with their limits, as
``sacctmgr show assoc`` and ``sacctmgr show qos`` print them (``phalanx.slurm.sacctmgr``).

Associations come in Slurm's order: depth first from ``root``, each account, then its users
by name, then its sub-accounts by name. ``MaxJobs``, ``MaxSubmit`` and ``MaxTRES`` are the
inherited values (an association that sets none shows its nearest parent's), as sacctmgr
shows them; ``Grp`` limits are each association's own.
"""

from __future__ import annotations

from typing import Any

from phalanx.domain.associations import Association, Associations, format_tres
from phalanx.domain.cluster import Cluster, PreemptMode, Qos

__all__ = ["association_rows", "qos_rows"]

Row = dict[str, Any]


def _count(value: int | None) -> str:
    return "" if value is None else str(value)


def _assoc_row(cluster: Cluster, assocs: Associations, assoc: Association, depth: int) -> Row:
    own = assoc.limits
    inherited = assocs.inherited(assoc.account, assoc.user)
    return {
        "cluster": cluster.name,
        "account": assoc.account,
        "user": assoc.user,
        "parent": assocs.parents.get(assoc.account) if not assoc.user else assoc.account,
        "depth": depth,
        "share": assoc.shares,
        "grp_jobs": _count(own.grp_jobs),
        "grp_tres": format_tres(own.grp_tres),
        "grp_submit": _count(own.grp_submit),
        "max_jobs": _count(inherited.max_jobs),
        "max_tres": format_tres(inherited.max_tres),
        "max_submit": _count(inherited.max_submit),
        "qos": ",".join(sorted(assoc.qos or ("normal",))),
        "default_qos": assoc.default_qos,
    }


def _complete(cluster: Cluster) -> Associations:
    """The cluster's associations, with one (no limits) for every account that has none
    and Slurm's first, user root in account root (a cluster not read from YAML has none)."""
    found = dict(cluster.associations.by_key)
    for name, acct in cluster.accounts.items():
        found.setdefault((name, ""), Association(name, shares=acct.shares))
    found.setdefault(("root", "root"), Association("root", "root"))
    parents = {name: acct.parent for name, acct in cluster.accounts.items()}
    return Associations(found, {**parents, **cluster.associations.parents})


def association_rows(cluster: Cluster) -> list[Row]:
    """Every association (module docstring), ``depth`` 0 for ``root``."""
    assocs = _complete(cluster)
    users: dict[str, list[Association]] = {}
    children: dict[str | None, list[str]] = {}
    for (account, user), assoc in assocs.by_key.items():
        if user:
            users.setdefault(account, []).append(assoc)
        else:
            children.setdefault(assocs.parents.get(account), []).append(account)
    out: list[Row] = []

    def walk(account: str, depth: int) -> None:
        own = assocs.by_key.get((account, ""))
        if own is not None:
            out.append(_assoc_row(cluster, assocs, own, depth))
        for assoc in sorted(users.get(account, []), key=lambda a: a.user):
            out.append(_assoc_row(cluster, assocs, assoc, depth + 1))
        for child in sorted(children.get(account, [])):
            walk(child, depth + 1)

    for top in sorted(children.get(None, [])):
        walk(top, 0)
    return out


def _hms(ms: int) -> str:
    seconds = ms // 1000
    days, seconds = divmod(seconds, 86400)
    text = f"{seconds // 3600:02d}:{seconds % 3600 // 60:02d}:{seconds % 60:02d}"
    return f"{days}-{text}" if days else text


def _qos_row(qos: Qos) -> Row:
    lim = qos.limits
    # Phalanx's default mode stands for Slurm's unset one, which sacctmgr shows as cluster.
    mode = qos.preempt_mode
    unset = mode is PreemptMode.REQUEUE and not qos.preempt
    return {
        "name": qos.name,
        "priority": qos.priority,
        "grace_time": _hms(qos.grace_time),
        "preempt": ",".join(sorted(qos.preempt)),
        "preempt_mode": "cluster" if unset else mode.value,
        "usage_factor": "1.000000",
        "grp_tres": format_tres(lim.grp_tres),
        "grp_jobs": _count(lim.grp_jobs),
        "grp_submit": _count(lim.grp_submit),
        "max_tres": format_tres(lim.max_tres),
        "max_tres_pu": format_tres(lim.max_tres_per_user),
        "max_jobs_pu": _count(lim.max_jobs),
        "max_submit_pu": _count(lim.max_submit),
    }


def qos_rows(cluster: Cluster) -> list[Row]:
    """Every QOS, ``normal`` first then in definition order (Slurm lists by id)."""
    ordered = sorted(cluster.qos.values(), key=lambda q: q.name != "normal")
    return [_qos_row(q) for q in ordered]
