"""``scontrol``: show jobs, nodes, partitions, the configuration and the topology; hold,
release, requeue and update jobs; expand and compress host lists; ping the controller.

Records print as Slurm 22.05 prints them: ``Key=Value`` lines indented three spaces and a
blank line after each record, or one line per record with ``-o``. Slurm fields that Phalanx
has no notion of print Slurm's value for "not set" (``MCS_label=N/A``, ``Licenses=(null)``).
Exit status: 0, or 1 when any request failed (Slurm's messages, on stderr).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from typing import Any

from phalanx.client.wirecall import ApiError, ControllerUnreachable
from phalanx.errors import PhalanxError
from phalanx.slurm import UNREACHABLE, cluster_name
from phalanx.slurm.commandline import (
    CommandLineError,
    clusters_reached,
    parse_args,
    unreachable_clusters,
)
from phalanx.slurm.format import (
    MIN_JOB_AGE_MS,
    compress,
    expand,
    hms,
    instant,
    memory,
)
from phalanx.slurm.querytables import SCONTROL
from phalanx.slurm.scontroljob import (
    Fail,
    Record,
    call,
    job_record,
    show_job,
    slurm_error,
)

__all__ = ["job_record", "main", "node_record", "partition_record"]

Job = dict[str, Any]

VERSION = "22.05.8"


# ------------------------------------------------------------------------------ nodes
def node_record(node: dict[str, Any]) -> Record:
    """``scontrol show node`` for one ``NodeInfo``."""
    cpus, gpus = int(node["cpus"]), int(node["gpus"])
    state = node_state(node) + ("" if node.get("agent", True) else "*")
    gres = f"gpu:{node['gpu_model']}:{gpus}" if node.get("gpu_model") else f"gpu:{gpus}"
    cfg = f"cpu={cpus},mem={memory(int(node['memory_mb']))},billing={cpus}"
    alloc = []
    if node["cpus_alloc"]:
        alloc.append(f"cpu={node['cpus_alloc']}")
    used = float(node["gpus_alloc"])
    if used:
        alloc.append(f"gres/gpu={int(used) if used == int(used) else used}")
    if gpus:
        cfg += f",gres/gpu={gpus}"
    name = node["name"]
    mem_alloc = int(node.get("mem_alloc_mb") or 0)
    if mem_alloc:
        alloc.insert(1 if node["cpus_alloc"] else 0, f"mem={memory(mem_alloc)}")
    load = node.get("cpu_load")
    free = node.get("free_mem_mb")
    out = [
        f"NodeName={name} Arch={node.get('arch') or '(null)'} CoresPerSocket={cpus} ",
        f"CPUAlloc={node['cpus_alloc']} CPUEfctv={cpus} CPUTot={cpus} "
        f"CPULoad={'N/A' if load is None else f'{float(load):.2f}'}",
        "AvailableFeatures=(null)",
        "ActiveFeatures=(null)",
        f"Gres={gres if gpus else '(null)'}",
        f"NodeAddr={node.get('address') or name} NodeHostName={name} Version={VERSION}",
    ]
    if node.get("os"):
        out.append(f"OS={node['os']} ")
    out += [
        f"RealMemory={node['memory_mb']} AllocMem={mem_alloc} "
        f"FreeMem={'N/A' if free is None else int(free)} Sockets=1 Boards=1",
        f"State={state} ThreadsPerCore=1 TmpDisk=0 Weight=1 Owner=N/A MCS_label=N/A",
        f"Partitions={','.join(node.get('partitions') or ())} ",
        f"BootTime={_time_or_none(node.get('boot_time'))} "
        f"SlurmdStartTime={_time_or_none(node.get('agent_start'))}",
        "LastBusyTime=Unknown",
        f"CfgTRES={cfg}",
        f"AllocTRES={','.join(alloc)}",
        "CapWatts=n/a",
        "CurrentWatts=0 AveWatts=0",
        "ExtSensorsJoules=n/s ExtSensorsWatts=0 ExtSensorsTemp=n/s",
    ]
    if node.get("reason"):
        by = node.get("reason_user")
        when = node.get("reason_time")
        stamp = f" [{by}@{instant(int(when))}]" if by and when is not None else ""
        out.append(f"Reason={node['reason']}{stamp}")
    return out


def node_state(node: dict[str, Any]) -> str:
    """``State=`` as Slurm prints it: the base state, then ``+DRAIN`` for a drained node
    (``IDLE+DRAIN`` drained, ``MIXED+DRAIN`` or ``ALLOCATED+DRAIN`` draining)."""
    state = str(node["state"])
    if state not in ("drained", "draining"):
        return state.upper()
    used, gpus = float(node["gpus_alloc"]), int(node["gpus"])
    if state == "drained":
        base = "IDLE"
    else:
        base = "MIXED" if 0 < used < gpus or (not used and node["cpus_alloc"]) else "ALLOCATED"
    return f"{base}+DRAIN"


def _time_or_none(ms: int | None) -> str:
    return "None" if ms is None else instant(int(ms))


def show_node(arg: str | None) -> list[Record]:
    nodes: list[dict[str, Any]] = call("GET", "/v1/nodes")
    if arg is not None:
        try:
            wanted = set(expand(arg))
        except PhalanxError:  # no host list: as a name no node has
            wanted = set()
        nodes = [n for n in nodes if n["name"] in wanted]
        if not nodes:
            raise Fail(f"Node {arg} not found")
    return [node_record(n) for n in nodes]


# ------------------------------------------------------------------------------ partitions
def _time_or(ms: int | None, missing: str) -> str:
    return missing if ms is None else hms(int(ms) // 1000)


def partition_record(part: dict[str, Any], nodes: dict[str, dict[str, Any]]) -> Record:
    """``scontrol show partition`` for one ``PartitionInfo`` (``nodes`` by name)."""
    members = [nodes[n] for n in part["nodes"] if n in nodes]
    cpus = sum(int(n["cpus"]) for n in members)
    gpus = sum(int(n["gpus"]) for n in members)
    mem = sum(int(n["memory_mb"]) for n in members)
    tres = f"cpu={cpus},mem={memory(mem)},node={len(members)},billing={cpus}"
    if gpus:
        tres += f",gres/gpu={gpus}"
    return [
        f"PartitionName={part['name']}",
        "AllowGroups=ALL AllowAccounts=ALL AllowQos=ALL",
        f"AllocNodes=ALL Default={'YES' if part['default'] else 'NO'} QoS=N/A",
        f"DefaultTime={_time_or(part.get('default_time_ms'), 'NONE')} DisableRootJobs=NO "
        "ExclusiveUser=NO GraceTime=0 Hidden=NO",
        f"MaxNodes=UNLIMITED MaxTime={_time_or(part.get('max_time_ms'), 'UNLIMITED')} "
        "MinNodes=0 LLN=NO MaxCPUsPerNode=UNLIMITED",
        f"Nodes={compress(list(part['nodes']))}",
        f"PriorityJobFactor=1 PriorityTier={part.get('priority_tier', 1)} RootOnly=NO "
        "ReqResv=NO OverSubscribe=NO",
        "OverTimeLimit=NONE PreemptMode=REQUEUE",
        f"State=UP TotalCPUs={cpus} TotalNodes={len(members)} SelectTypeParameters=NONE",
        "JobDefaults=(null)",
        "DefMemPerNode=UNLIMITED MaxMemPerNode=UNLIMITED",
        f"TRES={tres}",
    ]


def show_partition(arg: str | None) -> list[Record]:
    parts: list[dict[str, Any]] = call("GET", "/v1/partitions")
    nodes = {n["name"]: n for n in call("GET", "/v1/nodes")}
    if arg is not None:
        parts = [p for p in parts if p["name"] == arg]
        if not parts:
            raise Fail(f"Partition {arg} not found")
    return [partition_record(p, nodes) for p in parts]


# ------------------------------------------------------------------------------ cluster
def show_topology(arg: str | None) -> list[str]:
    """One line per leaf switch, in node order. Spine switches are not on the wire."""
    leaves: dict[str, list[str]] = {}
    for node in call("GET", "/v1/nodes"):
        leaves.setdefault(str(node["leaf"]), []).append(str(node["name"]))
    if arg is not None:
        leaves = {k: v for k, v in leaves.items() if k == arg or arg in v}
        if not leaves:
            raise Fail(f"scontrol: error: Switch or node {arg} not found")
    return [
        f"SwitchName={leaf} Level=0 LinkSpeed=1 Nodes={compress(names)}"
        for leaf, names in leaves.items()
    ]


def _controller_hosts() -> list[str]:
    """The controllers' host names: each of ``PHALANX_URL``'s, else this machine's."""
    urls = [u for u in os.environ.get("PHALANX_URL", "").split(",") if u.strip()]
    if urls:
        import urllib.parse

        return [urllib.parse.urlsplit(u.strip()).hostname or "localhost" for u in urls]
    return [os.uname().nodename.split(".")[0]]


def _ping_lines() -> tuple[list[str], bool]:
    """As Slurm's ``scontrol ping``: a line per controller (``primary``, then ``backup``, or
    ``backup1``... when there are more than two), UP when it answers -- a standby answers
    too, as a backup slurmctld does. True if any is up."""
    from phalanx.client.address import find_controller
    from phalanx.client.wirecall import WireCaller

    address = find_controller()
    hosts = _controller_hosts()
    states: list[bool] = []
    if address.url is None:
        try:
            answer = call("GET", "/v1/ping")
            states.append(bool(answer.get("ok")) if isinstance(answer, dict) else False)
        except PhalanxError:
            states.append(False)
    else:
        caller = WireCaller(address, timeout=5)
        for url in address.urls:
            try:
                _, answer = caller.call_at(url, "GET", "/v1/ping")
                states.append(isinstance(answer, dict) and "controller_id" in answer)
            except PhalanxError:
                states.append(False)
    lines = []
    for i, (host, up) in enumerate(zip(hosts, states, strict=False)):
        mode = "primary" if i == 0 else "backup" if i == 1 and len(states) == 2 else f"backup{i}"
        lines.append(f"Slurmctld({mode}) at {host} is {'UP' if up else 'DOWN'}")
    if not all(states) and os.getuid() == 0:
        lines += ["*" * 41, "** RESTORE SLURMCTLD DAEMON TO SERVICE **", "*" * 41]
    return lines, any(states)


def show_config() -> list[str]:
    """The part of ``slurm.conf`` Phalanx has: its fixed plugins and the priority weights
    of ``priority/multifactor`` (Phalanx's defaults: the weights are not on the wire)."""
    nodes = call("GET", "/v1/nodes")
    parts = call("GET", "/v1/partitions")
    url = os.environ.get("PHALANX_URL", "")
    port = url.rsplit(":", 1)[-1].rstrip("/") if url.count(":") == 2 else "(null)"
    values = {
        "ClusterName": cluster_name(),
        "DefMemPerNode": "UNLIMITED",
        "JobCompType": "jobcomp/none",
        "KillWait": "30 sec",
        "MinJobAge": f"{MIN_JOB_AGE_MS // 1000} sec",
        "NodeCount": str(len(nodes)),
        "PartitionCount": str(len(parts)),
        "PreemptMode": "REQUEUE",
        "PreemptType": "preempt/partition_prio",
        "PriorityDecayHalfLife": "7-00:00:00",
        "PriorityFlags": "",
        "PriorityMaxAge": "7-00:00:00",
        "PriorityType": "priority/multifactor",
        "PriorityWeightAge": "1000",
        "PriorityWeightAssoc": "0",
        "PriorityWeightFairShare": "10000",
        "PriorityWeightJobSize": "1000",
        "PriorityWeightPartition": "1000",
        "PriorityWeightQOS": "1000",
        "PriorityWeightTRES": "(null)",
        "SLURM_VERSION": VERSION,
        "SchedulerType": "sched/backfill",
        "SelectType": "select/cons_tres",
        "SelectTypeParameters": "CR_CPU_MEMORY",
        **{f"SlurmctldHost[{i}]": host for i, host in enumerate(_controller_hosts())},
        "SlurmctldPort": port,
        "TopologyPlugin": "topology/tree",
    }
    lines = [f"{key:<23} = {value}" for key, value in sorted(values.items())]
    return [*lines, "", *_ping_lines()[0]]


def _hosts(arg: str | None) -> list[str]:
    text = arg if arg is not None else os.environ.get("SLURM_JOB_NODELIST")
    if not text:
        raise Fail("scontrol: error: host list is empty")
    try:
        return expand(text)
    except PhalanxError:
        raise Fail(f"scontrol: error: Invalid hostlist: {text}") from None


# ------------------------------------------------------------------------------ actions
def _job_ids(args: list[str]) -> list[str]:
    out: list[str] = []
    for arg in args:
        lower = arg.lower()
        for prefix in ("jobid=", "job="):
            if lower.startswith(prefix):
                arg = arg[len(prefix) :]
        out.extend(i for i in arg.replace(" ", ",").split(",") if i)
    return out


def _resolve(text: str) -> int:
    """The Phalanx job id of ``123`` or ``123_4``; ``Fail`` if there is none."""
    head, _, tail = text.partition("_")
    if not head.isdecimal() or (tail and not tail.isdecimal()):
        raise Fail(f"Invalid job id specified for job {text}")
    if not tail:
        return int(head)
    answer = call("GET", "/v1/jobs", query={"all": True, "ids": head})
    for job in answer["jobs"]:
        if job.get("array_job_id") == int(head) and job.get("array_task_id") == int(tail):
            return int(job["job_id"])
    raise Fail(f"Invalid job id specified for job {text}")


def act(verb: str, args: list[str]) -> int:
    """``hold``, ``release`` or ``requeue`` each job named in ``args``."""
    ids = _job_ids(args)
    if not ids:
        print(f"scontrol: error: too few arguments for keyword:{verb}", file=sys.stderr)
        return 1
    rc = 0
    for text in ids:
        try:
            job_id = _resolve(text)
            if verb == "hold":
                job = call("GET", f"/v1/jobs/{job_id}")
                if job["state"] != "PENDING" and job.get("array_job_id") is None:
                    raise Fail(f"Job is no longer pending execution for job {text}")
            changed = call("POST", f"/v1/jobs/{job_id}/{verb}")["changed"]
            if verb == "requeue" and not changed:
                raise Fail(f"Job is pending execution for job {text}")
        except ApiError as exc:
            print(f"{slurm_error(exc)} for job {text}", file=sys.stderr)
            rc = 1
        except Fail as exc:
            print(exc, file=sys.stderr)
            rc = 1
    return rc


_UPDATE_KEYS = {"jobid": "jobid", "job": "jobid", "timelimit": "time", "priority": "priority"}


_NODE_STATES = ("drain", "down", "resume", "undrain")


def update_nodes(args: list[str]) -> int:
    """``update NodeName=LIST State=drain|down|resume|undrain [Reason=TEXT]`` (keys in any
    case), with Slurm's messages and exit status 1 for what it refuses."""
    fields: dict[str, str] = {}
    for arg in args:
        key, eq, value = arg.partition("=")
        key = key.lower()
        if not eq or key not in ("nodename", "state", "reason"):
            print(f"Update of this parameter is not supported: {arg}", file=sys.stderr)
            print("Request aborted", file=sys.stderr)
            return 1
        fields[key] = value
    state = fields.get("state", "").lower()
    if state not in _NODE_STATES:
        print(f"Invalid input: state={fields.get('state', '')}", file=sys.stderr)
        print("Request aborted", file=sys.stderr)
        print("Valid states are: DRAIN DOWN RESUME UNDRAIN", file=sys.stderr)
        print("Not all states are valid given a node's prior state", file=sys.stderr)
        return 1
    reason = fields.get("reason", "")
    if state in ("drain", "down") and not reason:
        print(
            "You must specify a reason when DOWNING or DRAINING a node. Request denied",
            file=sys.stderr,
        )
        return 1
    try:
        names = expand(fields.get("nodename", ""))
    except PhalanxError:  # expand's ConfigError (n[1-)
        names = []
    if not names:
        print("slurm_update error: Invalid node name specified", file=sys.stderr)
        return 1
    try:
        call("PATCH", "/v1/nodes", body={"nodes": names, "state": state, "reason": reason})
    except ApiError as exc:
        text = {404: "Invalid node name specified", 409: "Invalid node state specified"}
        print(f"slurm_update error: {text.get(exc.status) or slurm_error(exc)}", file=sys.stderr)
        return 1
    return 0


def update(args: list[str]) -> int:
    """``update JobId=N TimeLimit=T Priority=P`` (keys in any case), or a node's state
    (``update_nodes``)."""
    if args and args[0].partition("=")[0].lower() == "nodename":
        return update_nodes(args)
    job_text: str | None = None
    body: dict[str, Any] = {}
    for arg in args:
        key, eq, value = arg.partition("=")
        field = _UPDATE_KEYS.get(key.lower())
        if not eq or field is None:
            print(f"Update of this parameter is not supported: {arg}", file=sys.stderr)
            print("Request aborted", file=sys.stderr)
            return 1
        if field == "jobid":
            job_text = value
        elif field == "priority":
            try:
                body["priority"] = int(value)
            except ValueError:
                print(f"scontrol: error: Invalid Priority value: {value}", file=sys.stderr)
                return 1
        else:
            body["time"] = value
    if job_text is None or not body:
        print("scontrol: error: No valid entity in update command", file=sys.stderr)
        print('Input line must include "NodeName", "PartitionName", "JobId"...', file=sys.stderr)
        return 1
    try:
        job_id = _resolve(job_text)
        call("PATCH", f"/v1/jobs/{job_id}", body=body)
    except Fail:
        print("slurm_update error: Invalid job id specified", file=sys.stderr)
        return 1
    except ApiError as exc:
        if exc.status == 422 and "time" in body:
            print("scontrol: error: Invalid TimeLimit value", file=sys.stderr)
        else:
            print(f"slurm_update error: {slurm_error(exc)}", file=sys.stderr)
        return 1
    return 0


# ------------------------------------------------------------------------------ main
def _word(text: str, choices: dict[str, int]) -> str | None:
    """The keyword ``text`` abbreviates (at least its minimum length, any case)."""
    lower = text.lower()
    for word, least in choices.items():
        if len(lower) >= least and word.startswith(lower):
            return word
    return None


COMMANDS = {"show": 3, "hold": 2, "release": 3, "requeue": 3, "update": 2, "ping": 2}
ENTITIES = {
    "job": 1,
    "jobs": 4,
    "node": 1,
    "nodes": 5,
    "partition": 1,
    "partitions": 10,
    "config": 1,
    "topology": 1,
    "hostnames": 5,
    "hostlistsorted": 9,
    "hostlist": 5,
}


def _write(records: list[Record], one_liner: bool) -> None:
    out = sys.stdout
    for record in records:
        if one_liner:
            out.write(" ".join(record) + "\n")
        else:
            out.write(record[0] + "\n" + "".join(f"   {line}\n" for line in record[1:]) + "\n")


def _show(args: list[str], one_liner: bool, details: bool) -> int:
    if not args:
        print("scontrol: error: too few arguments for keyword:show", file=sys.stderr)
        return 1
    entity = _word(args[0], ENTITIES)
    arg = args[1] if len(args) > 1 else None
    if entity is None:
        print(f"scontrol: error: invalid entity:{args[0]} for keyword:show", file=sys.stderr)
        return 1
    lines: list[str] | None = None
    if entity.startswith("job"):
        _write(show_job(arg, details), one_liner)
    elif entity.startswith("node"):
        _write(show_node(arg), one_liner)
    elif entity.startswith("partition"):
        _write(show_partition(arg), one_liner)
    elif entity == "config":
        lines = show_config()
    elif entity == "topology":
        lines = show_topology(arg)
    elif entity == "hostnames":
        lines = _hosts(arg)
    else:
        hosts = _hosts(arg)
        lines = [compress(sorted(hosts) if entity == "hostlistsorted" else hosts)]
    if lines is not None:
        sys.stdout.write("".join(f"{line}\n" for line in lines))
    return 0


_LOADS: dict[str, str] = {
    "job": "slurm_load_jobs",
    "node": "slurm_load_node",
    "partition": "slurm_load_partitions",
    "topology": "slurm_load_topo",
    "config": "slurm_load_ctl_conf",
}


def _load_name(args: list[str]) -> str:
    entity = _word(args[1], ENTITIES) if len(args) > 1 else None
    for prefix, name in _LOADS.items():
        if entity is not None and entity.startswith(prefix):
            return name
    return "slurm_update"


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    try:
        found, rest = parse_args(args, SCONTROL)
        clusters = found.get("clusters")
        if clusters is not None and not clusters_reached(clusters):
            raise unreachable_clusters("scontrol", clusters)
    except CommandLineError as exc:
        print(exc, file=sys.stderr)
        return exc.status
    if "help" in found or "usage" in found:
        print("Usage: scontrol [<OPTION>] [<COMMAND>]")
        return 0
    if "version" in found:
        print(f"slurm {VERSION}")
        return 0
    if not rest:
        print("scontrol: error: no command given (interactive mode is not supported)")
        return 1
    one_liner = "oneliner" in found
    details = "details" in found
    command = _word(rest[0], COMMANDS)
    handlers: dict[str, Callable[[], int]] = {
        "show": lambda: _show(rest[1:], one_liner, details),
        "hold": lambda: act("hold", rest[1:]),
        "release": lambda: act("release", rest[1:]),
        "requeue": lambda: act("requeue", rest[1:]),
        "update": lambda: update(rest[1:]),
        "ping": _ping,
    }
    if command is None:
        print(f"scontrol: error: invalid keyword: {rest[0]}", file=sys.stderr)
        return 1
    try:
        return handlers[command]()
    except Fail as exc:
        print(exc, file=sys.stderr)
        return 1
    except ControllerUnreachable:
        name = _load_name(rest) if command == "show" else "slurm_update"
        print(f"{name} error: {UNREACHABLE}", file=sys.stderr)
        return 1
    except ApiError as exc:
        name = _load_name(rest) if command == "show" else "slurm_update"
        print(f"{name} error: {slurm_error(exc)}", file=sys.stderr)
        return 1


def _ping() -> int:
    lines, up = _ping_lines()
    print("\n".join(lines))
    return 0 if up else 1


if __name__ == "__main__":
    sys.exit(main())
