"""The tails of a job's stdout and stderr files, for its page: where Slurm's filename pattern
puts them (``%j %J %A %a %x %u %N %t %%``, as the agents expand it for the batch task: node
0, task 0), read as the controller's host sees them (the same machine, or a shared file
system).

A file is shown to an administrator, or to the job's owner when the owner owns the file:
the owner chose the path, and must not read another user's file through the controller.
"""

from __future__ import annotations

import os
import pwd
import re
import stat

from phalanx.sched.job import Job

__all__ = ["TAIL_BYTES", "output_paths", "tail"]

TAIL_BYTES = 8192
_CODE = re.compile(r"%(\d*)([jJAaxuNt%])")


def _expand(pattern: str, job: Job, node: str) -> str:
    spec = job.spec
    values = {
        "j": str(job.id),
        "J": str(job.id),
        "A": str(job.array_job_id if job.array_job_id is not None else job.id),
        "a": str(job.array_task_id) if job.array_task_id is not None else "4294967294",
        "x": spec.name,
        "u": spec.user,
        "N": node,
        "t": "0",
    }

    def one(m: re.Match[str]) -> str:
        width, code = m.group(1), m.group(2)
        if code == "%":
            return "%"
        value = values[code]
        return value.zfill(int(width)) if width and value.isdecimal() else value

    path = _CODE.sub(one, pattern)
    return path if os.path.isabs(path) else os.path.join(spec.workdir or "/", path)


def output_paths(job: Job, first_node: str) -> dict[str, str]:
    """``stdout`` and, where separate, ``stderr``: their paths."""
    spec = job.spec
    default = "slurm-%A_%a.out" if job.array_job_id is not None else "slurm-%j.out"
    out = {"stdout": _expand(spec.output or default, job, first_node)}
    if spec.error:
        out["stderr"] = _expand(spec.error, job, first_node)
    return out


def tail(path: str, user: str | None, limit: int = TAIL_BYTES) -> str:
    """The last ``limit`` bytes of ``path`` as text; ``user`` (None: no check) must own it.
    A short message instead where it cannot be shown. Blocking: call it in a thread."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except OSError as exc:
        return f"(not readable here: {exc.strerror})"
    try:
        st = os.fstat(fd)
        if user is not None:
            try:
                uid = pwd.getpwnam(user).pw_uid
            except KeyError:
                uid = -1
            if st.st_uid != uid:
                return f"(not shown: the file is not {user}'s)"
        if not stat.S_ISREG(st.st_mode):
            return "(not a regular file)"
        start = max(0, st.st_size - limit)
        os.lseek(fd, start, os.SEEK_SET)
        data = os.read(fd, limit)
    finally:
        os.close(fd)
    text = data.decode("utf-8", errors="replace")
    return ("..." + text) if start else text
