"""``squeue --json`` / ``--yaml``: the jobs as Slurm 22.05's openapi v0.0.38 ``jobs`` document.

``document(jobs, nodes, now)`` builds ``{"meta", "errors", "jobs"}`` with each job's fields
named and ordered as Slurm prints them (``out/25``, ``out/26`` of the reference); ``to_json``
and ``to_yaml`` print it as Slurm's serializers do (json-c: two-space indent, ``\\/``; libyaml:
every node tagged, an empty string as ``!!null null``). PyYAML is not used: commands import
only the standard library.

What Phalanx does not have prints as Slurm prints an unset value (``""``, ``0``, ``null``):
associations (``association_id`` 0), federation, burst buffers, sockets and cores. Core ids
are not on the wire: ``job_resources.allocated_nodes[].sockets`` lists socket 0's cores for a
job that holds whole nodes (``--exclusive``), and is empty otherwise; GPU indices
(``gres_detail``) are known only when a job holds all of a node's GPUs (else ``IDX:N/A``).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from typing import Any

from phalanx.slurm.format import expand, user_ids

__all__ = ["FIELDS", "document", "to_json", "to_yaml"]

Job = dict[str, Any]
Node = dict[str, Any]

FIELDS = (
    "account",
    "array_job_id",
    "array_task_id",
    "array_throttle",
    "begin",
    "command",
    "comment",
    "cpus",
    "cpus_per_task",
    "dependency",
    "end",
    "error",
    "exclusive",
    "exit_code",
    "expected_start",
    "features",
    "gpu_model",
    "gpus",
    "gpus_per_task",
    "job_id",
    "mem_mb",
    "name",
    "nodelist",
    "nodes_requested",
    "ntasks_per_node",
    "output",
    "partition",
    "priority",
    "qos",
    "reason",
    "requeue",
    "restarts",
    "signal",
    "start",
    "state",
    "submit",
    "tasks",
    "time_limit_ms",
    "user",
    "workdir",
)
"""The ``JobInfo`` fields the document reads (``GET /v1/jobs/table``)."""

NOT_ELIGIBLE = frozenset({"JobHeldUser", "JobHeldAdmin", "Dependency", "BeginTime"})
FINAL = frozenset(
    {"COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "PREEMPTED", "NODE_FAIL", "OUT_OF_MEMORY"}
)

META = {
    "plugin": {"type": "openapi/v0.0.38", "name": "Slurm OpenAPI v0.0.38"},
    "Slurm": {"version": {"major": 22, "micro": 8, "minor": 5}, "release": "22.05.8"},
}


def document(jobs: list[Job], nodes: dict[str, Node], now: int) -> dict[str, Any]:
    """The v0.0.38 ``jobs`` document of ``jobs`` (records as squeue shows them: a pending
    array collapsed, with ``array_task_str``), given the cluster's ``nodes`` by name."""
    cluster = os.environ.get("PHALANX_CLUSTER", "phalanx")
    return {"meta": META, "errors": [], "jobs": [_job(j, nodes, cluster, now) for j in jobs]}


# ------------------------------------------------------------------------------ one job
def _sec(ms: int | None) -> int:
    return 0 if ms is None else int(ms) // 1000


def _ids(user: str) -> tuple[int | None, str, int | None, str]:
    found = user_ids(user)
    if found is None:
        return None, user, None, ""
    uid, gid, group = found
    return uid, user, gid, group


def _times(job: Job, now: int) -> dict[str, int]:
    state, submit = job["state"], int(job["submit"])
    begin = job.get("begin")
    pending = state == "PENDING"
    if pending and job.get("reason") in NOT_ELIGIBLE and begin is None:
        eligible = 0
    else:
        eligible = max(submit, int(begin or 0))
    accrue = eligible if eligible and eligible <= max(now, submit) else 0
    start = (job.get("expected_start") or begin) if pending else job.get("start")
    limit = int(job["time_limit_ms"])
    end = job.get("end") if state in FINAL else None
    if end is None and start is not None and (not pending or job.get("expected_start")):
        end = int(start) + limit
    return {
        "accrue_time": _sec(accrue),
        "eligible_time": _sec(eligible),
        "end_time": _sec(end),
        "start_time": _sec(start),
        "last_sched_evaluation": _sec(job.get("start") if not pending else submit),
    }


def _gpus_per_node(job: Job, count: int) -> float:
    return float(job["gpus"]) / max(1, count)


def _gres_detail(job: Job, hosts: list[str], nodes: dict[str, Node]) -> list[str]:
    per = _gpus_per_node(job, len(hosts))
    if per <= 0:
        return []
    out = []
    for host in hosts:
        node = nodes.get(host, {})
        model = job.get("gpu_model") or node.get("gpu_model")
        n = int(per) if per == int(per) else per
        # Which GPUs a job holds is not on the wire, unless it holds them all.
        idx = ("0" if n == 1 else f"0-{n - 1}") if n == node.get("gpus") else "N/A"
        out.append(f"gpu:{model}:{n}(IDX:{idx})" if model else f"gpu:{n}(IDX:{idx})")
    return out


def _resources(job: Job, hosts: list[str], nodes: dict[str, Node]) -> dict[str, Any]:
    if not hosts:
        return {}
    allocated = []
    for host in hosts:
        cores = int(nodes.get(host, {}).get("cpus") or 0) if job.get("exclusive") else 0
        sockets = {"0": {"cores": {str(i): "allocated" for i in range(cores)}}} if cores else {}
        allocated.append(
            {
                "sockets": sockets,
                "nodename": host,
                "cpus_used": 0,
                "memory_used": 0,
                "memory_allocated": int(job.get("mem_mb") or 0),
            }
        )
    # The cores asked for (one per task and CPU), where ``cpus`` of an --exclusive job counts
    # its nodes' every CPU, as Slurm's do (15 here against billable_tres 960 in capture 25).
    asked = int(job.get("cpus_per_task") or 1) * int(job.get("ntasks_per_node") or 1)
    return {
        "nodes": job["nodelist"],
        "allocated_cores": asked * len(hosts),
        "allocated_hosts": len(hosts),
        "allocated_nodes": allocated,
    }


def _tres(job: Job, count: int) -> str:
    mem = int(job.get("mem_mb") or 0)
    out = f"cpu={job['cpus']}"
    if mem:
        out += f",mem={mem * count}M"
    out += f",node={count},billing={job['cpus']}"
    gpus = float(job["gpus"])
    if gpus > 0:
        out += f",gres/gpu={int(gpus) if gpus == int(gpus) else gpus}"
    return out


def _tres_per_node(job: Job) -> str:
    per = int(job.get("gpus_per_task") or 0) * int(job.get("ntasks_per_node") or 1)
    if not per:
        return ""
    model = job.get("gpu_model")
    return f"gres:gpu:{model}:{per}" if model else f"gres:gpu:{per}"


def _paths(job: Job) -> tuple[str, str, str]:
    from phalanx.slurm.scontroljob import batch_command, expand_path, stdout_path

    out = stdout_path(job)
    err = expand_path(job["error"], job) if job.get("error") else out
    command = batch_command(job)
    return ("" if command == "(null)" else command), err, out


def _job(job: Job, nodes: dict[str, Node], cluster: str, now: int) -> dict[str, Any]:
    state = job["state"]
    pending = state == "PENDING"
    hosts = expand(job["nodelist"]) if job.get("nodelist") and not pending else []
    collapsed = job.get("array_task_str")
    task = job.get("array_task_id")
    job_id = int(job["array_job_id"]) if collapsed is not None else int(job["job_id"])
    uid, user, gid, group = _ids(str(job["user"]))
    times = _times(job, now)
    command, stderr, stdout = _paths(job)
    count = len(hosts) or int(job["nodes_requested"])
    cpus_per_task = int(job.get("cpus_per_task") or 1)
    per_node = int(job.get("ntasks_per_node") or 1)
    mem = int(job.get("mem_mb") or 0)
    tres = _tres(job, count)
    return {
        "account": job["account"],
        "accrue_time": times["accrue_time"],
        "admin_comment": "",
        "array_job_id": int(job.get("array_job_id") or 0),
        "array_task_id": None if collapsed is not None or task is None else int(task),
        "array_max_tasks": int(job.get("array_throttle") or 0),
        "array_task_string": collapsed or "",
        "association_id": 0,
        "batch_features": "",
        "batch_flag": True,
        "batch_host": hosts[0] if hosts else "",
        "flags": ["JOB_WAS_RUNNING"] if job.get("start") is not None and not pending else [],
        "burst_buffer": "",
        "burst_buffer_state": "",
        "cluster": cluster,
        "cluster_features": "",
        "command": command,
        "comment": job.get("comment") or "",
        "container": "",
        "contiguous": False,
        "core_spec": None,
        "thread_spec": None,
        "cores_per_socket": None,
        "billable_tres": float(job["cpus"]),
        "cpus_per_task": cpus_per_task if cpus_per_task > 1 else None,
        "cpu_frequency_minimum": None,
        "cpu_frequency_maximum": None,
        "cpu_frequency_governor": None,
        "cpus_per_tres": "",
        "deadline": 0,
        "delay_boot": 0,
        "dependency": (job.get("dependency") or "") if pending else "",
        "derived_exit_code": 0,
        "eligible_time": times["eligible_time"],
        "end_time": times["end_time"],
        "excluded_nodes": "",
        "exit_code": (int(job.get("exit_code") or 0) << 8) | int(job.get("signal") or 0),
        "features": "&".join(job.get("features") or ()),
        "federation_origin": "",
        "federation_siblings_active": "",
        "federation_siblings_viable": "",
        "gres_detail": _gres_detail(job, hosts, nodes),
        "group_id": gid,
        "group_name": group,
        "job_id": job_id,
        "job_resources": _resources(job, hosts, nodes),
        "job_state": state,
        "last_sched_evaluation": times["last_sched_evaluation"],
        "licenses": "",
        "max_cpus": 0,
        "max_nodes": 0,
        "mcs_label": "",
        "memory_per_tres": "",
        "name": job["name"],
        "nodes": "" if pending else (job.get("nodelist") or ""),
        "nice": 0,
        "tasks_per_core": None,
        "tasks_per_node": per_node,
        "tasks_per_socket": None,
        "tasks_per_board": 0,
        "cpus": int(job["cpus"]),
        "node_count": count,
        "tasks": int(job["tasks"]),
        "het_job_id": 0,
        "het_job_id_set": "",
        "het_job_offset": 0,
        "partition": job["partition"],
        "memory_per_node": mem or None,
        "memory_per_cpu": None,
        "minimum_cpus_per_node": cpus_per_task * per_node,
        "minimum_tmp_disk_per_node": 0,
        "preempt_time": 0,
        "pre_sus_time": 0,
        "priority": round(float(job["priority"])),
        "profile": None,
        "qos": job["qos"],
        "reboot": False,
        "required_nodes": "",
        "requeue": bool(job.get("requeue", True)),
        "resize_time": 0,
        "restart_cnt": int(job.get("restarts") or 0),
        "resv_name": "",
        "shared": "none" if job.get("exclusive") else None,
        "show_flags": ["SHOW_ALL", "SHOW_DETAIL", "SHOW_LOCAL"],
        "sockets_per_board": 0,
        "sockets_per_node": None,
        "start_time": times["start_time"],
        "state_description": "",
        "state_reason": str(job["reason"]) if pending else "None",
        "standard_error": stderr,
        "standard_input": "/dev/null",
        "standard_output": stdout,
        "submit_time": _sec(job["submit"]),
        "suspend_time": 0,
        "system_comment": "",
        "time_limit": int(job["time_limit_ms"]) // 60_000,
        "time_minimum": 0,
        "threads_per_core": None,
        "tres_bind": "",
        "tres_freq": "",
        "tres_per_job": "",
        "tres_per_node": _tres_per_node(job),
        "tres_per_socket": "",
        "tres_per_task": "",
        "tres_req_str": tres,
        "tres_alloc_str": "" if pending else tres,
        "user_id": uid,
        "user_name": user,
        "wckey": "",
        "current_working_directory": job.get("workdir") or "",
    }


# ------------------------------------------------------------------------------ JSON
def to_json(doc: Any) -> str:
    """``doc`` as json-c prints it pretty: two-space indent, an empty list or object on two
    lines, ``/`` escaped; ends with a newline."""
    out: list[str] = []
    _json(doc, 0, out)
    return "".join(out) + "\n"


def _json(value: Any, indent: int, out: list[str]) -> None:
    pad = " " * indent
    if isinstance(value, dict):
        out.append("{\n")
        items = list(value.items())
        for i, (key, item) in enumerate(items):
            out.append(f"{pad}  {_json_str(str(key))}: ")
            _json(item, indent + 2, out)
            out.append(",\n" if i < len(items) - 1 else "\n")
        out.append(f"{pad}}}")
    elif isinstance(value, list):
        out.append("[\n")
        for i, item in enumerate(value):
            out.append(f"{pad}  ")
            _json(item, indent + 2, out)
            out.append(",\n" if i < len(value) - 1 else "\n")
        out.append(f"{pad}]")
    elif isinstance(value, str):
        out.append(_json_str(value))
    else:
        out.append(json.dumps(value))


def _json_str(text: str) -> str:
    return json.dumps(text, ensure_ascii=False).replace("/", "\\/")


# ------------------------------------------------------------------------------ YAML
def to_yaml(doc: dict[str, Any]) -> str:
    """``doc`` as Slurm's libyaml serializer prints it: a ``%YAML 1.1`` document with every
    node tagged (``!!str``, ``!!int``, ``!!float 960.000000``, ``!!bool``, ``!!null null``,
    which an empty string also prints as), sequences at their key's indent."""
    out = ["%YAML 1.1", "--- !!map"]
    _yaml_map(doc, 0, out)
    out.append("...")
    return "\n".join(out) + "\n"


def _yaml_map(mapping: dict[str, Any], indent: int, out: list[str]) -> None:
    pad = " " * indent
    for key, value in mapping.items():
        head = f"{pad}!!str {_yaml_text(str(key))}:"
        _yaml_node(head, value, indent, out)


def _yaml_node(head: str, value: Any, indent: int, out: list[str]) -> None:
    """``head`` (a key, or a ``-`` of a sequence) followed by ``value``; a collection's
    entries go under it: a map's two further in, a sequence's at ``indent``."""
    if isinstance(value, dict) and value:
        out.append(f"{head} !!map")
        _yaml_map(value, indent + 2, out)
    elif isinstance(value, list) and value:
        out.append(f"{head} !!seq")
        for item in value:
            # A map in a sequence: its keys line up two past the dash.
            _yaml_node(" " * indent + "-", item, indent, out)
    else:
        out.append(f"{head} {_yaml_scalar(value)}")


_SCALARS: dict[type, Callable[[Any], str]] = {
    bool: lambda v: f"!!bool {'true' if v else 'false'}",
    int: lambda v: f"!!int {v}",
    float: lambda v: f"!!float {v:f}",
}


def _yaml_scalar(value: Any) -> str:
    if isinstance(value, dict):
        return "!!map {}"
    if isinstance(value, list):
        return "!!seq []"
    if value is None or value == "":
        return "!!null null"
    show = _SCALARS.get(type(value))
    if show is not None:
        return show(value)
    return f"!!str {_yaml_text(str(value))}"


_INDICATORS = set("-?:,[]{}#&*!|>'\"%@`")


def _yaml_text(text: str) -> str:
    """A plain scalar where YAML allows one, else quoted as libyaml quotes it."""
    if any(ord(c) < 32 or c == "\x7f" for c in text):
        return json.dumps(text)
    if (
        text[0] in _INDICATORS
        or text != text.strip()
        or ": " in text
        or " #" in text
        or text.endswith(":")
    ):
        return "'" + text.replace("'", "''") + "'"
    return text
