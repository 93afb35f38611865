"""``scontrol show job``: a job's record, as Slurm 22.05 prints it, and the requests that
``scontrol`` makes of the controller (``call``, with Slurm's words for a refusal)."""

from __future__ import annotations

import os
from typing import Any

from phalanx.client.wirecall import ApiError, Json, WireCaller
from phalanx.slurm.format import (
    MIN_JOB_AGE_MS,
    compress,
    expand,
    hms,
    instant,
    memory,
    now_ms,
    user_ids,
)
from phalanx.slurm.format import ranges as task_ranges

__all__ = [
    "Fail",
    "Record",
    "batch_command",
    "call",
    "collapse",
    "expand_path",
    "job_record",
    "show_job",
    "slurm_error",
    "stdout_path",
]

Job = dict[str, Any]
Record = list[str]
"""A record's lines: the first unindented, the others indented when printed."""

FINAL = frozenset(
    {"COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "PREEMPTED", "NODE_FAIL", "OUT_OF_MEMORY"}
)
# Reasons for which Slurm does not know yet when a pending job becomes eligible.
NOT_ELIGIBLE = frozenset(
    {
        "Dependency",
        "DependencyNeverSatisfied",
        "JobHeldUser",
        "JobHeldAdmin",
        "JobArrayTaskLimit",
        "BeginTime",
    }
)
NO_VAL_TASK = 4294967294
"""Slurm's task id for an array's pending record (its ``%a`` in file names)."""


class Fail(Exception):
    """A request Slurm refuses: the message is printed as is and the exit status is 1."""


# ------------------------------------------------------------------------------ wire
def call(method: str, path: str, body: Json = None, query: dict[str, Any] | None = None) -> Any:
    answer = WireCaller().call_ok(method, path, body=body, query=query)
    return answer


def slurm_error(exc: ApiError) -> str:
    """The ``slurm_strerror`` text for a refused call."""
    if exc.status == 404:
        return "Invalid job id specified"
    if exc.status in (401, 403):
        return "Access/permission denied"
    return exc.message


# ------------------------------------------------------------------------------ jobs
def _ids(user: str) -> tuple[str, str]:
    """``UserId`` and ``GroupId`` values: ``root(0)``; the name alone if unknown here."""
    found = user_ids(user)
    if found is None:
        return user, user
    uid, gid, group = found
    return f"{user}({uid})", f"{group}({gid})"


def expand_path(pattern: str, job: Job) -> str:
    """A file name pattern (``%j %A %a %x %u %%``), made absolute in the job's directory."""
    task = job.get("array_task_id")
    values = {
        "j": str(job["job_id"]),
        "J": str(job["job_id"]),
        "A": str(job.get("array_job_id") or job["job_id"]),
        "a": str(NO_VAL_TASK if task is None or job.get("array_task_str") else task),
        "x": str(job["name"]),
        "u": str(job["user"]),
        "%": "%",
    }
    out: list[str] = []
    i = 0
    while i < len(pattern):
        code = pattern[i + 1] if pattern[i] == "%" and i + 1 < len(pattern) else ""
        if code in values:
            out.append(values[code])
            i += 2
        else:
            out.append(pattern[i])
            i += 1
    path = "".join(out)
    return path if path.startswith("/") else os.path.join(str(job.get("workdir") or "/"), path)


def stdout_path(job: Job) -> str:
    default = "slurm-%A_%a.out" if job.get("array_job_id") is not None else "slurm-%j.out"
    return expand_path(job.get("output") or default, job)


def batch_command(job: Job) -> str:
    argv = [str(a) for a in job.get("command") or ()]
    # sbatch runs a script as ``sh -c TEXT NAME ARGS``; --wrap names it "sbatch".
    if len(argv) >= 4 and argv[1] == "-c":
        name = argv[3]
        if name == "sbatch":
            return "(null)"
        return name if name.startswith("/") else os.path.join(str(job.get("workdir")), name)
    return " ".join(argv) or "(null)"


def _reason(job: Job) -> str:
    state = job["state"]
    if state == "FAILED":
        return f"RaisedSignal:{job['signal']}" if job.get("signal") else "NonZeroExitCode"
    if state == "TIMEOUT":
        return "TimeLimit"
    return str(job.get("reason") or "None") if state == "PENDING" else "None"


def _dependency(job: Job) -> str:
    dep = str(job.get("dependency") or "")
    if not dep or job["state"] != "PENDING":
        return "(null)"
    if job.get("reason") == "DependencyNeverSatisfied":
        return f"{dep}(failed)"
    if job.get("reason") == "Dependency":
        return f"{dep}(unfulfilled)"
    return "(null)"


def _limit(job: Job) -> str:
    if job.get("unlimited") and (job["state"] == "PENDING" or job["state"] in FINAL):
        return "UNLIMITED"
    return hms(int(job["time_limit_ms"]) // 1000)


def _times(job: Job, now: int) -> tuple[str, str, str, str, str]:
    """RunTime, EligibleTime, AccrueTime, StartTime, EndTime."""
    state, submit = job["state"], int(job["submit"])
    begin = job.get("begin")
    pending = state == "PENDING"
    if pending and job.get("reason") in NOT_ELIGIBLE and begin is None:
        eligible = "Unknown"
    else:
        eligible = instant(max(submit, int(begin or 0)))
    accrue = "Unknown" if eligible == "Unknown" and job.get("reason") != "JobArrayTaskLimit" else ""
    accrue = accrue or instant(submit)
    limit = int(job["time_limit_ms"])
    start = job.get("expected_start") if pending else job.get("start")
    if start is None:
        return "00:00:00", eligible, accrue, "Unknown", "Unknown"
    end = job.get("end") if state in FINAL else None
    finish = int(end) if end is not None else int(start) + limit
    ran = 0 if pending else ((int(end) if end is not None else now) - int(start)) // 1000
    return hms(ran), eligible, accrue, instant(int(start)), instant(finish)


def _gres(job: Job, count: float) -> str:
    model = job.get("gpu_model")
    n = int(count) if count == int(count) else count
    return f"gpu:{model}:{n}" if model else f"gpu:{n}"


def _nodes_of(job: Job) -> list[str]:
    nodelist = str(job.get("nodelist") or "")
    return expand(nodelist) if nodelist and job["state"] != "PENDING" else []


def job_record(job: Job, now: int, details: bool = False) -> Record:
    """``scontrol show job`` for one job (an array's pending tasks: one record)."""
    state = job["state"]
    nodes = _nodes_of(job)
    num_nodes = len(nodes) or int(job["nodes_requested"])
    per_node_tasks = int(job.get("ntasks_per_node") or 1)
    cpus_per_task = int(job.get("cpus_per_task") or 1)
    gpus = float(job["gpus"])
    mem_mb = int(job.get("mem_mb") or 0)
    user_id, group_id = _ids(str(job["user"]))
    run, eligible, accrue, start, end = _times(job, now)
    head = f"JobId={job['job_id']}"
    if job.get("array_job_id") is not None:
        tasks = job.get("array_task_str") or str(job.get("array_task_id"))
        head += f" ArrayJobId={job['array_job_id']} ArrayTaskId={tasks}"
        if job.get("array_throttle"):
            head += f" ArrayTaskThrottle={job['array_throttle']}"
    tres = f"cpu={job['cpus']}"
    if mem_mb:
        tres += f",mem={memory(mem_mb * num_nodes)}"
    tres += f",node={num_nodes},billing={job['cpus']}"
    if gpus > 0:
        tres += f",gres/gpu={int(gpus) if gpus == int(gpus) else gpus}"
    started = job.get("start") is not None and state != "PENDING"
    out = [
        f"{head} JobName={job['name']}",
        f"UserId={user_id} GroupId={group_id} MCS_label=N/A",
        f"Priority={round(float(job['priority']))} Nice=0 Account={job['account']} "
        f"QOS={job['qos']}",
        f"JobState={state} Reason={_reason(job)} Dependency={_dependency(job)}",
        f"Requeue={int(bool(job.get('requeue', True)))} Restarts={job.get('restarts', 0)} "
        f"BatchFlag=1 Reboot=0 ExitCode={job.get('exit_code', 0)}:{job.get('signal', 0)}",
    ]
    if details:
        out.append("DerivedExitCode=0:0")
    out += [
        f"RunTime={run} TimeLimit={_limit(job)} TimeMin=N/A",
        f"SubmitTime={instant(job['submit'])} EligibleTime={eligible}",
        f"AccrueTime={accrue}",
        f"StartTime={start} EndTime={end} Deadline=N/A",
        "SuspendTime=None SecsPreSuspend=0 "
        f"LastSchedEval={instant(job.get('start') if started else job['submit'])} "
        f"Scheduler={'Main' if started else 'Backfill:*'}",
        f"Partition={job['partition']} AllocNode:Sid=localhost:0",
        "ReqNodeList=(null) ExcNodeList=(null)",
        f"NodeList={compress(nodes) if nodes else ''}",
    ]
    if nodes:
        out.append(f"BatchHost={nodes[0]}")
    out += [
        f"NumNodes={num_nodes} NumCPUs={job['cpus']} NumTasks={job['tasks']} "
        f"CPUs/Task={cpus_per_task} ReqB:S:C:T=0:0:*:*",
        f"TRES={tres}",
        f"Socks/Node=* NtasksPerN:B:S:C={per_node_tasks if per_node_tasks > 1 else 0}:0:*:* "
        "CoreSpec=*",
    ]
    gpus_per_node = int(job.get("gpus_per_task") or 0) * per_node_tasks
    if details:
        out.append(f"JOB_GRES={_gres(job, gpus) if gpus > 0 else '(null)'}")
        if nodes:
            # Which CPUs and GPUs of a node a job holds is not on the wire: N/A.
            gres = f"{_gres(job, gpus_per_node)}(IDX:N/A)" if gpus_per_node else ""
            out.append(f"  Nodes={compress(nodes)} CPU_IDs=N/A Mem={mem_mb} GRES={gres}".rstrip())
    mem = f"MinMemoryNode={memory(mem_mb) if mem_mb else '0'}"
    features = "&".join(job.get("features") or ()) or "(null)"
    stdout = stdout_path(job)
    error = expand_path(job["error"], job) if job.get("error") else stdout
    out += [
        f"MinCPUsNode={cpus_per_task * per_node_tasks} {mem} MinTmpDiskNode=0",
        f"Features={features} DelayBoot=00:00:00",
        f"OverSubscribe={'NO' if job.get('exclusive') else 'OK'} Contiguous=0 "
        "Licenses=(null) Network=(null)",
        f"Command={batch_command(job)}",
        f"WorkDir={job.get('workdir') or ''}",
        f"StdErr={error}",
        "StdIn=/dev/null",
        f"StdOut={stdout}",
        "Power=",
    ]
    if gpus_per_node:
        out.append(f"TresPerNode=gres:{_gres(job, gpus_per_node)}")
    out.append("")
    return out


def _recent(job: Job, now: int) -> bool:
    """Still known to Slurm: not ended, or ended within MinJobAge."""
    if job["state"] not in FINAL:
        return True
    end = job.get("end")
    return end is not None and now - int(end) <= MIN_JOB_AGE_MS


def collapse(jobs: list[Job]) -> list[Job]:
    """The records Slurm keeps: an array's pending tasks are one record (``2-9%2``) whose
    JobId is the first of them; arrays' pending records first, then newest job first."""
    pending: dict[int, list[Job]] = {}
    rest: list[Job] = []
    for job in jobs:
        base = job.get("array_job_id")
        if base is not None and job["state"] == "PENDING":
            pending.setdefault(int(base), []).append(job)
        else:
            rest.append(job)
    heads: list[Job] = []
    for members in pending.values():
        members.sort(key=lambda j: int(j["array_task_id"]))
        first = members[0]
        if len(members) == 1:
            heads.append(first)
            continue
        tasks = task_ranges(int(m["array_task_id"]) for m in members)
        if first.get("array_throttle"):
            tasks += f"%{first['array_throttle']}"
        heads.append(dict(first, array_task_str=tasks))
    newest = lambda j: -int(j["job_id"])  # noqa: E731
    return sorted(heads, key=newest) + sorted(rest, key=newest)


def _wanted(job: Job, base: int, task: int | None) -> bool:
    if task is None:
        return base in (job["job_id"], job.get("array_job_id"))
    return job.get("array_job_id") == base and job.get("array_task_id") == task


def show_job(arg: str | None, details: bool) -> list[Record]:
    query: dict[str, Any] = {"all": True}
    base, task = 0, None
    if arg is not None:
        head, _, tail = arg.partition("_")
        if not head.isdecimal() or (tail and not tail.isdecimal()):
            raise Fail("slurm_load_jobs error: Invalid job id specified")
        base, task = int(head), int(tail) if tail else None
        query["ids"] = str(base)
    answer = call("GET", "/v1/jobs", query=query)
    now = now_ms()
    jobs = [j for j in answer["jobs"] if _recent(j, now)]
    if arg is not None:
        jobs = [j for j in jobs if _wanted(j, base, task)]
        if not jobs:
            raise Fail("slurm_load_jobs error: Invalid job id specified")
    elif not jobs:
        print("No jobs in the system")
        return []
    return [job_record(j, now, details) for j in collapse(jobs)]
