"""Slurm's accounting limits on the queue model: associations and QOS limits as quotas.

An association is an account (``user`` "") or a user in an account, as ``sacctmgr`` keeps it
in slurmdbd; the account associations form the account tree under ``root`` (the cluster's
``Account.parent``). A job runs under the association of its user in its account, else the
account's own. Its limits (Slurm's names, ``sacctmgr(1)``):

- ``GrpTRES``, ``GrpJobs``, ``GrpSubmitJobs``: the association and everything under it
  together (running jobs' TRES, running jobs, pending and running jobs). Not inherited: each
  association on the way to ``root`` checks its own.
- ``MaxJobs``, ``MaxSubmitJobs``, ``MaxTRES`` (per job): the job's own association, each
  inherited from the nearest account above that sets it (``sacctmgr show assoc`` prints the
  inherited value on every association below).
- A QOS has ``GrpTRES``, ``GrpJobs``, ``GrpSubmitJobs`` (every job of the QOS together),
  ``MaxTRESPerUser``, ``MaxJobsPerUser``, ``MaxSubmitJobsPerUser`` and ``MaxTRES`` (per job).
  A limit the job's QOS sets takes the place of the association's limit of the same kind
  (Slurm's ``acct_policy.c``: the QOS is checked first and the association's limit only
  where the QOS has none): ``MaxJobsPerUser`` of ``MaxJobs``, ``MaxSubmitJobsPerUser`` of
  ``MaxSubmitJobs``, each TRES of ``GrpTRES`` and ``MaxTRES`` of the same TRES.

TRES are counted as Slurm names them: ``cpu``, ``mem`` (MB), ``node`` and ``gres/gpu``.
A job pending on a limit shows the reason Slurm's ``squeue %R`` shows (``REASONS``); a
submission over a submit limit is refused with ``SUBMIT_REFUSED``.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, replace

__all__ = [
    "GPU_TRES",
    "SUBMIT_REFUSED",
    "TRES_NAMES",
    "Association",
    "Associations",
    "Limits",
    "Tres",
    "active_keys",
    "apply_settings",
    "format_tres",
    "parse_tres",
    "submit_refusal",
    "tres_reason",
]

GPU_TRES = "gres/gpu"
TRES_NAMES = ("cpu", "mem", "node", GPU_TRES)
"""The TRES a limit may name, in Slurm's order (its TRES ids 1, 2, 4, then GRES)."""

Tres = tuple[tuple[str, int], ...]
"""(TRES name, count) pairs in ``TRES_NAMES`` order; mem in MB."""

SUBMIT_REFUSED = (
    "Job violates accounting/QOS policy (job submit limit, user's size and/or time limits)"
)
"""Slurm's ``ESLURM_ACCOUNTING_POLICY`` text, which sbatch prints after the reason."""

_TRES_WORD = {"cpu": "Cpu", "mem": "Mem", "node": "Node", GPU_TRES: "GRES"}


def tres_reason(scope: str, tres: str) -> str:
    """The pending reason of a TRES limit, as Slurm's ``job_reason_string`` names it.
    ``scope``: ``AssocGrp``, ``AssocMaxPerJob``, ``QOSGrp``, ``QOSMaxPerUser`` or
    ``QOSMaxPerJob``."""
    word = _TRES_WORD[tres]
    if scope in ("AssocGrp", "QOSGrp"):
        return f"{scope}GRES" if tres == GPU_TRES else f"{scope}{word}Limit"
    if scope == "AssocMaxPerJob":
        if tres == GPU_TRES:
            return "AssocMaxGRESPerJob"
        return "AssocMaxMemPerJob" if tres == "mem" else f"AssocMax{word}PerJobLimit"
    if scope == "QOSMaxPerJob":
        if tres == GPU_TRES:
            return "QOSMaxGRESPerJob"
        return "QOSMaxMemoryPerJob" if tres == "mem" else f"QOSMax{word}PerJobLimit"
    # QOSMaxPerUser
    if tres == GPU_TRES:
        return "QOSMaxGRESPerUser"
    return "QOSMaxMemoryPerUser" if tres == "mem" else f"QOSMax{word}PerUserLimit"


_MEM_UNITS = {"": 1, "M": 1, "G": 1024, "T": 1024 * 1024}


def parse_tres(text: str) -> Tres:
    """``gres/gpu=16,cpu=64,mem=500G`` as TRES pairs; ``ValueError`` saying what is wrong.
    ``gres/gpu:h100=4`` (a typed GPU) and ``-1`` (no limit: the pair is left out) are
    Slurm's too; a typed GPU counts as ``gres/gpu``."""
    found: dict[str, int] = {}
    for item in (part.strip() for part in text.split(",")):
        if not item:
            continue
        name, eq, value = item.partition("=")
        name = name.strip().lower()
        if name.startswith("gres/gpu:"):
            name = GPU_TRES
        if not eq or name not in TRES_NAMES:
            raise ValueError(f"unknown TRES {item!r} (known: {', '.join(TRES_NAMES)})")
        value = value.strip().upper()
        if value == "-1":
            found.pop(name, None)
            continue
        unit = value[-1] if value and value[-1] in "MGT" and name == "mem" else ""
        number = value[: len(value) - len(unit)]
        if not number.isdecimal():
            raise ValueError(f"bad TRES count {item!r}")
        found[name] = int(number) * _MEM_UNITS[unit]
    return tuple((n, found[n]) for n in TRES_NAMES if n in found)


def format_tres(tres: Tres) -> str:
    """As ``sacctmgr`` prints TRES: ``cpu=8,gres/gpu=4`` (mem in M, G or T where exact)."""
    out = []
    for name, count in tres:
        if name == "mem":
            text = f"{count}M"
            for unit, size in (("T", 1024 * 1024), ("G", 1024)):
                if count and count % size == 0:
                    text = f"{count // size}{unit}"
                    break
            out.append(f"mem={text}")
        else:
            out.append(f"{name}={count}")
    return ",".join(out)


@dataclass(frozen=True, slots=True)
class Limits:
    """One association's or QOS's limits; None or absent: no limit. For a QOS,
    ``max_jobs`` and ``max_submit`` are per user (``MaxJobsPerUser``,
    ``MaxSubmitJobsPerUser``)."""

    grp_tres: Tres = ()
    grp_jobs: int | None = None
    grp_submit: int | None = None
    max_jobs: int | None = None
    max_submit: int | None = None
    max_tres: Tres = ()
    """Per job (``MaxTRES``, a QOS's ``MaxTRESPerJob``)."""
    max_tres_per_user: Tres = ()
    """QOS only (``MaxTRESPerUser``)."""

    def __bool__(self) -> bool:
        return any(
            v not in (None, ())
            for v in (
                self.grp_tres,
                self.grp_jobs,
                self.grp_submit,
                self.max_jobs,
                self.max_submit,
                self.max_tres,
                self.max_tres_per_user,
            )
        )


@dataclass(frozen=True, slots=True)
class Association:
    account: str
    user: str = ""
    """"" for the account's own association."""
    shares: int = 1
    limits: Limits = Limits()
    qos: tuple[str, ...] = ()
    """The QOS the association may use; empty: ``normal``."""
    default_qos: str = ""


@dataclass(frozen=True)
class Associations:
    """Every association by (account, user), and each account's parent (``root`` at the
    top). Invariant (``config`` checks it): every account named has an account entry in
    ``parents`` or is ``root``."""

    by_key: Mapping[tuple[str, str], Association] = field(default_factory=dict)
    parents: Mapping[str, str | None] = field(default_factory=dict)

    def __bool__(self) -> bool:
        return any(a.limits for a in self.by_key.values())

    def own(self, account: str, user: str) -> Association | None:
        """The association a job of ``user`` in ``account`` runs under, if any."""
        return self.by_key.get((account, user)) or self.by_key.get((account, ""))

    def chain(self, account: str, user: str) -> Iterator[Association]:
        """The job's association, then each account association up to ``root``."""
        mine = self.by_key.get((account, user))
        if mine is not None:
            yield mine
        current: str | None = account
        for _ in range(len(self.parents) + 2):  # bounded: parents never loop
            if current is None:
                return
            found = self.by_key.get((current, ""))
            if found is not None:
                yield found
            current = self.parents.get(current)

    def inherited(self, account: str, user: str) -> Limits:
        """The per-association limits (MaxJobs, MaxSubmitJobs, MaxTRES) that apply to the
        job's association: each from the nearest association that sets it."""
        max_jobs = max_submit = None
        max_tres: dict[str, int] = {}
        for assoc in self.chain(account, user):
            lim = assoc.limits
            max_jobs = max_jobs if max_jobs is not None else lim.max_jobs
            max_submit = max_submit if max_submit is not None else lim.max_submit
            for name, count in lim.max_tres:
                max_tres.setdefault(name, count)
        return Limits(
            max_jobs=max_jobs,
            max_submit=max_submit,
            max_tres=tuple((n, max_tres[n]) for n in TRES_NAMES if n in max_tres),
        )


def submit_refusal(
    assocs: Associations,
    qos: str,
    qos_limits: Limits,
    account: str,
    user: str,
    active: Mapping[object, int],
) -> str:
    """The reason Slurm refuses a submission over a submit limit ("" if none is passed).
    ``active`` counts the pending and running jobs by the keys ``Ledger`` uses: (account,
    user) per association, ("user", account, user), ("qos", name), ("qos-user", name, user).
    """
    if qos_limits.max_submit is not None:
        if active.get(("qos-user", qos, user), 0) >= qos_limits.max_submit:
            return "QOSMaxSubmitJobPerUserLimit"
    else:
        most = assocs.inherited(account, user).max_submit
        if most is not None and active.get(("user", account, user), 0) >= most:
            return "AssocMaxSubmitJobLimit"
    if qos_limits.grp_submit is not None:
        if active.get(("qos", qos), 0) >= qos_limits.grp_submit:
            return "QOSGrpSubmitJobsLimit"
        return ""
    for assoc in assocs.chain(account, user):
        most = assoc.limits.grp_submit
        if most is not None and active.get((assoc.account, assoc.user), 0) >= most:
            return "AssocGrpSubmitJobsLimit"
    return ""


def active_keys(assocs: Associations, qos: str, account: str, user: str) -> list[object]:
    """The keys of ``submit_refusal``'s counts that one job of ``user`` counts in."""
    keys: list[object] = [(a.account, a.user) for a in assocs.chain(account, user)]
    keys += [("user", account, user), ("qos", qos), ("qos-user", qos, user)]
    return keys


_LIMIT_FIELDS = {
    "grptres": "grp_tres",
    "grpjobs": "grp_jobs",
    "grpsubmitjobs": "grp_submit",
    "grpsubmit": "grp_submit",
    "maxjobs": "max_jobs",
    "maxsubmitjobs": "max_submit",
    "maxsubmit": "max_submit",
    "maxtres": "max_tres",
    "maxtresperjob": "max_tres",
}
_QOS_FIELDS = {
    "grptres": "grp_tres",
    "grpjobs": "grp_jobs",
    "grpsubmitjobs": "grp_submit",
    "grpsubmit": "grp_submit",
    "maxjobsperuser": "max_jobs",
    "maxjobspu": "max_jobs",
    "maxsubmitjobsperuser": "max_submit",
    "maxsubmitpu": "max_submit",
    "maxtresperjob": "max_tres",
    "maxtres": "max_tres",
    "maxtresperuser": "max_tres_per_user",
    "maxtrespu": "max_tres_per_user",
}
_TRES_FIELDS = ("grp_tres", "max_tres", "max_tres_per_user")


def apply_settings(limits: Limits, settings: Mapping[str, str], qos: bool = False) -> Limits:
    """``limits`` with ``sacctmgr``'s ``Key=Value`` settings applied (keys case-insensitive;
    ``-1`` clears a limit; a TRES limit changes only the TRES it names, as in Slurm).
    ``ValueError`` naming the key for anything else."""
    fields = _QOS_FIELDS if qos else _LIMIT_FIELDS
    changes: dict[str, object] = {}
    for key, value in settings.items():
        attr = fields.get(key.lower())
        if attr is None:
            raise ValueError(f"unknown limit {key!r}")
        value = value.strip()
        if attr in _TRES_FIELDS:
            current = dict(changes.get(attr, getattr(limits, attr)))  # type: ignore[call-overload]
            named = {n for item in value.split(",") for n in [item.partition("=")[0].lower()]}
            try:
                given = dict(parse_tres(value))
            except ValueError as exc:
                raise ValueError(f"{key}: {exc}") from None
            for name in named:
                name = "gres/gpu" if name.startswith("gres/gpu") else name
                current.pop(name, None)
            current.update(given)
            order = ("cpu", "mem", "node", "gres/gpu")
            changes[attr] = tuple((n, current[n]) for n in order if n in current)
        elif value == "-1":
            changes[attr] = None
        elif value.isdecimal():
            changes[attr] = int(value)
        else:
            raise ValueError(f"{key}: expected a count or -1, got {value!r}")
    return replace(limits, **changes)  # type: ignore[arg-type]
