"""What each ``squeue -o`` letter prints for a job (a ``JobInfo`` record as squeue fetches
it), at a moment: times, states, reasons, node counts, TRES, ids of array tasks; each
letter's header, and the ``-O`` names."""

from __future__ import annotations

from collections.abc import Callable
from operator import itemgetter
from typing import Any

from phalanx.slurm.format import SHORT_STATE, clock, expand, instant, memory

__all__ = ["FINAL", "HEADERS", "LONG_FIELDS", "UNLIMITED_MS", "cells", "planned", "value"]

Job = dict[str, Any]

UNLIMITED_MS = 365 * 86400 * 1000
"""What the controller stores for a job without a limit; a pending one prints UNLIMITED."""
FINAL = frozenset(
    {"COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "PREEMPTED", "NODE_FAIL", "OUT_OF_MEMORY"}
)
"""The states a job ends in."""

HEADERS = {
    "A": "JOBID",
    "a": "ACCOUNT",
    "b": "TRES_PER_NODE",
    "C": "CPUS",
    "c": "MIN_CPUS",
    "D": "NODES",
    "e": "END_TIME",
    "F": "ARRAY_JOB_ID",
    "i": "JOBID",
    "j": "NAME",
    "K": "ARRAY_TASK_ID",
    "k": "COMMENT",
    "L": "TIME_LEFT",
    "l": "TIME_LIMIT",
    "M": "TIME",
    "m": "MIN_MEMORY",
    "N": "NODELIST",
    "o": "COMMAND",
    "P": "PARTITION",
    "Q": "PRIORITY",
    "q": "QOS",
    "R": "NODELIST(REASON)",
    "r": "REASON",
    "S": "START_TIME",
    "T": "STATE",
    "t": "ST",
    "u": "USER",
    "V": "SUBMIT_TIME",
    "Y": "SCHEDNODES",
    "Z": "WORK_DIR",
}

LONG_FIELDS = {
    "Account": "a",
    "ArrayJobID": "F",
    "ArrayTaskID": "K",
    "Command": "o",
    "Comment": "k",
    "EndTime": "e",
    "JobArrayID": "i",
    "JobID": "A",
    "MinCpus": "c",
    "MinMemory": "m",
    "Name": "j",
    "NodeList": "N",
    "NumCPUs": "C",
    "NumNodes": "D",
    "Partition": "P",
    "Priority": "Q",
    "PriorityLong": "Q",
    "QOS": "q",
    "Reason": "r",
    "ReasonList": "R",
    "SchedNodes": "Y",
    "StartTime": "S",
    "State": "T",
    "StateCompact": "t",
    "SubmitTime": "V",
    "TimeLeft": "L",
    "TimeLimit": "l",
    "TimeUsed": "M",
    "tres-per-node": "b",
    "UserName": "u",
    "WorkDir": "Z",
}
"""``-O`` names -> the ``-o`` letter that prints the same value."""


def _time_used(job: Job, now: int) -> int:
    start = job.get("start")
    if job["state"] == "PENDING" or start is None:
        return 0
    end = int(job.get("end") or now)
    return max(0, (end - int(start)) // 1000)


def _elapsed(job: Job, now: int) -> str:
    if job["state"] == "PENDING":
        return "0:00"  # clock(0): most jobs of a long listing wait
    return clock(_time_used(job, now))


def _limit(job: Job) -> str:
    limit = int(job["time_limit_ms"])
    if limit >= UNLIMITED_MS and job["state"] == "PENDING":
        return "UNLIMITED"
    return clock(limit // 1000)


def _time_left(job: Job, now: int) -> str:
    if int(job["time_limit_ms"]) >= UNLIMITED_MS and job["state"] == "PENDING":
        return "UNLIMITED"
    return clock(int(job["time_limit_ms"]) // 1000 - _time_used(job, now))


def _nodes(job: Job) -> int:
    nodelist = job.get("nodelist") or ""
    if nodelist and job["state"] != "PENDING":
        return len(expand(nodelist))
    return int(job["nodes_requested"])


def _min_cpus(job: Job) -> int:
    return max(1, int(job["cpus"]) // max(1, _nodes(job)))


def _reason(job: Job) -> str:
    state = job["state"]
    if state == "FAILED":
        if job.get("signal"):
            return f"RaisedSignal:{job['signal']}"
        return "NonZeroExitCode"
    if state == "TIMEOUT":
        return "TimeLimit"
    return str(job["reason"])


def _reason_list(job: Job) -> str:
    state = job["state"]
    if state == "PENDING":
        return f"({job['reason']})"
    if state in ("FAILED", "TIMEOUT"):
        return f"({_reason(job)})"
    return str(job.get("nodelist") or "")


def _nodelist(job: Job) -> str:
    return "" if job["state"] == "PENDING" else str(job.get("nodelist") or "")


def _job_id(job: Job) -> str:
    tasks = job.get("array_task_str")
    base = job.get("array_job_id")
    if tasks is not None:
        return f"{base}_[{tasks}]"
    if base is not None and job.get("array_task_id") is not None:
        return f"{base}_{job['array_task_id']}"
    return str(job["job_id"])


def _raw_id(job: Job) -> str:
    # A pending array task has no job id of its own in Slurm: it is the array's record.
    if job.get("array_task_str") is not None or (
        job["state"] == "PENDING" and job.get("array_job_id") is not None
    ):
        return str(job["array_job_id"])
    return str(job["job_id"])


def _task_id(job: Job) -> str:
    if job.get("array_task_str") is not None:
        return str(job["array_task_str"])
    task = job.get("array_task_id")
    return "N/A" if task is None else str(task)


def _short_state(job: Job) -> str:
    state = job["state"]
    return SHORT_STATE.get(state) or str(state)[:2]


def _memory(job: Job) -> str:
    mem = job.get("mem_mb")
    return memory(int(mem)) if mem else "0"


def _tres_per_node(job: Job) -> str:
    """The GPUs asked for per node (what the job holds may be more: ``--exclusive``)."""
    per = int(job.get("gpus_per_task") or 0) * int(job.get("ntasks_per_node") or 1)
    if per <= 0:
        return "N/A"
    model = job.get("gpu_model")
    return f"gres:gpu:{model}:{per}" if model else f"gres:gpu:{per}"


def planned(job: Job) -> int | None:
    """When a pending job is expected to start: as planned, else its begin time."""
    return job.get("expected_start") or job.get("begin")


def _start(job: Job) -> str:
    if job["state"] == "PENDING":
        return instant(planned(job))
    return instant(job.get("start"))


def _end(job: Job) -> str:
    state = job["state"]
    if state in FINAL:
        return instant(job.get("end"))
    start = job.get("start")
    if start is None or state == "PENDING":
        return "N/A"
    return instant(start + int(job["time_limit_ms"]))


def cells(now: int) -> dict[str, Callable[[Job], object]]:
    """Each ``-o`` letter's value of a job at ``now``; what squeue prints is ``str()`` of it.
    Built once per listing, so the loop over the jobs makes one call per field."""
    return {
        "i": _job_id,
        "A": _raw_id,
        "F": lambda job: job.get("array_job_id") or job["job_id"],
        "K": _task_id,
        "a": itemgetter("account"),
        "P": itemgetter("partition"),
        "j": itemgetter("name"),
        "u": itemgetter("user"),
        "t": _short_state,
        "T": itemgetter("state"),
        "M": lambda job: _elapsed(job, now),
        "l": _limit,
        "L": lambda job: _time_left(job, now),
        "D": _nodes,
        "C": itemgetter("cpus"),
        "c": _min_cpus,
        "m": _memory,
        "b": _tres_per_node,
        "R": _reason_list,
        "r": _reason,
        "N": _nodelist,
        "S": _start,
        "V": lambda job: instant(job.get("submit")),
        "e": _end,
        "Q": lambda job: round(float(job["priority"])),
        "q": itemgetter("qos"),
        "Y": lambda job: job.get("sched_nodes") or "(null)",
        "Z": lambda job: job.get("workdir") or "",
        "o": lambda job: " ".join(job.get("command") or ()) or "(null)",
        "k": lambda job: job.get("comment") or "(null)",
    }


def value(code: str, job: Job, now: int) -> str:
    """The text of field ``code`` (an ``-o`` letter) for ``job``."""
    return str(cells(now)[code](job))
