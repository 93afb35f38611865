"""``sshare``: the fair-share tree, as Slurm 22.05 prints it.

Reads ``GET /v1/fairshare`` (one row per account), ``GET /v1/associations`` (the user
associations) and ``GET /v1/jobs?all=true`` (who runs in which account). Phalanx shares among
accounts only: a user has no shares of their own and every job gets its account's fair share,
which is Slurm's ``Fairshare=parent``. So a user row says ``parent`` and repeats its account's
figures, its FairShare being the factor the user's jobs get. Account rows leave FairShare empty,
as Slurm's Fair Tree does; the root row has no shares and, by definition, an effective usage of
1. RawUsage is the decayed usage in GPU-seconds. Without ``-a`` only the caller's user rows are
shown; with ``-U`` only user rows (no account rows), as Slurm's ``--Users``.
Exit status: 0, or 1 for a bad option or no controller.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from typing import Any

from phalanx.client.wirecall import ApiError, ControllerUnreachable, WireCaller
from phalanx.slurm import UNREACHABLE
from phalanx.slurm.commandline import (
    CommandLineError,
    Usage,
    clusters_reached,
    parse_args,
    unreachable_clusters,
)
from phalanx.slurm.format import MAX_WIDTH, fit
from phalanx.slurm.format import width as field_width
from phalanx.slurm.querytables import SSHARE

__all__ = ["COLUMNS", "LONG_COLUMNS", "main", "rows"]

Share = dict[str, Any]
Row = dict[str, str]

COLUMNS = [
    ("Account", 20, False),
    ("User", 10, True),
    ("RawShares", 10, True),
    ("NormShares", 11, True),
    ("RawUsage", 11, True),
    ("EffectvUsage", 13, True),
    ("FairShare", 10, True),
]
"""Name, width and right-justification of the default columns."""
LONG_COLUMNS = [
    *COLUMNS[:5],
    ("NormUsage", 11, True),
    COLUMNS[5],
    COLUMNS[6],
    ("LevelFS", 10, True),
    ("GrpTRESMins", 30, False),
    ("TRESRunMins", 30, False),
]

FIELDS = [
    ("Account", 20, False),
    ("Cluster", 10, True),
    ("EffectvUsage", 13, True),
    ("FairShare", 10, True),
    ("GrpTRESMins", 30, False),
    ("GrpTRESRaw", 30, False),
    ("ID", 6, True),
    ("LevelFS", 10, True),
    ("NormShares", 11, True),
    ("NormUsage", 11, True),
    ("Partition", 12, True),
    ("RawShares", 10, True),
    ("RawUsage", 11, True),
    ("TRESRunMins", 30, False),
    ("User", 10, True),
]
"""Every field ``-o`` may name, in Slurm's order: a name stands for the first field it is
a prefix of, case aside (``eff`` is EffectvUsage)."""


def _me() -> str:
    import pwd

    try:
        return pwd.getpwuid(os.getuid()).pw_name
    except KeyError:
        return str(os.getuid())


def _users_by_account(caller: WireCaller) -> dict[str, list[str]]:
    """Each account's users: those of its user associations (``sacctmgr add user``; Slurm's
    sshare lists these, jobs or not) and, since Phalanx lets a user without an association
    run, those who have jobs in it."""
    found: dict[str, set[str]] = {}
    for row in caller.call_ok("GET", "/v1/associations")["associations"]:
        if row["user"]:
            found.setdefault(str(row["account"]), set()).add(str(row["user"]))
    for job in caller.call_ok("GET", "/v1/jobs", query={"all": True})["jobs"]:
        found.setdefault(str(job["account"]), set()).add(str(job["user"]))
    return {account: sorted(users) for account, users in found.items()}


def _level_fs(share: Share) -> str:
    usage = float(share["effective_usage"])
    return "inf" if usage <= 0 else f"{float(share['norm_shares']) / usage:.6f}"


def rows(
    shares: list[Share],
    users: dict[str, list[str]],
    shown_users: set[str] | None,
    accounts: set[str] | None = None,
) -> list[Row]:
    """The tree depth first: an account, its user rows, then its sub-accounts by name.
    ``shown_users`` None shows every user row."""
    children: dict[str | None, list[Share]] = {}
    for share in shares:
        children.setdefault(share["parent"], []).append(share)
    out: list[Row] = []

    def walk(share: Share, depth: int) -> None:
        name = str(share["account"])
        root = share["parent"] is None
        figures = {
            "NormShares": "0.000000" if root else f"{float(share['norm_shares']):.6f}",
            "RawUsage": str(round(float(share["raw_usage"]))),
            "NormUsage": f"{1.0 if root else float(share['effective_usage']):.6f}",
            "EffectvUsage": f"{1.0 if root else float(share['effective_usage']):.6f}",
        }
        listed = accounts is None or name in accounts
        if listed:
            out.append(
                {
                    "Account": " " * depth + name,
                    "RawShares": "" if root else str(share["raw_shares"]),
                    "LevelFS": "" if root else _level_fs(share),
                    **figures,
                }
            )
            for user in users.get(name, []):
                if shown_users is not None and user not in shown_users:
                    continue
                out.append(
                    {
                        "Account": " " * (depth + 1) + name,
                        "User": user,
                        "RawShares": "parent",
                        "FairShare": f"{float(share['fairshare']):.6f}",
                        "NormShares": f"{float(share['norm_shares']):.6f}",
                        "RawUsage": figures["RawUsage"],
                        "NormUsage": f"{float(share['effective_usage']):.6f}",
                        "EffectvUsage": f"{float(share['effective_usage']):.6f}",
                    }
                )
        for child in sorted(children.get(name, []), key=lambda s: str(s["account"])):
            walk(child, depth + 1)

    for top in children.get(None, []):
        walk(top, 0)
    return out


def _columns(text: str) -> list[tuple[str, int, bool]]:
    """``-o Account,User%12,eff``: the fields, each with its width."""
    out = []
    for item in (i.strip() for i in text.split(",")):
        if not item:
            continue
        name, _, width = item.partition("%")
        field = next((f for f in FIELDS if f[0].lower().startswith(name.lower())), None)
        if field is None or not name:
            raise Usage(f'sshare: error: Invalid field requested: "{name}"')
        size = field_width(width) if width.isascii() and width.isdecimal() else 0
        if size is None:
            raise Usage(f'sshare: error: Invalid field width: "{item}" (at most {MAX_WIDTH})')
        out.append((field[0], size or field[1], field[2]))
    return out


def _users(opts: dict[str, Any], value: str) -> None:
    if value.strip() == "-1":  # Slurm's word for everyone
        opts["all"] = True
        opts.pop("users", None)
        return
    opts["all"] = False
    opts["users"] = opts.get("users", set()) | {u for u in value.split(",") if u}


def _clusters(_: dict[str, Any], value: str) -> None:
    if not clusters_reached(value):
        raise unreachable_clusters("sshare", value)


def _help_fields(_: dict[str, Any], __: str) -> None:
    raise Usage(" ".join(name for name, _, _ in FIELDS), 0)


def _usage(_: dict[str, Any], __: str) -> None:
    raise Usage("Usage: sshare [OPTION]...")


def _version(_: dict[str, Any], __: str) -> None:
    raise Usage("slurm 22.05.8")


_HANDLERS: dict[str, Callable[[dict[str, Any], str], None]] = {
    "all": lambda o, _: o.update(all=True),
    "noheader": lambda o, _: o.update(header=False),
    "long": lambda o, _: o.update(long=True),
    "parsable": lambda o, _: o.update(sep="|", trail=True),
    "parsable2": lambda o, _: o.update(sep="|", trail=False),
    "users": _users,
    "Users": lambda o, _: o.update(users_only=True),
    "accounts": lambda o, v: o.update(accounts=o.get("accounts", set()) | set(_split(v))),
    "format": lambda o, v: o.update(format=o.get("format", []) + _columns(v)),
    "clusters": _clusters,
    "helpformat": _help_fields,
    "help": _usage,
    "usage": _usage,
    "version": _version,
}
"""What each implemented option of ``querytables.SSHARE`` does to the options."""


def _split(value: str) -> list[str]:
    return [v for v in value.split(",") if v]


def _parse(argv: list[str]) -> dict[str, Any]:
    found, rest = parse_args(argv, SSHARE)
    if rest:
        raise Usage(f"sshare: error: Unrecognized option: {rest[0]}")
    opts: dict[str, Any] = {"all": False, "header": True, "long": False, "sep": None}
    for name, value in found.pairs:
        handler = _HANDLERS.get(name)
        if handler is not None:
            handler(opts, value)
    return opts


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    try:
        opts = _parse(args)
    except CommandLineError as exc:
        print(exc, file=sys.stderr)
        return exc.status
    try:
        caller = WireCaller()
        answer = caller.call_ok("GET", "/v1/fairshare")
        users = _users_by_account(caller)
    except ControllerUnreachable:
        print(f"sshare: error: {UNREACHABLE}", file=sys.stderr)
        return 1
    except ApiError as exc:
        print(f"sshare: error: {exc}", file=sys.stderr)
        return 1
    shown: set[str] | None = opts.get("users")
    if shown is None and not opts["all"]:
        shown = {_me()}
    table = rows(list(answer), users, shown, opts.get("accounts"))
    if opts.get("users_only"):
        table = [row for row in table if row.get("User")]  # -U: user rows alone, as Slurm
    columns = opts.get("format") or (LONG_COLUMNS if opts["long"] else COLUMNS)
    lines: list[str] = []
    sep = opts["sep"]
    if sep is not None:
        tail = sep if opts.get("trail") else ""
        if opts["header"]:
            lines.append(sep.join(name for name, _, _ in columns) + tail)
        lines.extend(sep.join(row.get(name, "") for name, _, _ in columns) + tail for row in table)
    else:
        if opts["header"]:
            lines.append("".join(fit(name, w, r) + " " for name, w, r in columns))
            lines.append("".join("-" * w + " " for _, w, _ in columns))
        lines.extend(
            "".join(fit(row.get(name, ""), w, r) + " " for name, w, r in columns) for row in table
        )
    if lines:
        sys.stdout.write("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
