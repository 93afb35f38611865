"""sacct's fields: the name, default width and value of each column, as Slurm 22.05 prints them.

A row is a job (a ``JobInfo``/``AcctRecord``) with ``step`` set to ``None`` (the job),
``"batch"`` or a step number (``"0"``: the job's fields, then the step's own). ``VALUES[name]``
turns a row into the text of one field; ``FIELDS[name]`` is the field's default width,
negative for a left-justified one (Slurm's convention in ``sacct.c``).

What Phalanx does not measure (virtual memory, pages, disk, CPU frequency, energy, per-task
and per-node extremes) prints as a Slurm 22.05 without a ``JobAcctGatherType`` prints it:
empty, or ``0``/``Unknown``/``energy=0`` where it prints those (``out/96_sacct_long_job.txt``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from phalanx.slurm.format import expand, hms, instant, memory, ranges, user_ids

__all__ = ["FIELDS", "FINAL", "LONG_FIELDS", "VALUES", "Row", "cpu_time", "rss"]

Row = dict[str, Any]
"""A job row (a ``JobInfo``/``AcctRecord``) with ``step`` set to ``None``, ``"batch"`` or a
step number (``"0"``: its fields then the step's)."""

FINAL = frozenset(
    {"COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "PREEMPTED", "NODE_FAIL", "OUT_OF_MEMORY"}
)
UNLIMITED_MS = 365 * 86400 * 1000

# ``sacct -l`` (``--long``), in Slurm's order.
LONG_FIELDS = (
    "JobID,JobIDRaw,JobName,Partition,MaxVMSize,MaxVMSizeNode,MaxVMSizeTask,AveVMSize,MaxRSS,"
    "MaxRSSNode,MaxRSSTask,AveRSS,MaxPages,MaxPagesNode,MaxPagesTask,AvePages,MinCPU,"
    "MinCPUNode,MinCPUTask,AveCPU,NTasks,AllocCPUS,Elapsed,State,ExitCode,AveCPUFreq,"
    "ReqCPUFreqMin,ReqCPUFreqMax,ReqCPUFreqGov,ReqMem,ConsumedEnergy,MaxDiskRead,"
    "MaxDiskReadNode,MaxDiskReadTask,AveDiskRead,MaxDiskWrite,MaxDiskWriteNode,"
    "MaxDiskWriteTask,AveDiskWrite,ReqTRES,AllocTRES,TRESUsageInAve,TRESUsageInMax,"
    "TRESUsageInMaxNode,TRESUsageInMaxTask,TRESUsageInMin,TRESUsageInMinNode,"
    "TRESUsageInMinTask,TRESUsageInTot,TRESUsageOutMax,TRESUsageOutMaxNode,"
    "TRESUsageOutMaxTask,TRESUsageOutAve,TRESUsageOutTot"
)

# name -> width; a negative width is left-justified (Slurm's convention in sacct.c).
FIELDS: dict[str, int] = {
    "Account": 10,
    "AllocCPUS": 10,
    "AllocNodes": 10,
    "AllocTRES": 10,
    "AveCPU": 10,
    "AveCPUFreq": 10,
    "AveDiskRead": 14,
    "AveDiskWrite": 14,
    "AvePages": 10,
    "AveRSS": 10,
    "AveVMSize": 10,
    "Comment": 15,
    "ConsumedEnergy": 14,
    "DerivedExitCode": 15,
    "Elapsed": 10,
    "ElapsedRaw": 10,
    "Eligible": 19,
    "End": 19,
    "ExitCode": 8,
    "JobID": -12,
    "JobIDRaw": -12,
    "JobName": 10,
    "MaxDiskRead": 12,
    "MaxDiskReadNode": 15,
    "MaxDiskReadTask": 15,
    "MaxDiskWrite": 12,
    "MaxDiskWriteNode": 16,
    "MaxDiskWriteTask": 16,
    "MaxPages": 8,
    "MaxPagesNode": 12,
    "MaxPagesTask": 14,
    "MaxRSS": 10,
    "MaxRSSNode": 10,
    "MaxRSSTask": 10,
    "MaxVMSize": 10,
    "MaxVMSizeNode": 14,
    "MaxVMSizeTask": 14,
    "MinCPU": 10,
    "MinCPUNode": 10,
    "MinCPUTask": 10,
    "NCPUS": 10,
    "NNodes": 8,
    "NodeList": -15,
    "NTasks": 8,
    "Partition": 10,
    "Priority": 10,
    "QOS": 10,
    "Reason": 20,
    "ReqCPUFreqGov": 13,
    "ReqCPUFreqMax": 13,
    "ReqCPUFreqMin": 13,
    "ReqCPUS": 8,
    "ReqMem": 10,
    "ReqNodes": 8,
    "ReqTRES": 10,
    "Restarts": 8,
    "Start": 19,
    "State": 10,
    "Submit": 19,
    "SystemCPU": 10,
    "Timelimit": 10,
    "TotalCPU": 10,
    "TRESUsageInAve": 14,
    "TRESUsageInMax": 14,
    "TRESUsageInMaxNode": 18,
    "TRESUsageInMaxTask": 18,
    "TRESUsageInMin": 14,
    "TRESUsageInMinNode": 18,
    "TRESUsageInMinTask": 18,
    "TRESUsageInTot": 14,
    "TRESUsageOutAve": 15,
    "TRESUsageOutMax": 15,
    "TRESUsageOutMaxNode": 19,
    "TRESUsageOutMaxTask": 19,
    "TRESUsageOutTot": 15,
    "User": 9,
    "UserCPU": 10,
    "WorkDir": -15,
}


def _nnodes(row: Row) -> int:
    if row["step"] == "batch":
        return 1
    nodelist = row.get("nodelist") or ""
    if nodelist:
        return len(expand(nodelist))
    return int(row.get("nodes_requested") or 1)


def _cpus(row: Row) -> int:
    cpus = int(row["cpus"])
    if row["step"] == "batch":
        return max(1, cpus // max(1, len(expand(row["nodelist"]))))
    return cpus


def _elapsed_s(row: Row, now: int) -> int:
    start = row.get("start")
    if start is None:
        return 0
    end = row.get("end") if row["state"] in FINAL else None
    return max(0, (int(end or now) - int(start)) // 1000)


def _state(row: Row) -> str:
    state = str(row["state"])
    if state == "CANCELLED" and row["step"] is None:
        uid = row.get("cancelled_by_uid")
        if uid is None:
            uid = _uid(str(row["user"]))
        return f"CANCELLED by {uid}" if uid is not None else state
    return state


def _uid(user: str) -> int | None:
    found = user_ids(user)
    return None if found is None else found[0]


def _exit_code(row: Row) -> str:
    code, signal = int(row.get("exit_code") or 0), int(row.get("signal") or 0)
    if row["state"] == "CANCELLED":
        # The job's record keeps 0:0; its steps were killed by a signal (SIGTERM).
        return f"0:{signal or 15}" if row["step"] else "0:0"
    return f"{code}:{signal}"


def _tres(row: Row, units: str | None, billing: bool) -> str:
    if not row.get("nodelist"):
        return ""  # nothing allocated: pending, or ended before it started
    nodes = _nnodes(row)
    share = nodes / max(1, _nnodes(dict(row, step=None)))
    cpus = _cpus(row)
    parts = [f"billing={cpus}"] if billing else []
    parts.append(f"cpu={cpus}")
    gpus = float(row["gpus"]) * share
    if gpus > 0:
        parts.append(f"gres/gpu={int(gpus) if gpus == int(gpus) else round(gpus, 2)}")
    mem = row.get("mem_mb")
    if mem:
        parts.append(f"mem={memory(int(mem) * nodes, units)}")
    parts.append(f"node={nodes}")
    return ",".join(parts)


def _job_id(row: Row) -> str:
    base = row.get("array_job_id")
    task = row.get("array_task_id")
    members = row.get("_array")
    if members is not None and len(members) > 1:
        limit = row.get("array_throttle")
        task = f"[{ranges(int(m['array_task_id']) for m in members)}{f'%{limit}' if limit else ''}]"
    ident = f"{base}_{task}" if base is not None and task is not None else str(row["job_id"])
    return f"{ident}.{row['step']}" if row["step"] else ident


def _ntasks(row: Row) -> str:
    step = row["step"]
    return "" if step is None else "1" if step == "batch" else str(row["tasks"])


def _reason(row: Row) -> str:
    state = row["state"]
    if state == "PENDING":
        return str(row.get("reason") or "None")
    if state == "FAILED":
        return "NonZeroExitCode" if not row.get("signal") else "RaisedSignal"
    if state == "TIMEOUT":
        return "TimeLimit"
    return "None"


def _limit(row: Row) -> str:
    if row["step"]:
        return ""
    limit = int(row.get("time_limit_ms") or 0)
    if not limit or limit >= UNLIMITED_MS:
        return "UNLIMITED"
    return hms(limit // 1000)


VALUES: dict[str, Callable[[Row, int, str | None], str]] = {
    "Account": lambda r, now, u: str(r["account"]),
    "AllocCPUS": lambda r, now, u: str(_cpus(r)),
    "AllocNodes": lambda r, now, u: str(_nnodes(r)) if r.get("nodelist") else "0",
    "AllocTRES": lambda r, now, u: _tres(r, u, billing=r["step"] is None),
    "Comment": lambda r, now, u: "" if r["step"] else str(r.get("comment") or ""),
    "DerivedExitCode": lambda r, now, u: "" if r["step"] else "0:0",
    "Elapsed": lambda r, now, u: hms(_elapsed_s(r, now)),
    "ElapsedRaw": lambda r, now, u: str(_elapsed_s(r, now)),
    "Eligible": lambda r, now, u: instant(r.get("submit"), "Unknown"),
    "End": lambda r, now, u: instant(r.get("end") if r["state"] in FINAL else None, "Unknown"),
    "ExitCode": lambda r, now, u: _exit_code(r),
    "JobID": lambda r, now, u: _job_id(r),
    "JobIDRaw": lambda r, now, u: f"{r['job_id']}.{r['step']}" if r["step"] else str(r["job_id"]),
    "JobName": lambda r, now, u: "batch" if r["step"] == "batch" else str(r["name"]),
    "MaxRSS": lambda r, now, u: _max_rss(r, u),
    "NCPUS": lambda r, now, u: str(_cpus(r)),
    "NNodes": lambda r, now, u: str(_nnodes(r)),
    "NodeList": lambda r, now, u: _nodelist(r),
    "NTasks": lambda r, now, u: _ntasks(r),
    "Partition": lambda r, now, u: "" if r["step"] else str(r["partition"]),
    "Priority": lambda r, now, u: str(round(float(r.get("priority") or 0))),
    "QOS": lambda r, now, u: "" if r["step"] else str(r.get("qos") or "normal"),
    "Reason": lambda r, now, u: "" if r["step"] else _reason(r),
    "ReqCPUS": lambda r, now, u: str(_cpus(r)),
    "ReqMem": lambda r, now, u: _req_mem(r, u),
    "ReqNodes": lambda r, now, u: str(r.get("nodes_requested") or _nnodes(r)),
    "ReqTRES": lambda r, now, u: "" if r["step"] else _req_tres(r, u),
    "Restarts": lambda r, now, u: str(r.get("restarts") or 0),
    "Start": lambda r, now, u: instant(r.get("start"), "Unknown"),
    "State": lambda r, now, u: _state(r),
    "Submit": lambda r, now, u: instant(r.get("submit"), "Unknown"),
    "Timelimit": lambda r, now, u: _limit(r),
    "SystemCPU": lambda r, now, u: cpu_time(_usage(r)[1]),
    "TotalCPU": lambda r, now, u: cpu_time(sum(_usage(r))),
    "User": lambda r, now, u: "" if r["step"] else str(r["user"]),
    "UserCPU": lambda r, now, u: cpu_time(_usage(r)[0]),
    "WorkDir": lambda r, now, u: str(r.get("workdir") or ""),
    # Not measured: what Slurm prints without a JobAcctGatherType (out/96_sacct_long_job).
    "AveCPUFreq": lambda r, now, u: "0" if r["step"] else "",
    "ConsumedEnergy": lambda r, now, u: "0",
    "ReqCPUFreqGov": lambda r, now, u: _cpu_freq(r),
    "ReqCPUFreqMax": lambda r, now, u: _cpu_freq(r),
    "ReqCPUFreqMin": lambda r, now, u: _cpu_freq(r),
    "TRESUsageInAve": lambda r, now, u: "energy=0" if r["step"] else "",
    "TRESUsageInTot": lambda r, now, u: "energy=0" if r["step"] else "",
    "TRESUsageOutAve": lambda r, now, u: "energy=0" if r["step"] else "",
    "TRESUsageOutTot": lambda r, now, u: "energy=0" if r["step"] else "",
}
_UNMEASURED = (
    "AveCPU,AveDiskRead,AveDiskWrite,AvePages,AveRSS,AveVMSize,MaxDiskRead,MaxDiskReadNode,"
    "MaxDiskReadTask,MaxDiskWrite,MaxDiskWriteNode,MaxDiskWriteTask,MaxPages,MaxPagesNode,"
    "MaxPagesTask,MaxRSSNode,MaxRSSTask,MaxVMSize,MaxVMSizeNode,MaxVMSizeTask,MinCPU,MinCPUNode,"
    "MinCPUTask,TRESUsageInMax,TRESUsageInMaxNode,TRESUsageInMaxTask,TRESUsageInMin,"
    "TRESUsageInMinNode,TRESUsageInMinTask,TRESUsageOutMax,TRESUsageOutMaxNode,"
    "TRESUsageOutMaxTask"
)
VALUES.update({name: (lambda r, now, u: "") for name in _UNMEASURED.split(",")})


def _req_mem(row: Row, units: str | None) -> str:
    if row["step"]:
        return ""  # Slurm keeps the memory asked for on the job only
    mem = int(row.get("mem_mb") or 0)
    return memory(mem, units) if mem else "0"


def _cpu_freq(row: Row) -> str:
    """No ``--cpu-freq`` asked: ``Unknown``, but ``0`` on the batch step (as Slurm)."""
    return "0" if row["step"] == "batch" else "Unknown"


def _usage(row: Row) -> tuple[int, int]:
    """User and system CPU milliseconds: the batch row's own tasks; the job's with its steps."""
    user = system = 0
    names = ("usage",) if row["step"] else ("usage", "steps_usage")
    for name in names:
        usage = row.get(name)
        if usage:
            user += int(usage["user_ms"])
            system += int(usage["system_ms"])
    return user, system


def cpu_time(ms: int) -> str:
    """sacct's CPU times (``_elapsed_time``): ``00:00:00`` (none), ``00:01.250`` (under an
    hour, with milliseconds), ``02:03:04``, ``1-00:00:00``."""
    seconds, millis = divmod(max(0, ms), 1000)
    days, rest = divmod(seconds, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    if days:
        return f"{days}-{hours:02d}:{minutes:02d}:{secs:02d}"
    if hours:
        return f"{hours:02d}:{minutes:02d}:{secs:02d}"
    if millis:
        return f"{minutes:02d}:{secs:02d}.{millis:03d}"
    return f"00:{minutes:02d}:{secs:02d}"


_UNITS = ("", "K", "M", "G", "T", "P")


def rss(kb: int, units: str | None = None) -> str:
    """A peak resident set as sacct prints it (``convert_num_unit`` of bytes, exact): in the
    largest unit that keeps it whole (``51212K``, ``50M``), or in ``units`` (``50.01M``)."""
    value = kb * 1024
    if units is not None:
        scaled = value / 1024 ** _UNITS.index(units)
        return f"{int(scaled)}{units}" if scaled == int(scaled) else f"{scaled:.2f}{units}"
    unit = 0
    while value >= 1024 and value % 1024 == 0 and unit < len(_UNITS) - 1:
        value //= 1024
        unit += 1
    return f"{value}{_UNITS[unit]}"


def _max_rss(row: Row, units: str | None) -> str:
    usage = row.get("usage")
    if not row["step"] or not usage:
        return ""  # Slurm keeps no MaxRSS for a job, only for its steps
    return rss(int(usage["max_rss_kb"]), units)


def _nodelist(row: Row) -> str:
    nodelist = str(row.get("nodelist") or "")
    if not nodelist:
        return "None assigned"
    if row["step"] == "batch":
        return expand(nodelist)[0]
    return nodelist


def _req_tres(row: Row, units: str | None) -> str:
    cpus = int(row["cpus"])
    parts = [f"billing={cpus}", f"cpu={cpus}"]
    gpus = float(row["gpus"])
    if gpus > 0:
        parts.append(f"gres/gpu={int(gpus) if gpus == int(gpus) else round(gpus, 2)}")
    mem = row.get("mem_mb")
    nodes = int(row.get("nodes_requested") or 1)
    if mem:
        parts.append(f"mem={memory(int(mem) * nodes, units)}")
    parts.append(f"node={nodes}")
    return ",".join(parts)
