"""sacct's TotalCPU, UserCPU, SystemCPU and MaxRSS: measured by the agents on a real Phalanx,
carried with the ends of runs and steps, and printed as Slurm prints them."""

from __future__ import annotations

import sys

import pytest
from slurm_shell import Shell

from phalanx.slurm.sacct import cpu_time, rss

BURN = (
    "import sys, time\n"
    "block = b'x' * (int(sys.argv[2]) << 20)\n"  # written, so resident
    "end = time.process_time() + float(sys.argv[1])\n"
    "while time.process_time() < end:\n"
    "    pass\n"
)


def seconds(text: str) -> float:
    """A sacct CPU time (``00:00.312``, ``00:01:02``, ``1-00:00:00``) in seconds."""
    days, _, rest = text.rpartition("-")
    parts = [float(p) for p in rest.split(":")]
    if len(parts) == 2:
        parts.insert(0, 0.0)
    hours, minutes, secs = parts
    return (int(days or 0) * 24 + hours) * 3600 + minutes * 60 + secs


def megabytes(text: str) -> float:
    scale = {"": 1 / 2**20, "K": 1 / 1024, "M": 1, "G": 1024, "T": 1024**2}
    unit = text[-1] if text[-1].isalpha() else ""
    return float(text[: len(text) - len(unit)]) * scale[unit]


def _submit(shell: Shell, body: str) -> int:
    (shell.workdir / "burn.py").write_text(BURN)
    (shell.workdir / "usage.sh").write_text(f"#!/bin/sh\n{body}\n")
    done = shell.run("sbatch --parsable -o usage-%j.out usage.sh")
    assert done.rc == 0, done
    job_id = int(done.stdout.strip())
    [job] = shell.cluster.wait([job_id], timeout=60)
    assert job["state"] == "COMPLETED", job
    return job_id


def _rows(shell: Shell, job_id: int, fields: str) -> dict[str, list[str]]:
    done = shell.run(f"sacct -j {job_id} -o {fields} -P")
    assert (done.stderr, done.rc) == ("", 0)
    lines = done.stdout.splitlines()
    assert lines[0] == fields.replace(",", "|")
    return {row[0]: row[1:] for row in (line.split("|") for line in lines[1:])}


def test_the_batch_step_shows_the_cpu_and_memory_it_used(shell: Shell) -> None:
    job_id = _submit(shell, f'"{sys.executable}" burn.py 0.3 50')
    rows = _rows(shell, job_id, "JobID,TotalCPU,MaxRSS,UserCPU,SystemCPU")
    total, max_rss, user, system = rows[f"{job_id}.batch"]
    assert seconds(total) >= 0.2
    assert megabytes(max_rss) >= 40
    assert seconds(total) == pytest.approx(seconds(user) + seconds(system), abs=0.0015)
    job_total, job_rss, _, _ = rows[str(job_id)]
    assert job_total == total  # no steps: the job's CPU is its batch script's
    assert job_rss == ""  # as Slurm: MaxRSS belongs to steps


def test_the_job_row_adds_its_steps(shell: Shell) -> None:
    body = f'"{sys.executable}" burn.py 0.05 1\nsrun -n1 "{sys.executable}" burn.py 0.3 60'
    job_id = _submit(shell, body)
    rows = _rows(shell, job_id, "JobID,TotalCPU,MaxRSS")
    batch_total, batch_rss = rows[f"{job_id}.batch"]
    job_total, _ = rows[str(job_id)]
    # The step's 0.3 s count for the job, not for the batch script (which only waited).
    assert seconds(job_total) >= seconds(batch_total) + 0.25
    assert megabytes(batch_rss) < 55


def test_a_job_still_running_shows_no_usage_yet(shell: Shell) -> None:
    done = shell.run("sbatch --parsable --wrap='sleep 30'")
    job_id = int(done.stdout.strip())
    try:
        shell.cluster.wait([job_id], ("RUNNING",), final=False)
        rows = _rows(shell, job_id, "JobID,TotalCPU,MaxRSS")
        assert rows[f"{job_id}.batch"] == ["00:00:00", ""]
    finally:
        shell.run(f"scancel {job_id}")


@pytest.mark.parametrize(
    ("ms", "text"),
    [
        (0, "00:00:00"),
        (4, "00:00.004"),
        (1_250, "00:01.250"),
        (61_000, "00:01:01"),
        (3_723_456, "01:02:03"),
        (90_061_000, "1-01:01:01"),
    ],
)
def test_cpu_times_print_as_slurm_prints_them(ms: int, text: str) -> None:
    assert cpu_time(ms) == text


@pytest.mark.parametrize(
    ("kb", "units", "text"),
    [
        (0, None, "0"),
        (51_212, None, "51212K"),
        (51_200, None, "50M"),
        (2 << 20, None, "2G"),
        (51_212, "M", "50.01M"),
        (51_200, "K", "51200K"),
    ],
)
def test_max_rss_prints_as_slurm_prints_it(kb: int, units: str | None, text: str) -> None:
    assert rss(kb, units) == text
