"""The option tables of ``squeue``, ``sacct``, ``sinfo``, ``sprio``, ``sshare``, ``scancel``
and ``scontrol``: every option Slurm 22.05 gives each (its ``long_options[]`` and short
string, ``src/<command>/``), with what Phalanx does with it (``commandline`` says how a
table reads). Short letters Slurm keeps only for old scripts (``squeue -U``, ``sacct -t``)
are the second letter of an option's ``short``.
"""

from __future__ import annotations

from phalanx.slurm.commandline import (
    FLAG,
    IGNORED,
    IMPLEMENTED,
    OPTIONAL,
    REFUSED,
    VALUE,
    Option,
    OptionTable,
)

__all__ = ["SACCT", "SCANCEL", "SCONTROL", "SINFO", "SPRIO", "SQUEUE", "SSHARE"]

_N, _O, _V = FLAG, OPTIONAL, VALUE
_I, _G, _R = IMPLEMENTED, IGNORED, REFUSED

_CLUSTER = "one cluster: Phalanx is not federated"
_CLUSTERS = (
    "`all` or a list naming this cluster (its ClusterName) filters nothing; other names "
    "are clusters that cannot be reached, as Slurm says"
)
_HIDDEN = "Phalanx has no hidden partitions: every one is shown"
_VERBOSE = "no debug output"
_NOCONVERT = "sizes print as they do without it"
_NONE = "Phalanx has none: nothing matches"
_BARE_J = "a bare `-j` takes the next word as its list, as Slurm's does"


def _common(verbose: str = _G, note: str = _VERBOSE, help_short: str = "") -> tuple[Option, ...]:
    return (
        Option("help", help_short, _N),
        Option("usage", "", _N),
        Option("version", "V", _N),
        Option("verbose", "v", _N, verbose, note),
    )


def _federated(sibling_takes: str = _N) -> tuple[Option, ...]:
    return (
        Option("federation", "", _N, _G, _CLUSTER),
        Option("local", "", _N, _G, _CLUSTER),
        Option("sibling", "", sibling_takes, _G, _CLUSTER, ("sib",)),
    )


SQUEUE = OptionTable(
    "squeue",
    (
        *_common(),
        *_federated(),
        Option("accounts", "AU", _V),
        Option("all", "a", _N, _G, _HIDDEN),
        Option("array", "r", _N),
        Option("array-unique", "", _N, _G, "pending array tasks collapse to one line as always"),
        Option("clusters", "M", _V, _I, _CLUSTERS, ("cluster",)),
        Option("Format", "O", _V),
        Option("format", "o", _V),
        Option("hide", "", _N, _G, _HIDDEN),
        Option("iterate", "i", _V, _I, "the time, then the listing, every N seconds"),
        Option("jobs", "j", _O, _I, _BARE_J),
        Option("json", "", _N),
        Option("licenses", "L", _V, _I, "Phalanx jobs use no licenses: nothing matches"),
        Option("long", "l", _N),
        Option("me", "", _N),
        Option("name", "n", _V),
        Option("noconvert", "", _N, _G, _NOCONVERT),
        Option("nodelist", "w", _V, _I, "", ("node", "nodes")),
        Option("noheader", "h", _N),
        Option("partitions", "p", _V),
        Option("priority", "P", _N, _G, "a job is in one partition: it is listed once"),
        Option("qos", "q", _V),
        Option("reservation", "R", _V, _I, "Phalanx has no reservations: nothing matches"),
        Option("sort", "S", _V, _I, "keys are -o letters, `-` before one for descending"),
        Option("start", "", _N),
        Option("states", "t", _V),
        Option("steps", "s", _O, _R, "steps are not listed by squeue here: use sacct"),
        Option("user", "u", _V, _I, "", ("users",)),
        Option("yaml", "", _N),
    ),
)

SACCT = OptionTable(
    "sacct",
    (
        *_common(help_short="h"),
        Option("federation", "", _N, _G, _CLUSTER),
        Option("local", "", _N, _G, _CLUSTER),
        Option("accounts", "A", _V),
        Option("allclusters", "L", _N, _G, _CLUSTER),
        Option("allocations", "Xt", _N),
        Option("allusers", "a", _N),
        Option("associations", "x", _V, _R, "Phalanx keeps no association ids"),
        Option("batch-script", "B", _N, _R, "batch scripts are not kept for accounting"),
        Option("brief", "b", _N),
        Option("clusters", "M", _V, _I, _CLUSTERS, ("cluster",)),
        Option("completion", "c", _N, _G, "one accounting store: the same records"),
        Option("constraints", "C", _V),
        Option("delimiter", "", _V),
        Option("duplicates", "D", _N, _G, "a requeued job is one record, its last run"),
        Option("endtime", "E", _V),
        Option("env-vars", "", _N, _R, "job environments are not kept for accounting"),
        Option("file", "f", _V, _R, "accounting is read from the controller, not a file"),
        Option("flags", "F", _V, _R, "no scheduling flags are recorded"),
        Option("format", "o", _V, _I, "", ("fields",)),
        Option("gid", "g", _V, _I, "", ("group",)),
        Option("helpformat", "e", _N, _I, "", ("help-fields",)),
        Option("jobs", "j", _V),
        Option("long", "l", _N),
        Option("name", "", _V),
        Option("ncpus", "I", _V),
        Option("nnodes", "i", _V),
        Option("noconvert", "", _N, _G, _NOCONVERT),
        Option("nodelist", "N", _V),
        Option("noheader", "n", _N),
        Option("parsable", "p", _N),
        Option("parsable2", "P", _N),
        Option("partition", "r", _V),
        Option("qos", "q", _V),
        Option("reason", "", _V),
        Option("starttime", "S", _V),
        Option("state", "s", _V),
        Option("timelimit-max", "K", _V),
        Option("timelimit-min", "k", _V),
        Option("truncate", "T", _N, _G, "times are not clipped to the -S/-E window"),
        Option("uid", "u", _V, _I, "", ("user",)),
        Option("units", "", _V),
        Option("usage", "U", _N),
        Option("use-local-uid", "", _N, _G, "names are resolved here already"),
        Option("wckeys", "W", _V, _I, "Phalanx has no workload characterization keys: " + _NONE),
        Option("whole-hetjob", "", _O, _G, "no heterogeneous jobs: every job is whole"),
        Option("json", "", _N, _R, "the JSON accounting document is not supported"),
        Option("yaml", "", _N, _R, "the YAML accounting document is not supported"),
    ),
)

SINFO = OptionTable(
    "sinfo",
    (
        *_common(),
        *_federated()[:2],
        Option("all", "a", _N, _G, _HIDDEN),
        Option("clusters", "M", _V, _I, _CLUSTERS, ("cluster",)),
        Option("dead", "d", _N),
        Option("exact", "e", _N, _G, "nodes that print alike are grouped exactly already"),
        Option("Format", "O", _V),
        Option("format", "o", _V),
        Option("hide", "", _N, _G, _HIDDEN),
        Option("iterate", "i", _V, _G, "prints once; run sinfo again, or watch it"),
        Option("json", "", _N, _R, "the JSON node document is not supported"),
        Option("list-reasons", "R", _N),
        Option("long", "l", _N),
        Option("Node", "N", _N),
        Option("noconvert", "", _N, _G, _NOCONVERT),
        Option("nodes", "n", _V),
        Option("noheader", "h", _N),
        Option("partition", "p", _V),
        Option("reservation", "T", _N, _R, "Phalanx has no reservations"),
        Option("responding", "r", _N),
        Option("sort", "S", _V, _G, "rows come in partition order, then by state and node"),
        Option("states", "t", _V),
        Option("summarize", "s", _N),
        Option("yaml", "", _N, _R, "the YAML node document is not supported"),
    ),
)

SPRIO = OptionTable(
    "sprio",
    (
        *_common(),
        *_federated(),
        Option("clusters", "M", _V, _I, _CLUSTERS, ("cluster",)),
        Option("format", "o", _V),
        Option("jobs", "j", _O, _I, _BARE_J),
        Option("long", "l", _N),
        Option("noheader", "h", _N),
        Option("norm", "n", _N, _R, "the configured weights are not published"),
        Option("partition", "p", _V),
        Option("sort", "S", _V, _G, "rows come by job id"),
        Option("user", "u", _V, _I, "", ("users",)),
        Option("weights", "w", _N, _R, "the configured weights are not published"),
    ),
)

SSHARE = OptionTable(
    "sshare",
    (
        *_common(),
        Option("accounts", "A", _V),
        Option("all", "a", _N),
        Option("clusters", "M", _V, _I, _CLUSTERS, ("cluster",)),
        Option("format", "o", _V),
        Option("helpformat", "e", _N),
        Option("long", "l", _N),
        Option("noheader", "nh", _N),
        Option("parsable", "p", _N),
        Option("parsable2", "P", _N),
        Option("partition", "m", _N, _G, "shares are per account, not per partition"),
        Option("users", "u", _V),
        Option("Users", "U", _N),
    ),
)

SCANCEL = OptionTable(
    "scancel",
    (
        *_common(_I, "says what it signals and why a job was not"),
        Option("account", "A", _V),
        Option("batch", "b", _N),
        Option("clusters", "M", _V, _I, _CLUSTERS, ("cluster",)),
        Option("ctld", "", _N, _G, "requests always go through the controller"),
        Option("full", "f", _N),
        Option("hurry", "H", _N, _G, "there is no burst buffer stage-out to skip"),
        Option("interactive", "i", _N, _G, "cancels without asking"),
        Option("jobname", "n", _V, _I, "", ("name",)),
        Option("me", "", _N),
        Option("nodelist", "w", _V),
        Option("partition", "p", _V),
        Option("qos", "q", _V),
        Option("quiet", "Q", _N),
        Option("reservation", "R", _V, _I, "Phalanx has no reservations: nothing matches"),
        Option("sibling", "", _V, _G, _CLUSTER),
        Option("signal", "s", _V),
        Option("state", "t", _V),
        Option("user", "u", _V),
        Option("wckey", "", _V, _I, "Phalanx has no workload characterization keys: " + _NONE),
    ),
)

SCONTROL = OptionTable(
    "scontrol",
    (
        Option("help", "h", _N),
        Option("usage", "", _N),
        Option("version", "V", _N),
        Option("verbose", "v", _N, _G, _VERBOSE),
        *_federated()[:2],
        Option("sibling", "", _N, _G, _CLUSTER),
        Option("all", "a", _N, _G, _HIDDEN),
        Option("clusters", "M", _V, _I, _CLUSTERS, ("cluster",)),
        Option("details", "d", _N),
        Option("future", "F", _N, _G, "Phalanx has no FUTURE nodes"),
        Option("hide", "", _N, _G, _HIDDEN),
        Option("oneliner", "o", _N),
        Option("quiet", "Q", _N),
        Option("uid", "u", _V, _R, "the controller knows the caller; no other uid is taken"),
    ),
)
