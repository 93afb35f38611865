"""Slurm's associations and QOS limits from the cluster YAML and from ``sacctmgr`` settings.

YAML (``associations:`` and limit keys on ``qos:`` entries of the cluster file; Slurm's
spellings, as ``sacctmgr ... set`` takes them)::

    associations:
      - {account: team-a, GrpTRES: "gres/gpu=16", GrpJobs: 8, MaxJobs: 4, MaxSubmitJobs: 10}
      - {account: team-a, user: alice, MaxJobs: 2, GrpTRES: "cpu=8,gres/gpu=4",
         QOS: [normal, gpu16], DefaultQOS: normal, Fairshare: 1}
    qos:
      - {name: gpu16, priority: 10, GrpTRES: "gres/gpu=16", MaxTRESPerUser: "gres/gpu=8",
         MaxJobsPerUser: 3, MaxSubmitJobsPerUser: 5}

An account association names an account of ``accounts:`` (or ``root``); every account has
one, with no limits, unless given here. ``-1`` clears a limit, as in ``sacctmgr``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from phalanx.config.yamlfield import YamlField
from phalanx.domain.associations import Association, Associations, Limits, apply_settings
from phalanx.domain.cluster import Account

__all__ = [
    "ASSOC_KEYS",
    "QOS_LIMIT_KEYS",
    "apply_settings",
    "associations_from_yaml",
    "qos_limits_from_yaml",
]

ASSOC_KEYS = ("GrpTRES", "GrpJobs", "GrpSubmitJobs", "MaxJobs", "MaxSubmitJobs", "MaxTRES")
QOS_LIMIT_KEYS = (
    "GrpTRES",
    "GrpJobs",
    "GrpSubmitJobs",
    "MaxTRESPerJob",
    "MaxTRESPerUser",
    "MaxJobsPerUser",
    "MaxSubmitJobsPerUser",
)


def _settings(spec: Mapping[str, YamlField], keys: Iterable[str]) -> dict[str, str]:
    return {key: spec[key].text() for key in keys if key in spec}


def _limits(spec: Mapping[str, YamlField], keys: Iterable[str], qos: bool) -> Limits:
    limits = Limits()
    for key in keys:
        if key in spec:
            try:
                limits = apply_settings(limits, {key: spec[key].text()}, qos)
            except ValueError as exc:
                raise spec[key].error(str(exc)) from None
    return limits


def qos_limits_from_yaml(spec: Mapping[str, YamlField]) -> Limits:
    """The limit keys (``QOS_LIMIT_KEYS``) of one ``qos:`` entry."""
    return _limits(spec, QOS_LIMIT_KEYS, qos=True)


def associations_from_yaml(
    field: YamlField | None, accounts: Mapping[str, Account]
) -> Associations:
    """The ``associations:`` section (module docstring) over the account tree ``accounts``."""
    found: dict[tuple[str, str], Association] = {}
    for item in field.sequence() if field is not None else []:
        spec = item.mapping(
            ("account", "user", "Fairshare", "QOS", "DefaultQOS", *ASSOC_KEYS),
            required=("account",),
        )
        account = spec["account"].as_str()
        if account not in accounts:
            raise spec["account"].error(f"unknown account {account!r} (not in accounts:)")
        user = spec["user"].as_str() if "user" in spec else ""
        if (account, user) in found:
            who = f"user {user!r} in account {account!r}" if user else f"account {account!r}"
            raise item.error(f"a second association for {who}")
        shares = spec["Fairshare"].as_int(1) if "Fairshare" in spec else None
        if shares is None:
            acct = accounts[account]
            shares = acct.shares if not user else 1
        qos = tuple(spec["QOS"].as_str_list()) if "QOS" in spec else ()
        found[(account, user)] = Association(
            account,
            user,
            shares=shares,
            limits=_limits(spec, ASSOC_KEYS, qos=False),
            qos=qos,
            default_qos=spec["DefaultQOS"].as_str() if "DefaultQOS" in spec else "",
        )
    for name, acct in accounts.items():
        found.setdefault((name, ""), Association(name, "", shares=acct.shares))
    # Slurm's accounting starts with user root in account root (sacctmgr shows it).
    found.setdefault(("root", "root"), Association("root", "root"))
    return Associations(
        by_key=found, parents={name: acct.parent for name, acct in accounts.items()}
    )
