"""The job options of ``sbatch``, ``srun`` and ``salloc``: their table, a getopt-compatible
parser, and the ``JobRequest`` (as JSON) they ask for.

Parsing follows getopt_long in POSIX order, as Slurm's commands do: ``--opt=value``,
``--opt value``, an unambiguous prefix of a long name, ``-X value``, ``-Xvalue``, bundled
flags (``-vH``), ``--`` ends the options, and the first word that is not an option ends them
too (the script and its arguments follow).

What the options ask for becomes a request by ``to_request``: ``nodes`` x
``ntasks_per_node`` tasks, each with ``gpus_per_task`` GPUs and ``cpus_per_task`` CPUs. A
batch job (``sbatch``, ``salloc``: the caller sets ``batch``) holds that allocation and runs
its script once, on the first node, as Slurm does; ``srun`` steps then run over it. Option by
option:

    -N/--nodes N[-M]        nodes ("-1" and other negatives: unset, as Slurm)
    -n/--ntasks T           tasks per node = ceil(T / nodes) unless --ntasks-per-node
    --ntasks-per-node T     tasks per node
    -c/--cpus-per-task C    cpus_per_task = C  (or --cpus-per-gpu x GPUs per task)
    --gres=gpu[:model]:G    G per node: gpus_per_task = ceil(G / tasks per node), gpu_model
    --gpus-per-node=[m:]G   the same
    --gpus-per-task=G       gpus_per_task = G
    -G/--gpus=[m:]G         G per job: ceil(ceil(G / nodes) / tasks per node) per task
    --mem / --mem-per-cpu / --mem-per-gpu      mem (per node, in MB)

GPUs per node that do not divide among the node's tasks are rounded up per task (Phalanx
gives GPUs to tasks, not to nodes): ``--gres=gpu:1 --ntasks-per-node=2`` holds 2 GPUs.

Options the API has no field for are kept in ``Request.unsupported`` (name -> value).
"""

from __future__ import annotations

import os
import re

from phalanx.errors import PhalanxError

# typing and collections.abc cost milliseconds at every start of a shim: annotations only.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence
    from typing import Any

__all__ = [
    "ALIASES",
    "FLAG",
    "JOB_OPTIONS",
    "OPTIONAL",
    "OPTIONS",
    "VALUE",
    "CommandLineError",
    "OptionTable",
    "Options",
    "Request",
    "export_environment",
    "option_environment",
    "parse_args",
    "parse_gres",
    "parse_memory_mb",
    "to_request",
    "valid_time",
]

EXIT_USAGE = 255
"""Slurm's status for a command line it cannot read (it calls ``exit(-1)``)."""

FLAG, VALUE, OPTIONAL = "flag", "value", "optional"

# long name -> (short letter or "", kind). Aliases map to their canonical long name.
OPTIONS: dict[str, tuple[str, str]] = {
    "account": ("A", VALUE),
    "acctg-freq": ("", VALUE),
    "array": ("a", VALUE),
    "batch": ("", VALUE),
    "begin": ("b", VALUE),
    "chdir": ("D", VALUE),
    "clusters": ("M", VALUE),
    "comment": ("", VALUE),
    "constraint": ("C", VALUE),
    "contiguous": ("", FLAG),
    "cores-per-socket": ("", VALUE),
    "cpu-freq": ("", VALUE),
    "cpus-per-gpu": ("", VALUE),
    "cpus-per-task": ("c", VALUE),
    "deadline": ("", VALUE),
    "delay-boot": ("", VALUE),
    "dependency": ("d", VALUE),
    "distribution": ("m", VALUE),
    "error": ("e", VALUE),
    "exclude": ("x", VALUE),
    "exclusive": ("", OPTIONAL),
    "export": ("", VALUE),
    "export-file": ("", VALUE),
    "extra-node-info": ("B", VALUE),
    "get-user-env": ("", OPTIONAL),
    "gid": ("", VALUE),
    "gpu-bind": ("", VALUE),
    "gpu-freq": ("", VALUE),
    "gpus": ("G", VALUE),
    "gpus-per-node": ("", VALUE),
    "gpus-per-socket": ("", VALUE),
    "gpus-per-task": ("", VALUE),
    "gres": ("", VALUE),
    "gres-flags": ("", VALUE),
    "help": ("h", FLAG),
    "hint": ("", VALUE),
    "hold": ("H", FLAG),
    "ignore-pbs": ("", FLAG),
    "input": ("i", VALUE),
    "job-name": ("J", VALUE),
    "kill-on-invalid-dep": ("", VALUE),
    "licenses": ("L", VALUE),
    "mail-type": ("", VALUE),
    "mail-user": ("", VALUE),
    "mcs-label": ("", VALUE),
    "mem": ("", VALUE),
    "mem-bind": ("", VALUE),
    "mem-per-cpu": ("", VALUE),
    "mem-per-gpu": ("", VALUE),
    "mincpus": ("", VALUE),
    "network": ("", VALUE),
    "nice": ("", OPTIONAL),
    "no-kill": ("k", OPTIONAL),
    "no-requeue": ("", FLAG),
    "nodefile": ("F", VALUE),
    "nodelist": ("w", VALUE),
    "nodes": ("N", VALUE),
    "ntasks": ("n", VALUE),
    "ntasks-per-core": ("", VALUE),
    "ntasks-per-gpu": ("", VALUE),
    "ntasks-per-node": ("", VALUE),
    "ntasks-per-socket": ("", VALUE),
    "open-mode": ("", VALUE),
    "output": ("o", VALUE),
    "overcommit": ("O", FLAG),
    "oversubscribe": ("s", FLAG),
    "parsable": ("", FLAG),
    "partition": ("p", VALUE),
    "power": ("", VALUE),
    "prefer": ("", VALUE),
    "priority": ("", VALUE),
    "profile": ("", VALUE),
    "propagate": ("", OPTIONAL),
    "qos": ("q", VALUE),
    "quiet": ("Q", FLAG),
    "reboot": ("", FLAG),
    "requeue": ("", FLAG),
    "reservation": ("", VALUE),
    "signal": ("", VALUE),
    "sockets-per-node": ("", VALUE),
    "spread-job": ("", FLAG),
    "switches": ("", VALUE),
    "test-only": ("", FLAG),
    "thread-spec": ("", VALUE),
    "threads-per-core": ("", VALUE),
    "time": ("t", VALUE),
    "time-min": ("", VALUE),
    "tmp": ("", VALUE),
    "uid": ("", VALUE),
    "usage": ("", FLAG),
    "use-min-nodes": ("", FLAG),
    "verbose": ("v", FLAG),
    "version": ("V", FLAG),
    "wait": ("W", FLAG),
    "wait-all-nodes": ("", VALUE),
    "wckey": ("", VALUE),
    "wrap": ("", VALUE),
}
ALIASES = {"tasks-per-node": "ntasks-per-node"}


class CommandLineError(PhalanxError):
    """A command line (or ``#SBATCH`` line) Slurm would refuse: ``lines`` go to stderr as
    they are, and the command exits with ``status`` (255 as Slurm, 1 where Slurm says so)."""

    def __init__(self, lines: Sequence[str], status: int = EXIT_USAGE) -> None:
        self.lines = list(lines)
        self.status = status
        super().__init__("\n".join(self.lines))


class Options:
    """What a command line said: the last value of each option (by canonical long name),
    in the order given, with how often ``-v`` came."""

    __slots__ = ("values", "verbose")

    def __init__(self) -> None:
        self.values: dict[str, str] = {}
        """Flags have the value ``""``; ``--no-requeue`` is ``requeue="no"``."""
        self.verbose = 0

    def set(self, name: str, value: str) -> None:
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


class OptionTable:
    """A command's options: long name -> (short letter or "", kind), and long aliases."""

    __slots__ = ("aliases", "names", "options", "shorts")

    def __init__(
        self, options: Mapping[str, tuple[str, str]], aliases: Mapping[str, str] | None = None
    ) -> None:
        self.options = dict(options)
        self.aliases = dict(aliases or {})
        self.shorts = {short: long for long, (short, _) in self.options.items() if short}
        self.names = sorted({*self.options, *self.aliases})

    def long_name(self, given: str, word: str, prog: str) -> str:
        """The option ``--given`` stands for: exact, an alias, or an unambiguous prefix."""
        if given in self.options:
            return given
        if given in self.aliases:
            return self.aliases[given]
        matches = {self.aliases.get(n, n) for n in self.names if given and n.startswith(given)}
        if len(matches) == 1:
            return matches.pop()
        if len(matches) > 1:
            raise CommandLineError(_getopt_error(prog, f"option '{word}' is ambiguous"))
        unknown = word.partition("=")[0]
        raise CommandLineError(_getopt_error(prog, f"unrecognized option '{unknown}'"))


JOB_OPTIONS = OptionTable(OPTIONS, ALIASES)
"""The options of sbatch (and, largely, of srun and salloc)."""


def parse_args(
    argv: Sequence[str],
    prog: str,
    options: Options | None = None,
    *,
    table: OptionTable = JOB_OPTIONS,
    permute: bool = False,
) -> tuple[Options, list[str]]:
    """Read options from ``argv`` into ``options`` (a fresh one by default); return them and
    the other words. The first word that is not an option ends the options unless
    ``permute`` (GNU order: options and words may mix). Raise ``CommandLineError`` as
    getopt_long reports."""
    found = Options() if options is None else options
    words: list[str] = []
    i = 0
    while i < len(argv):
        word = argv[i]
        if word == "--":
            return found, [*words, *argv[i + 1 :]]
        if word.startswith("--"):
            i = _long(argv, i, prog, found, table)
        elif word.startswith("-") and len(word) > 1:
            i = _short(argv, i, prog, found, table)
        elif permute:
            words.append(word)
            i += 1
        else:
            return found, list(argv[i:])
    return found, words


def _long(argv: Sequence[str], i: int, prog: str, found: Options, table: OptionTable) -> int:
    word = argv[i]
    given, eq, value = word[2:].partition("=")
    name = table.long_name(given, word, prog)
    kind = table.options[name][1]
    if kind == FLAG:
        if eq:
            message = f"option '--{name}' doesn't allow an argument"
            raise CommandLineError(_getopt_error(prog, message))
        found.set(name, "")
        return i + 1
    if eq or kind == OPTIONAL:
        found.set(name, value)
        return i + 1
    if i + 1 >= len(argv):
        raise CommandLineError(_getopt_error(prog, f"option '--{name}' requires an argument"))
    found.set(name, argv[i + 1])
    return i + 2


def _short(argv: Sequence[str], i: int, prog: str, found: Options, table: OptionTable) -> int:
    word = argv[i]
    j = 1
    while j < len(word):
        letter = word[j]
        name = table.shorts.get(letter)
        if name is None:
            raise CommandLineError(_getopt_error(prog, f"invalid option -- '{letter}'"))
        kind = table.options[name][1]
        if kind == FLAG:
            found.set(name, "")
            j += 1
            continue
        rest = word[j + 1 :]
        if rest or kind == OPTIONAL:
            found.set(name, rest)
            return i + 1
        if i + 1 >= len(argv):
            message = f"option requires an argument -- '{letter}'"
            raise CommandLineError(_getopt_error(prog, message))
        found.set(name, argv[i + 1])
        return i + 2
    return i + 1


def _getopt_error(prog: str, message: str) -> list[str]:
    return [f"{prog}: {message}", f'Try "{prog} --help" for more information']


# ---------------------------------------------------------------------------- values
_TIME = re.compile(r"^(?:(\d+)-(\d+)(?::(\d+)(?::(\d+))?)?|(\d+)(?::(\d+)(?::(\d+))?)?)$")
_MEM = re.compile(r"^(\d+(?:\.\d+)?)([KMGT]?)B?$", re.IGNORECASE)
_UNIT_MB = {"K": 1 / 1024, "M": 1.0, "": 1.0, "G": 1024.0, "T": 1024.0 * 1024}
_MODEL_COUNT = re.compile(r"^(?:([A-Za-z][\w.-]*):)?(\d+)$")


def valid_time(text: str) -> bool:
    """A Slurm time limit: minutes, MM:SS, HH:MM:SS, D-HH, D-HH:MM, D-HH:MM:SS, UNLIMITED.
    As Slurm, hours < 24 after a day count, minutes and seconds < 60 after an hour."""
    value = text.strip()
    if value.upper() in ("UNLIMITED", "INFINITE", "-1"):
        return True
    m = _TIME.match(value)
    if m is None:
        return False
    days, d_hours, d_min, d_sec, _first, second, third = m.groups()
    if days is not None:
        return int(d_hours) < 24 and all(int(v) < 60 for v in (d_min, d_sec) if v is not None)
    if third is not None:
        return int(second) < 60 and int(third) < 60
    return second is None or int(second) < 60


def parse_memory_mb(text: str, prog: str, option: str) -> int:
    """Megabytes from a Slurm size (``4G``, ``500M``, ``4GB``, ``1024``)."""
    m = _MEM.match(text.strip())
    if m is None:
        raise CommandLineError([f"{prog}: error: Invalid --{option} specification"])
    return int(float(m.group(1)) * _UNIT_MB[m.group(2).upper()] + 0.5)


def parse_gres(text: str, prog: str) -> tuple[int, str | None, str | None]:
    """``gpu[:model][:N]`` items, comma-separated: (GPUs per node, model, shard spec).
    A name other than gpu or shard is refused as Slurm does (status 1)."""
    gpus, model, shard = 0, None, None
    for item in text.split(","):
        name, _, rest = item.strip().partition(":")
        if name == "none" and not rest:
            continue
        if name not in ("gpu", "shard"):
            raise CommandLineError(
                [f"{prog}: error: Invalid generic resource (gres) specification"], 1
            )
        fields = rest.split(":") if rest else []
        count = 1
        if fields and fields[-1].isdigit():
            count = int(fields.pop())
        if name == "shard":
            shard = item.strip()
            continue
        gpus += count
        if fields:
            model = fields[0]
    return gpus, model, shard


def _model_count(text: str, prog: str, option: str) -> tuple[int, str | None]:
    m = _MODEL_COUNT.match(text.strip())
    if m is None:
        raise CommandLineError([f"{prog}: error: Invalid --{option} specification"])
    return int(m.group(2)), m.group(1)


def _positive(options: Options, name: str, prog: str) -> int | None:
    text = options.get(name)
    if text is None:
        return None
    if not text.strip().isdigit() or int(text) < 1:
        raise CommandLineError([f'{prog}: error: Invalid numeric value "{text}" for --{name}.'], 1)
    return int(text)


def _nodes(text: str, prog: str) -> tuple[int, int] | None:
    value = text.strip()
    if value.startswith("-") and value[1:].isdigit():
        return None  # Slurm ignores a negative count
    lo_text, dash, hi_text = value.partition("-")
    if not lo_text.isdigit() or (dash and not hi_text.isdigit()):
        raise CommandLineError([f'{prog}: error: "{text}" is not a valid node count'])
    lo = int(lo_text)
    hi = int(hi_text) if dash else lo
    if hi < lo:
        raise CommandLineError(
            [f"{prog}: error: Maximum node count {hi} is less than minimum node count {lo}"]
        )
    return lo, hi


# ---------------------------------------------------------------------------- the request
# Options whose value is the JobRequest field of that name, unchanged.
_PASSED = {
    "job-name": "name",
    "output": "output",
    "error": "error",
    "time": "time",
    "partition": "partition",
    "account": "account",
    "qos": "qos",
    "array": "array",
    "dependency": "dependency",
    "signal": "signal",
    "comment": "comment",
}
# Options read by the command itself or by to_request: never "unsupported".
_HANDLED = {
    *_PASSED,
    "nodes",
    "ntasks",
    "ntasks-per-node",
    "cpus-per-task",
    "cpus-per-gpu",
    "mem",
    "mem-per-cpu",
    "mem-per-gpu",
    "gres",
    "gpus",
    "gpus-per-node",
    "gpus-per-task",
    "open-mode",
    "requeue",
    "exclusive",
    "constraint",
    "switches",
    "chdir",
    "export",
    "hold",
    "begin",
    "nice",
    "parsable",
    "wrap",
    "quiet",
    "test-only",
    "wait",
    "help",
    "usage",
    "version",
}


class Request:
    """A ``JobRequest`` as JSON (``body``) and the options it could not carry."""

    __slots__ = ("body", "unsupported")

    def __init__(self, body: dict[str, Any], unsupported: dict[str, str]) -> None:
        self.body = body
        self.unsupported = unsupported


def to_request(options: Options, prog: str, environ: Mapping[str, str], cwd: str) -> Request:
    """The request the options ask for (option by option in this module's docstring); the caller
    adds ``command``. Raise ``CommandLineError`` for values Slurm refuses before submitting."""
    body: dict[str, Any] = {}
    for option, field in _PASSED.items():
        value = options.get(option)
        if value is not None:
            body[field] = value
    if "time" in body and not valid_time(body["time"]):
        raise CommandLineError([f"{prog}: error: Invalid --time specification"])
    _shape(options, prog, body)
    body["open_mode"] = _open_mode(options.get("open-mode"), prog)
    if options.get("requeue") == "no":
        body["requeue"] = False
    if "exclusive" in options:
        body["exclusive"] = True
    if "hold" in options:
        body["hold"] = True
    constraint = options.get("constraint")
    if constraint:
        body["constraint"] = [f for f in re.split(r"[&,]", constraint) if f.strip()]
    switches = options.get("switches")
    if switches is not None:
        count, _, wait = switches.partition("@")
        if not count.isdigit() or (wait and not valid_time(wait)):
            raise CommandLineError([f"{prog}: error: Invalid --switches specification"])
        body["switches"] = int(count)
        if wait:
            body["switches_wait"] = wait
    nice = options.get("nice")
    if nice is not None:
        body["nice"] = _integer(nice or "100", prog, "nice")
    begin = options.get("begin")
    if begin is not None:
        from phalanx.slurm.script import parse_begin  # datetime only when asked for

        body["begin"] = parse_begin(begin, prog)
    chdir = options.get("chdir")
    body["workdir"] = os.path.join(cwd, os.path.expanduser(chdir)) if chdir else cwd
    body["environment"] = export_environment(options.get("export"), environ)
    body["environment"].update(option_environment(options, prog))
    unsupported = {k: v for k, v in options.values.items() if k not in _HANDLED}
    return Request(body, unsupported)


def _shape(options: Options, prog: str, body: dict[str, Any]) -> None:
    nodes_text = options.get("nodes")
    nodes = _nodes(nodes_text, prog) if nodes_text is not None else None
    if nodes is not None:
        body["nodes"] = str(nodes[0]) if nodes[0] == nodes[1] else f"{nodes[0]}-{nodes[1]}"
    node_count = max(nodes[0], 1) if nodes is not None else 1
    ntasks = _positive(options, "ntasks", prog)
    per_node = _positive(options, "ntasks-per-node", prog)
    if per_node is None:
        per_node = -(-ntasks // node_count) if ntasks is not None else 1
    gpus, model = _gpus_per_task(options, prog, node_count, per_node)
    cpus_per_task = _positive(options, "cpus-per-task", prog)
    cpus_per_gpu = _positive(options, "cpus-per-gpu", prog)
    if cpus_per_task is None and cpus_per_gpu is not None and gpus:
        cpus = cpus_per_gpu * gpus
    else:
        cpus = cpus_per_task or 1
    body["ntasks_per_node"] = per_node
    body["cpus_per_task"] = cpus
    if gpus:
        body["gpus_per_task"] = gpus
    if model is not None:
        body["gpu_model"] = model
    mem = _memory_per_node(options, prog, cpus * per_node, gpus * per_node)
    if mem is not None:
        body["mem"] = f"{mem}M"


def _gpus_per_task(
    options: Options, prog: str, nodes: int, per_node: int
) -> tuple[int, str | None]:
    model: str | None = None
    per_task = 0
    gres = options.get("gres")
    if gres is not None:
        gpus, model, _shard = parse_gres(gres, prog)
        per_task = -(-gpus // per_node)
    text = options.get("gpus-per-node")
    if text is not None:
        gpus, model = _model_count(text, prog, "gpus-per-node")
        per_task = -(-gpus // per_node)
    text = options.get("gpus-per-task")
    if text is not None:
        per_task, model = _model_count(text, prog, "gpus-per-task")
    text = options.get("gpus")
    if text is not None:
        count, model = _model_count(text, prog, "gpus")
        per_node_gpus = -(-count // nodes)
        per_task = -(-per_node_gpus // per_node)
    return per_task, model


def _memory_per_node(options: Options, prog: str, cpus: int, gpus: int) -> int | None:
    text = options.get("mem")
    if text is not None:
        return parse_memory_mb(text, prog, "mem")
    text = options.get("mem-per-cpu")
    if text is not None:
        return parse_memory_mb(text, prog, "mem-per-cpu") * cpus
    text = options.get("mem-per-gpu")
    if text is not None:
        return parse_memory_mb(text, prog, "mem-per-gpu") * max(gpus, 1)
    return None


def _open_mode(text: str | None, prog: str) -> str:
    # Slurm's default (JobFileAppend=0) truncates; the API's default is append.
    if text is None:
        return "truncate"
    for mode in ("append", "truncate"):
        if text and mode.startswith(text.lower()):
            return mode
    raise CommandLineError([f"{prog}: error: Invalid --open-mode argument: {text}"])


def _integer(text: str, prog: str, option: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise CommandLineError([f"{prog}: error: Invalid --{option} value: {text}"]) from None


def option_environment(options: Options, prog: str) -> dict[str, str]:
    """The variables Slurm's sbatch, srun and salloc set for the job from their options (and
    from themselves), which the job's tasks inherit: ``SLURM_GPUS_PER_TASK`` and the other GPU
    counts as written, memory in MB, ``SLURM_EXPORT_ENV``, the submitting process's nice value
    (``SLURM_PRIO_PROCESS``) and host (``SLURM_SUBMIT_HOST``, short, as Slurm names hosts)."""
    env: dict[str, str] = {}
    for option in ("gpus-per-task", "gpus-per-node", "gpus"):
        value = options.get(option)
        if value is not None:
            env["SLURM_" + option.upper().replace("-", "_")] = value
    for option in ("mem-per-cpu", "mem-per-gpu"):
        value = options.get(option)
        if value is not None and options.get("mem") is None:
            name = "SLURM_" + option.upper().replace("-", "_")
            env[name] = str(parse_memory_mb(value, prog, option))
    mem = options.get("mem")
    if mem is not None:
        env["SLURM_MEM_PER_NODE"] = str(parse_memory_mb(mem, prog, "mem"))
    export = options.get("export")
    if export is not None:
        env["SLURM_EXPORT_ENV"] = export
    env["SLURM_PRIO_PROCESS"] = str(os.getpriority(os.PRIO_PROCESS, 0))
    env["SLURM_SUBMIT_HOST"] = os.uname().nodename.split(".")[0]
    return env


def export_environment(spec: str | None, environ: Mapping[str, str]) -> dict[str, str]:
    """``--export``: ``ALL`` (the default, also from ``SBATCH_EXPORT``), ``NONE``, or a list
    of ``VAR`` and ``VAR=value`` with or without ``ALL``; without ``ALL`` only the named
    variables (and ``SLURM_*``) go with the job."""
    text = spec if spec is not None else environ.get("SBATCH_EXPORT", "ALL")
    items = [item for item in text.split(",") if item]
    upper = {item.upper() for item in items}
    if "ALL" in upper:
        env = dict(environ)
    else:
        env = {k: v for k, v in environ.items() if k.startswith("SLURM_")}
    for item in items:
        if item.upper() in ("ALL", "NONE", "NIL"):
            continue
        name, eq, value = item.partition("=")
        if eq:
            env[name] = value
        elif name in environ:
            env[name] = environ[name]
    return env
