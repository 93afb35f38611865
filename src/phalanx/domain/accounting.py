"""``sacctmgr add|modify|delete account|user|qos``: a change of the accounting (accounts,
associations, QOS and their limits) as a pure function of the cluster, with what sacctmgr
prints for it (Slurm 22.05's words, ``tests/slurm/sacctmgr_changes_reference.txt``).

The controller calls ``change`` to check a request and answer it, journals it
(``engine.events.AccountingChange``), and the engine applies the same change when it handles
it: a restarted controller replays it, so the change survives. ``AccountingError`` (bad
input, with sacctmgr's message) changes nothing.

Supported: ``add account NAME [parent=P] [fairshare=N] [limits]``, ``add user NAME
account=A [fairshare=N] [limits] [qos=...] [defaultqos=Q]``, ``add qos NAME [priority=N]
[limits]``; ``modify account|user|qos NAME ... set k=v ...`` (a user in every account it has,
or those named by ``account=``); ``delete account|user|qos NAME`` (``account=`` for a user).
Limits are ``config.associations``' keys (``GrpTRES``, ``MaxJobs``, ...; ``-1`` clears one).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence

from phalanx.domain.associations import Association, Associations, Limits, apply_settings
from phalanx.domain.cluster import Account, Cluster, Qos

__all__ = ["AccountingError", "change"]

_IGNORED = {"description", "organization", "cluster", "clusters"}
_ACCOUNT_KEYS = {"parent", "fairshare", "qos", "defaultqos"}
_QOS_KEYS = {"priority"}


class AccountingError(ValueError):
    """A change sacctmgr refuses; the message is what it prints."""


def _split(settings: Sequence[tuple[str, str]]) -> tuple[dict[str, str], dict[str, str]]:
    """(own keys lower-cased, limit settings) of ``settings``."""
    own: dict[str, str] = {}
    limits: dict[str, str] = {}
    for key, value in settings:
        lower = key.lower()
        if lower in _IGNORED:
            continue
        if lower in _ACCOUNT_KEYS or lower in _QOS_KEYS:
            own[lower] = value
        else:
            limits[key] = value
    return own, limits


def _limits(base: Limits, limits: Mapping[str, str], qos: bool = False) -> Limits:
    try:
        return apply_settings(base, limits, qos)
    except ValueError as exc:
        raise AccountingError(f" Unknown option: {exc}") from None


def _count(own: Mapping[str, str], key: str, default: int) -> int:
    value = own.get(key)
    if value is None:
        return default
    if not value.isdecimal():
        raise AccountingError(f" Bad {key} value: {value}")
    return int(value)


def _assoc(base: Association, own: Mapping[str, str], limits: Mapping[str, str]) -> Association:
    qos = own.get("qos")
    return dataclasses.replace(
        base,
        shares=_count(own, "fairshare", base.shares),
        limits=_limits(base.limits, limits),
        qos=tuple(q for q in qos.split(",") if q) if qos is not None else base.qos,
        default_qos=own.get("defaultqos", base.default_qos),
    )


def change(
    cluster: Cluster,
    verb: str,
    entity: str,
    names: Sequence[str],
    where: Sequence[tuple[str, str]],
    settings: Sequence[tuple[str, str]],
) -> tuple[Cluster, list[str]]:
    """The cluster after the change, and what sacctmgr prints (module docstring)."""
    if not names:
        raise AccountingError(f" No {entity} name given")
    filters = {k.lower(): v for k, v in where}
    own, limits = _split(settings)
    assocs = dict(cluster.associations.by_key)
    for name, acct in cluster.accounts.items():
        assocs.setdefault((name, ""), Association(name, shares=acct.shares))
    accounts = dict(cluster.accounts)
    qos = dict(cluster.qos)
    out: list[str] = []
    c = cluster.name
    if (verb, entity) == ("add", "account"):
        parent = own.get("parent", filters.get("parent", "root"))
        if parent not in accounts:
            raise AccountingError(f" The parent account {parent} doesn't exist.")
        out += [" Adding Account(s)", *(f"  {n}" for n in names), " Settings"]
        out += ["  Description     = Account Name", "  Organization    = Parent/Account Name"]
        out += [" Associations", *(f"  A = {n:<10} C = {c:<10}" for n in names), " Settings"]
        for n in names:
            accounts[n] = Account(n, parent, _count(own, "fairshare", 1))
            assocs[(n, "")] = _assoc(Association(n), own, limits)
        out += _shown_settings(settings, parent)
    elif (verb, entity) == ("add", "user"):
        account = own.get("account", filters.get("account", ""))
        account = account or dict((k.lower(), v) for k, v in settings).get("account", "")
        if account not in accounts:
            raise AccountingError(
                f" This account '{account}' doesn't exist.\n        Contact your admin to add "
                "this account.\n No associations or wckeys created."
            )
        out += [" Adding User(s)", *(f"  {n}" for n in names), " Associations ="]
        out += [f"  U = {n:<9} A = {account:<10} C = {c:<10}" for n in names]
        for n in names:
            assocs[(account, n)] = _assoc(Association(account, n), own, limits)
        shown = [(k, v) for k, v in settings if k.lower() not in ("account", *_IGNORED)]
        if shown:
            out += [" Non Default Settings", *(f"  {k:<13} = {v}" for k, v in shown)]
    elif (verb, entity) == ("add", "qos"):
        out += [" Adding QOS(s)", *(f"  {n}" for n in names), " Settings"]
        out.append(f"  {'Description':<14} = {names[0]}")
        for n in names:
            limited = _limits(Limits(), limits, True)
            qos[n] = Qos(n, priority=_count(own, "priority", 0), limits=limited)
        out += _qos_settings(settings)
    elif verb == "modify" and entity in ("account", "user"):
        hit = _targets(assocs, entity, names, filters)
        if not hit:
            raise AccountingError(" Nothing modified")
        out.append(f" Modified {entity} associations...")
        if entity == "account" and "parent" in own:
            for account, _ in sorted(hit):
                _move(accounts, account, own["parent"])
        for key in hit:
            assocs[key] = _assoc(assocs[key], own, limits)
            if entity == "account":
                accounts[key[0]] = dataclasses.replace(accounts[key[0]], shares=assocs[key].shares)
        shown = sorted(hit | (_users_of(assocs, hit) if entity == "account" else set()))
        for account, user in shown:
            if user:
                out.append(f"  C = {c:<10} A = {account:<20} U = {user:<9}")
            else:
                out.append(f"  C = {c:<10} A = {account} of {accounts[account].parent}")
    elif (verb, entity) == ("modify", "qos"):
        found = [n for n in names if n in qos]
        if not found:
            raise AccountingError(" Nothing modified")
        for n in found:
            q = qos[n]
            qos[n] = dataclasses.replace(
                q,
                priority=_count(own, "priority", q.priority),
                limits=_limits(q.limits, limits, True),
            )
        out += [" Modified qos...", *(f"  {n}" for n in found)]
    elif verb == "delete" and entity == "user":
        hit = _targets(assocs, "user", names, filters)
        if not hit:
            raise AccountingError(" Nothing deleted")
        out.append(" Deleting user associations...")
        for account, user in sorted(hit):
            out.append(f"  C = {c:<10} A = {account:<10} U = {user:<9}")
            del assocs[(account, user)]
        gone = sorted({u for _, u in hit} - {u for _, u in assocs})
        if gone:
            out += [" Deleting users (No Associations)...", *(f"  {u}" for u in gone)]
    elif (verb, entity) == ("delete", "qos"):
        found = [n for n in names if n in qos and n != "normal"]
        if not found:
            raise AccountingError(" Nothing deleted")
        for n in found:
            del qos[n]
        out += [" Deleting QOS(s)...", *(f"  {n}" for n in found)]
    elif (verb, entity) == ("delete", "account"):
        found = [n for n in names if n in accounts and n != "root"]
        if not found:
            raise AccountingError(" Nothing deleted")
        for n in found:
            if any(a.parent == n for a in accounts.values()):
                raise AccountingError(f" Account {n} has child accounts: delete them first")
            del accounts[n]
            for key in [k for k in assocs if k[0] == n]:
                del assocs[key]
        out += [" Deleting accounts...", *(f"  {n}" for n in found)]
    else:
        raise AccountingError(f" Not provided: sacctmgr {verb} {entity}")
    parents = {name: acct.parent for name, acct in accounts.items()}
    updated = dataclasses.replace(
        cluster,
        accounts=accounts,
        qos=qos,
        associations=Associations(assocs, parents),
    )
    return updated, out


def _move(accounts: dict[str, Account], name: str, parent: str) -> None:
    """``name`` under ``parent``, keeping the accounts a tree: set unchecked, ``parent=root``
    on root or an account under its own child made a cycle, and the fair-share walk from root
    then recursed without end (a 500 on every ``sshare``)."""
    if parent not in accounts:
        raise AccountingError(f" The parent account {parent} doesn't exist.")
    if name == "root":
        raise AccountingError(" The root account can't be given a parent.")
    if parent == name:
        raise AccountingError(f" Account {name} can't be its own parent.")
    # As slurmdbd (as_mysql_assoc.c, _move_parent): a new parent that is below the account is
    # first moved up to the account's old parent, then the account goes under it.
    above = accounts[parent].parent
    for _ in range(len(accounts)):  # bounded: the accounts are a tree
        if above is None:
            break
        if above == name:
            accounts[parent] = dataclasses.replace(accounts[parent], parent=accounts[name].parent)
            break
        above = accounts[above].parent if above in accounts else None
    accounts[name] = dataclasses.replace(accounts[name], parent=parent)


def _targets(
    assocs: Mapping[tuple[str, str], Association],
    entity: str,
    names: Sequence[str],
    filters: Mapping[str, str],
) -> set[tuple[str, str]]:
    wanted = set(names)
    if entity == "account":
        return {k for k in assocs if k[0] in wanted and not k[1]}
    accounts = {a for a in filters.get("account", "").split(",") if a}
    return {k for k in assocs if k[1] in wanted and (not accounts or k[0] in accounts)}


def _users_of(
    assocs: Mapping[tuple[str, str], Association], hit: set[tuple[str, str]]
) -> set[tuple[str, str]]:
    accounts = {a for a, _ in hit}
    return {k for k in assocs if k[1] and k[0] in accounts}


def _shown_settings(settings: Sequence[tuple[str, str]], parent: str) -> list[str]:
    """``add account``'s second Settings block: the association's settings by name, the
    parent last (as sacctmgr lists them)."""
    names = {
        "fairshare": "Fairshare",
        "grptres": "GrpTRES",
        "grpjobs": "GrpJobs",
        "maxjobs": "MaxJobs",
        "maxsubmitjobs": "MaxSubmitJobs",
        "maxtres": "MaxTRES",
        "grpsubmitjobs": "GrpSubmitJobs",
    }
    shown = []
    for key, value in settings:
        lower = key.lower()
        if lower in _IGNORED or lower == "parent":
            continue
        shown.append(f"  {names.get(lower, key):<13} = {value}")
    return [*sorted(shown), f"  {'Parent':<13} = {parent}"]


_QOS_ORDER = (
    "GrpJobs",
    "GrpSubmitJobs",
    "GrpTRES",
    "MaxJobsPerUser",
    "MaxSubmitJobsPerUser",
    "MaxTRESPerJob",
    "MaxTRESPerUser",
    "Priority",
)
_QOS_NARROW = ("Description", "MaxJobsPerUser")
"""``add qos``'s Settings block: sacctmgr prints these names in 14 columns, the others in 24,
in the order of ``_QOS_ORDER``."""


def _qos_settings(settings: Sequence[tuple[str, str]]) -> list[str]:
    canonical = {name.lower(): name for name in _QOS_ORDER}
    canonical.update({"maxtres": "MaxTRESPerJob", "grpsubmit": "GrpSubmitJobs"})
    shown = []
    for key, value in settings:
        name = canonical.get(key.lower(), key)
        rank = _QOS_ORDER.index(name) if name in _QOS_ORDER else len(_QOS_ORDER)
        width = 14 if name in _QOS_NARROW else 24
        shown.append((rank, f"  {name:<{width}} = {value}"))
    return [line for _, line in sorted(shown)]
