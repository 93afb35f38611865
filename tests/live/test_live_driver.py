"""End to end on this machine: real processes scheduled by the engine on the wall clock."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

from phalanx.domain.jobspec import JobSpec
from phalanx.domain.state import JobState
from phalanx.domain.time import SECOND
from phalanx.testing import LiveStack


def test_real_jobs_run_as_gangs_and_complete(tmp_path: Path, live: LiveStack) -> None:
    engine, loop, driver, journal = live.engine, live.loop, live.driver, live.journal
    # One write per task: the tasks share the output file (O_APPEND keeps whole writes).
    code = (
        "import os, sys; v = os.environ; "
        "sys.stdout.write(v['SLURM_JOB_ID'] + ' ' + v['WORLD_SIZE'] + '\\n')"
    )
    spec = JobSpec(
        name="hello",
        nodes_min=2,
        nodes_max=2,
        gpus_per_task=4,
        time_limit=60 * SECOND,
        command=(sys.executable, "-c", code),
        workdir=str(tmp_path),
    )
    ids = [job_id for _ in range(3) for job_id in loop.submit(spec)]
    done = asyncio.run(
        driver.run(lambda: all(engine.jobs[i].state.is_final for i in ids), timeout=30)
    )
    assert done
    assert [engine.jobs[i].state for i in ids] == [JobState.COMPLETED] * 3
    for job_id in ids:
        lines = (tmp_path / f"slurm-{job_id}.out").read_text().split()
        assert lines == [str(job_id), "2", str(job_id), "2"]
    journaled = [(type(e).__name__, getattr(e, "job_id", None)) for e in journal.events]
    assert journaled.count(("Submit", None)) == 3
    assert ("TasksExited", ids[-1]) in journaled


def test_a_job_past_its_time_limit_is_signalled_and_ends_as_timeout(
    tmp_path: Path, live: LiveStack
) -> None:
    engine, loop, driver = live.engine, live.loop, live.driver
    spec = JobSpec(
        name="long",
        gpus_per_task=1,
        time_limit=1 * SECOND,
        command=(sys.executable, "-c", "import time; time.sleep(60)"),
        workdir=str(tmp_path),
    )
    [job_id] = loop.submit(spec)
    done = asyncio.run(driver.run(lambda: engine.jobs[job_id].state.is_final, timeout=30))
    assert done
    assert engine.jobs[job_id].state is JobState.TIMEOUT
