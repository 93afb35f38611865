"""The ``JobRequest`` (as JSON) that the job options of ``sbatch``, ``srun`` and ``salloc``
ask for. Their tables are ``phalanx.slurm.jobtable``'s; the parser is
``phalanx.slurm.commandline``'s.

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
    --elastic               Phalanx's own (``PHALANX_OWN``): with --nodes=MIN-MAX, the job
                            starts with what fits, as Slurm's, and may then be grown up to
                            MAX nodes and shrunk down to MIN while it runs

GPUs per node that do not divide among the node's tasks are rounded up per task (Phalanx
gives GPUs to tasks, not to nodes): ``--gres=gpu:1 --ntasks-per-node=2`` holds 2 GPUs.

Options the command's table does not mark implemented (ignored ones: ``-w``, ``--mail-type``...)
are kept in ``Request.unsupported`` (name -> value). ``-M/--clusters`` naming other clusters
only is refused as Slurm refuses a cluster it cannot reach.
"""

from __future__ import annotations

import os
import re

from phalanx.slurm.commandline import (
    IMPLEMENTED,
    CommandLineError,
    Options,
    OptionTable,
    clusters_reached,
    unreachable_clusters,
)

# typing and collections.abc cost milliseconds at every start of a shim: annotations only.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

__all__ = [
    "CommandLineError",
    "Options",
    "Request",
    "export_environment",
    "option_environment",
    "parse_gres",
    "parse_memory_mb",
    "to_request",
    "valid_time",
]

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
        if fields and fields[-1].isdecimal():
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
    if not text.strip().isdecimal() or int(text) < 1:
        raise CommandLineError([f'{prog}: error: Invalid numeric value "{text}" for --{name}.'], 1)
    return int(text)


def _nodes(text: str, prog: str) -> tuple[int, int] | None:
    value = text.strip()
    if value.startswith("-") and value[1:].isdecimal():
        return None  # Slurm ignores a negative count
    lo_text, dash, hi_text = value.partition("-")
    if not lo_text.isdecimal() or (dash and not hi_text.isdecimal()):
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


class Request:
    """A ``JobRequest`` as JSON (``body``) and the options it could not carry."""

    __slots__ = ("body", "unsupported")

    def __init__(self, body: dict[str, Any], unsupported: dict[str, str]) -> None:
        self.body = body
        self.unsupported = unsupported


def to_request(
    options: Options, table: OptionTable, environ: Mapping[str, str], cwd: str
) -> Request:
    """The request the options ask for (option by option in this module's docstring); the caller
    adds ``command``. Raise ``CommandLineError`` for values Slurm refuses before submitting."""
    prog = table.prog
    clusters = options.get("clusters")
    if clusters is not None and not clusters_reached(clusters):
        raise unreachable_clusters(prog, clusters)
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
    if "elastic" in options:
        body["elastic"] = True
    if "hold" in options:
        body["hold"] = True
    constraint = options.get("constraint")
    if constraint:
        body["constraint"] = [f for f in re.split(r"[&,]", constraint) if f.strip()]
    switches = options.get("switches")
    if switches is not None:
        count, _, wait = switches.partition("@")
        if not count.isdecimal() or (wait and not valid_time(wait)):
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
    unsupported = {
        name: value
        for name, value in options.values.items()
        if name in table.options and table.options[name].status != IMPLEMENTED
    }
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
