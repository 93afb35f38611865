"""The command line of every Slurm command: an option table per command and one parser.

A table lists every option Slurm 22.05 gives the command (its ``getopt_long`` table and man
page): long name, short letter, whether it takes a value, and what Phalanx does with it:

    implemented  the command does what Slurm's does
    ignored      parsed and accepted, with the reason it means nothing here (``-M`` on one
                 cluster, CPU binding, mail...): a script written for Slurm still runs
    refused      parsed, then refused with a Slurm-shaped error saying why (a feature that
                 Phalanx lacks and a job could not do without)

so no option Slurm accepts is ever an "unrecognized option". ``docs/slurm-options.md`` is
written from these tables (``phalanx.slurm.optiondoc``).

Parsing follows glibc's ``getopt_long``: ``--opt=value``, ``--opt value``, an unambiguous
prefix of a long name (names that mean the same option are not ambiguous), ``-X value``,
``-Xvalue``, bundled flags (``-vH``), an optional value only attached (``-j5``,
``--jobs=5``), ``--`` ends the options. The job commands read in POSIX order (the first word
that is not an option ends them: the script or program follows); the query commands permute
(options and words may mix). An unknown option is reported in getopt's words and the command
exits with the table's ``status`` (255 for sbatch, srun and salloc, as Slurm's ``exit(-1)``;
1 for the others).
"""

from __future__ import annotations

from phalanx.errors import PhalanxError

# typing and collections.abc cost milliseconds at every start of a shim: annotations only.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence

__all__ = [
    "FLAG",
    "IGNORED",
    "IMPLEMENTED",
    "OPTIONAL",
    "REFUSED",
    "VALUE",
    "CommandLineError",
    "Option",
    "OptionTable",
    "Options",
    "Usage",
    "node_list",
    "parse_args",
]

FLAG, VALUE, OPTIONAL = "flag", "value", "optional"
"""What an option takes: nothing, a value, or a value only when attached (``-j5``)."""
IMPLEMENTED, IGNORED, REFUSED = "implemented", "ignored", "refused"


class CommandLineError(PhalanxError):
    """A command line (or ``#SBATCH`` line) the command will not run: ``lines`` go to stderr
    as they are, and the command exits with ``status`` (by default 255, Slurm's ``exit(-1)``
    for a value it cannot read; 1 where Slurm says so)."""

    def __init__(self, lines: Sequence[str], status: int = 255) -> None:
        self.lines = list(lines)
        self.status = status
        super().__init__("\n".join(self.lines))


class Usage(CommandLineError):
    """What a query command prints instead of running, on stderr: its help or version (exit
    status 0) or why it cannot run (1), unless ``status`` says otherwise."""

    def __init__(self, text: str, status: int | None = None) -> None:
        if status is None:
            status = 0 if text.startswith(("Usage", "slurm ")) else 1
        super().__init__(text.split("\n"), status)


class Option:
    """One option of a command. ``short``: its letter (a second one: another letter Slurm
    takes for it); ``aliases``: other long names Slurm gives it (``--cluster`` for
    ``--clusters``); ``note``: why an ignored or refused option is, or what an
    implemented one does differently."""

    __slots__ = ("aliases", "kind", "name", "note", "short", "status")

    def __init__(
        self,
        name: str,
        short: str = "",
        kind: str = FLAG,
        status: str = IMPLEMENTED,
        note: str = "",
        aliases: tuple[str, ...] = (),
    ) -> None:
        self.name = name
        self.short = short
        self.kind = kind
        self.status = status
        self.note = note
        self.aliases = aliases


class OptionTable:
    """A command's options by long name (``options``), short letter and alias."""

    __slots__ = ("aliases", "names", "options", "permute", "prog", "shorts", "status")

    def __init__(
        self, prog: str, options: Iterable[Option], *, status: int = 1, permute: bool = True
    ) -> None:
        self.prog = prog
        self.status = status
        self.permute = permute
        self.options = {o.name: o for o in options}
        self.aliases = {a: o.name for o in self.options.values() for a in o.aliases}
        # A second letter is one Slurm keeps for old scripts (squeue -U, sacct -t).
        self.shorts = {letter: o.name for o in self.options.values() for letter in o.short}
        self.names = sorted({*self.options, *self.aliases})

    def long_name(self, given: str, word: str) -> str:
        """The option ``--given`` stands for: exact, an alias, or an unambiguous prefix."""
        if given in self.options:
            return given
        if given in self.aliases:
            return self.aliases[given]
        matches = {self.aliases.get(n, n) for n in self.names if given and n.startswith(given)}
        if len(matches) == 1:
            return matches.pop()
        if len(matches) > 1:
            raise self.error(f"option '{word}' is ambiguous")
        raise self.error(f"unrecognized option '{word.partition('=')[0]}'")

    def error(self, message: str) -> CommandLineError:
        """A command line getopt_long refuses, in its words."""
        prog = self.prog
        return CommandLineError(
            [f"{prog}: {message}", f'Try "{prog} --help" for more information'], self.status
        )


class Options:
    """What a command line said: every option in the order given (``pairs``, by canonical
    long name), the last value of each (``values``), and how often ``-v`` came."""

    __slots__ = ("pairs", "values", "verbose")

    def __init__(self) -> None:
        self.pairs: list[tuple[str, str]] = []
        self.values: dict[str, str] = {}
        """Flags have the value ``""``; ``--no-requeue`` is ``requeue="no"``."""
        self.verbose = 0

    def set(self, name: str, value: str) -> None:
        self.pairs.append((name, value))
        if name == "verbose":
            self.verbose += 1
        elif name == "no-requeue":
            self.values.pop("requeue", None)
            self.values["requeue"] = "no"
        else:
            # Re-inserting keeps the order of the last occurrence.
            self.values.pop(name, None)
            self.values[name] = value

    def update(self, later: Options) -> None:
        """Apply ``later`` on top (the command line over ``#SBATCH`` lines)."""
        for name, value in later.values.items():
            self.set(name, value)
        self.verbose += later.verbose

    def get(self, name: str) -> str | None:
        return self.values.get(name)

    def __contains__(self, name: object) -> bool:
        return name in self.values


def parse_args(
    argv: Sequence[str], table: OptionTable, options: Options | None = None
) -> tuple[Options, list[str]]:
    """Read options from ``argv`` into ``options`` (a fresh one by default); return them and
    the other words. Raise ``CommandLineError`` as getopt_long reports, or for an option the
    table refuses."""
    found = Options() if options is None else options
    words: list[str] = []
    i = 0
    while i < len(argv):
        word = argv[i]
        if word == "--":
            return found, [*words, *argv[i + 1 :]]
        if word.startswith("--"):
            i = _long(argv, i, found, table)
        elif word.startswith("-") and len(word) > 1:
            i = _short(argv, i, found, table)
        elif table.permute:
            words.append(word)
            i += 1
        else:
            return found, list(argv[i:])
    return found, words


def _take(found: Options, table: OptionTable, name: str, value: str) -> None:
    option = table.options[name]
    if option.status == REFUSED:
        raise CommandLineError([f"{table.prog}: error: --{name}: {option.note}"], 1)
    found.set(name, value)


def _long(argv: Sequence[str], i: int, found: Options, table: OptionTable) -> int:
    word = argv[i]
    given, eq, value = word[2:].partition("=")
    name = table.long_name(given, word)
    kind = table.options[name].kind
    if kind == FLAG:
        if eq:
            raise table.error(f"option '--{name}' doesn't allow an argument")
        _take(found, table, name, "")
        return i + 1
    if eq or kind == OPTIONAL:
        _take(found, table, name, value)
        return i + 1
    if i + 1 >= len(argv):
        raise table.error(f"option '--{name}' requires an argument")
    _take(found, table, name, argv[i + 1])
    return i + 2


def _short(argv: Sequence[str], i: int, found: Options, table: OptionTable) -> int:
    word = argv[i]
    j = 1
    while j < len(word):
        letter = word[j]
        name = table.shorts.get(letter)
        if name is None:
            raise table.error(f"invalid option -- '{letter}'")
        kind = table.options[name].kind
        if kind == FLAG:
            _take(found, table, name, "")
            j += 1
            continue
        rest = word[j + 1 :]
        if rest or kind == OPTIONAL:
            _take(found, table, name, rest)
            return i + 1
        if i + 1 >= len(argv):
            raise table.error(f"option requires an argument -- '{letter}'")
        _take(found, table, name, argv[i + 1])
        return i + 2
    return i + 1


def clusters_reached(value: str) -> bool:
    """``-M/--clusters``: whether ``value`` takes in this cluster, the one Phalanx has:
    ``all`` (or Slurm's vestigial ``-1``), or a comma list that names it (``ClusterName``).
    Then it filters nothing, as on a Slurm with one cluster."""
    from phalanx.slurm import cluster_name

    names = [n.strip() for n in value.split(",") if n.strip()]
    if any(n.lower() in ("all", "-1") for n in names):
        return True
    return cluster_name() in names


def unreachable_clusters(prog: str, value: str) -> CommandLineError:
    """Slurm's words (``print_db_notok``) for clusters it cannot reach: on Phalanx, any
    but this one."""
    return CommandLineError(
        [
            f"{prog}: error: '{value}' can't be reached now, or it is an invalid entry for "
            "--cluster.  Use 'sacctmgr list clusters' to see available clusters."
        ],
        1,
    )


def node_list(prog: str, option: str, value: str) -> list[str]:
    """The hosts a node-list option (``-w``, ``-n``, ``-N``) names, or ``Usage`` in Slurm's
    words (squeue's ``hostset_create`` failure) when ``value`` is no host list (``n[1-``):
    ``expand``'s ``ConfigError`` is the cluster file's error and ended these commands in a
    traceback."""
    from phalanx.domain.hostlist import expand  # only here: its import is not free

    try:
        return expand(value)
    except PhalanxError:
        raise Usage(f"{prog}: error: '{value}' invalid entry for --{option}") from None
