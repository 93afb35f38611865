"""``sacctmgr show|list assoc|qos``: associations and QOS with their limits, as Slurm 22.05
prints them (columns, widths, ``+`` on a cut value, ``-P``/``-p``/``-n``, ``format=`` with
``%N`` widths, ``tree``, ``where`` filters by account, user, cluster or QOS name).

Reads ``GET /v1/associations``: the cluster's (``associations:`` in its YAML) as changed
since by ``sacctmgr add|modify|delete account|user|qos`` (``POST /v1/associations``: the
controller checks and journals the change, so it survives a restart, and answers with what
Slurm prints, ``domain.accounting``). Changes ask for no confirmation (as ``-i``). Exit
status: 0, or 1 for a bad command or field, a refused change, or no controller.
"""

from __future__ import annotations

import sys
from typing import Any

from phalanx.client.wirecall import ApiError, ControllerUnreachable, WireCaller
from phalanx.slurm import UNREACHABLE
from phalanx.slurm.format import MAX_WIDTH, fit, sacct_cut
from phalanx.slurm.format import width as field_width

__all__ = ["ASSOC_FIELDS", "QOS_FIELDS", "main", "render", "request"]

Field = tuple[str, int, str]
"""Header, default width, key of the row."""

ASSOC_FIELDS: list[Field] = [
    ("Cluster", 10, "cluster"),
    ("Account", 10, "account"),
    ("User", 10, "user"),
    ("Partition", 10, "partition"),
    ("Share", 9, "share"),
    ("Priority", 10, "priority"),
    ("GrpJobs", 7, "grp_jobs"),
    ("GrpTRES", 13, "grp_tres"),
    ("GrpSubmit", 9, "grp_submit"),
    ("GrpWall", 11, "grp_wall"),
    ("GrpTRESMins", 13, "grp_tres_mins"),
    ("MaxJobs", 7, "max_jobs"),
    ("MaxTRES", 13, "max_tres"),
    ("MaxTRESPerNode", 14, "max_tres_per_node"),
    ("MaxSubmit", 9, "max_submit"),
    ("MaxWall", 11, "max_wall"),
    ("MaxTRESMins", 13, "max_tres_mins"),
    ("QOS", 20, "qos"),
    ("Def QOS", 9, "default_qos"),
    ("GrpTRESRunMins", 13, "grp_tres_run_mins"),
]
QOS_FIELDS: list[Field] = [
    ("Name", 10, "name"),
    ("Priority", 10, "priority"),
    ("GraceTime", 10, "grace_time"),
    ("Preempt", 10, "preempt"),
    ("PreemptExemptTime", 19, "preempt_exempt_time"),
    ("PreemptMode", 11, "preempt_mode"),
    ("Flags", 40, "flags"),
    ("UsageThres", 10, "usage_thres"),
    ("UsageFactor", 11, "usage_factor"),
    ("GrpTRES", 13, "grp_tres"),
    ("GrpTRESMins", 13, "grp_tres_mins"),
    ("GrpTRESRunMins", 13, "grp_tres_run_mins"),
    ("GrpJobs", 7, "grp_jobs"),
    ("GrpSubmit", 9, "grp_submit"),
    ("GrpWall", 11, "grp_wall"),
    ("MaxTRES", 13, "max_tres"),
    ("MaxTRESPerNode", 14, "max_tres_per_node"),
    ("MaxTRESMins", 13, "max_tres_mins"),
    ("MaxWall", 11, "max_wall"),
    ("MaxTRESPU", 13, "max_tres_pu"),
    ("MaxJobsPU", 9, "max_jobs_pu"),
    ("MaxSubmitPU", 11, "max_submit_pu"),
    ("MaxTRESPA", 13, "max_tres_pa"),
    ("MaxJobsPA", 9, "max_jobs_pa"),
    ("MaxSubmitPA", 11, "max_submit_pa"),
    ("MinTRES", 13, "min_tres"),
]
_ALIASES = {
    "defaultqos": "Def QOS",
    "defqos": "Def QOS",
    "fairshare": "Share",
    "grpsubmitjobs": "GrpSubmit",
    "maxsubmitjobs": "MaxSubmit",
    "maxtresperjob": "MaxTRES",
    "maxtresperuser": "MaxTRESPU",
    "maxjobsperuser": "MaxJobsPU",
    "maxsubmitjobsperuser": "MaxSubmitPU",
    "qoslevel": "QOS",
}
_ENTITY_ERROR = (
    "No valid entity in list command\n"
    'Input line must include "Account", "Association", "Cluster", "Configuration",\n'
    '"Event", "Federation", "Problem", "QOS", "Resource", "Reservation",\n'
    '"RunAwayJobs", "Stats", "Transaction", "TRES", "User", or "WCKey"'
)
_FILTERS = {
    "account": "account",
    "accounts": "account",
    "acct": "account",
    "user": "user",
    "users": "user",
    "cluster": "cluster",
    "clusters": "cluster",
    "name": "name",
    "names": "name",
}


class Refused(Exception):
    """A command sacctmgr refuses: the message goes to stderr, the exit status is 1."""


def _field(text: str, fields: list[Field]) -> Field:
    name, _, width = text.partition("%")
    key = name.strip().lower()
    wanted = _ALIASES.get(key, key).lower()
    found = next((f for f in fields if f[0].lower() == wanted), None)
    if found is None and key:
        found = next((f for f in fields if f[0].lower().startswith(key)), None)
    if found is None:
        raise Refused(f"Unknown field '{name}'")
    size = field_width(width) if width.isascii() and width.isdecimal() else found[1]
    if size is None:
        raise Refused(f"Field width '{width}' of '{name}' is over {MAX_WIDTH}")
    return (found[0], size, found[2])


def render(
    rows: list[dict[str, Any]],
    fields: list[Field],
    *,
    sep: str | None = None,
    trail: bool = False,
    header: bool = True,
    tree: bool = False,
) -> list[str]:
    """The table's lines: fixed columns (right-justified, a cut value ends in ``+``; with
    ``tree`` the Account column is 20 wide, left-justified and indented by depth), or values
    joined by ``sep`` (``trail`` adds one at each line's end, as ``-p``)."""
    lines: list[str] = []
    if sep is not None:
        tail = sep if trail else ""
        if header:
            lines.append(sep.join(name for name, _, _ in fields) + tail)
        for row in rows:
            lines.append(sep.join(str(row.get(key, "")) for _, _, key in fields) + tail)
        return lines
    columns = []
    for name, width, key in fields:
        indent = tree and key == "account"
        columns.append((name, 20 if indent and width == 10 else width, key, not indent))
    if header:
        lines.append("".join(fit(n, w, right) + " " for n, w, _, right in columns))
        lines.append("".join("-" * w + " " for _, w, _, _ in columns))
    for row in rows:
        cells = []
        for _, width, key, right in columns:
            value = str(row.get(key, ""))
            if not right:
                value = " " * int(row.get("depth", 0)) + value
            cells.append(sacct_cut(value, width, right) + " ")
        lines.append("".join(cells))
    return lines


def _parse(argv: list[str]) -> dict[str, Any]:
    opts: dict[str, Any] = {"sep": None, "trail": False, "header": True, "tree": False}
    words: list[str] = []
    for arg in argv:
        if arg in ("-P", "--parsable2"):
            opts.update(sep="|", trail=False)
        elif arg in ("-p", "--parsable"):
            opts.update(sep="|", trail=True)
        elif arg in ("-n", "--noheader"):
            opts["header"] = False
        elif arg in ("-i", "--immediate", "-Q", "--quiet", "-r", "--readonly"):
            continue
        elif arg in ("-V", "--version"):
            opts["version"] = True
        elif arg.startswith("-"):
            raise Refused(f"sacctmgr: unrecognized option '{arg}'")
        else:
            words.append(arg)
    opts["words"] = words
    return opts


def _select(
    words: list[str], fields: list[Field], rows: list[dict[str, Any]], qos: bool
) -> tuple[list[Field], list[dict[str, Any]], bool]:
    chosen: list[Field] = []
    tree = False
    keep: dict[str, set[str]] = {}
    for word in words:
        key, eq, value = word.partition("=")
        lower = key.lower()
        if not eq:
            if lower == "tree":
                tree = True
            elif lower in ("where", "withassoc", "withsubaccounts", "withdeleted"):
                continue
            elif qos:
                keep.setdefault("name", set()).update(v for v in word.split(",") if v)
            else:
                raise Refused(f" Unknown condition: {word}\n Use keyword 'set' to modify value")
        elif lower == "format":
            chosen += [_field(item, fields) for item in value.split(",") if item.strip()]
        elif lower in _FILTERS:
            keep.setdefault(_FILTERS[lower], set()).update(v for v in value.split(",") if v)
        else:
            raise Refused(f" Unknown condition: {word}\n Use keyword 'set' to modify value")
    for key, values in keep.items():
        rows = [r for r in rows if str(r.get(key, "")) in values]
    return chosen or fields, rows, tree


def _show(opts: dict[str, Any], words: list[str]) -> list[str]:
    if not words:
        raise Refused(_ENTITY_ERROR)
    entity = words[0].lower()
    if entity in ("assoc", "association", "associations"):
        qos = False
    elif entity in ("qos", "qoss"):
        qos = True
    else:
        raise Refused(_ENTITY_ERROR)
    answer = WireCaller().call_ok("GET", "/v1/associations")
    rows = list(answer["qos" if qos else "associations"])
    fields, rows, tree = _select(words[1:], QOS_FIELDS if qos else ASSOC_FIELDS, rows, qos)
    return render(
        rows,
        fields,
        sep=opts["sep"],
        trail=opts["trail"],
        header=opts["header"],
        tree=tree and not qos,
    )


_VERBS = {
    "add": "add",
    "create": "add",
    "modify": "modify",
    "update": "modify",
    "delete": "delete",
    "remove": "delete",
}
_ENTITIES = {"account": "account", "accounts": "account", "user": "user", "users": "user"}
_ENTITIES.update({"qos": "qos"})
_QUIET_REFUSALS = (" Nothing modified", " Nothing deleted")
"""What sacctmgr prints on stdout when a change matched nothing (other refusals go to
stderr); the exit status is 1 either way."""


def request(verb: str, words: list[str]) -> dict[str, Any]:
    """The body of ``POST /v1/associations`` for ``sacctmgr VERB ENTITY ...``: bare words
    and ``name=`` are names; before ``set`` (or anywhere for ``add``) other ``key=value`` are
    conditions (``account=`` of a user) or, for ``add``, settings; after ``set``, settings."""
    if not words or words[0].lower() not in _ENTITIES:
        raise Refused(_ENTITY_ERROR)
    entity = _ENTITIES[words[0].lower()]
    names: list[str] = []
    where: list[tuple[str, str]] = []
    settings: list[tuple[str, str]] = []
    after_set = False
    for word in words[1:]:
        lower = word.lower()
        if lower == "set":
            after_set = True
            continue
        if lower == "where":
            continue
        key, eq, value = word.partition("=")
        if not eq:
            names += [n for n in word.split(",") if n]
        elif not after_set and key.lower() in ("name", "names"):
            names += [n for n in value.split(",") if n]
        elif key.lower() in ("account", "accounts") and entity == "user":
            where.append(("account", value))
        elif after_set or verb == "add":
            settings.append((key, value))
        else:
            where.append((key, value))
    return {"verb": verb, "entity": entity, "names": names, "where": where, "settings": settings}


def _change(verb: str, words: list[str]) -> int:
    body = request(verb, words)
    status, answer = WireCaller().call("POST", "/v1/associations", body=body)
    if status == 403:
        print(
            "sacctmgr: error: Your user doesn't have privilege to perform this action\n"
            " Error with request: Access/permission denied",
            file=sys.stderr,
        )
        return 1
    if status != 200:
        message = str(answer.get("error", "")) if isinstance(answer, dict) else str(answer)
        message = message.removeprefix("field 'accounting': ")
        quiet = message in _QUIET_REFUSALS
        print(message, file=sys.stdout if quiet else sys.stderr)
        return 1
    lines = list(answer["lines"])
    if lines:
        sys.stdout.write("\n".join(lines) + "\n")
    return 0


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    try:
        opts = _parse(args)
        if opts.get("version"):
            print("slurm 22.05.8")
            return 0
        words = opts["words"]
        verb = words[0].lower() if words else ""
        if verb in ("show", "list"):
            lines = _show(opts, words[1:])
        elif verb in _VERBS:
            return _change(_VERBS[verb], words[1:])
        else:
            raise Refused(f"Invalid keyword: {words[0]}" if words else _ENTITY_ERROR)
    except Refused as exc:
        print(exc, file=sys.stderr)
        return 1
    except ControllerUnreachable:
        print(f"sacctmgr: error: {UNREACHABLE}", file=sys.stderr)
        return 1
    except ApiError as exc:
        print(f"sacctmgr: error: {exc}", file=sys.stderr)
        return 1
    if lines:
        sys.stdout.write("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
