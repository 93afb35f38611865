"""An elastic job live: its new rank starts with the new size in SLURM_NNODES, a removed rank
gets SIGTERM and the job goes on; squeue's view (the job's info) follows the allocation."""

from __future__ import annotations

from pathlib import Path

from phalanx.api.convert import job_info
from phalanx.domain.caller import Caller
from phalanx.domain.jobspec import JobSpec
from phalanx.domain.state import JobState
from phalanx.domain.time import MINUTE
from phalanx.testing.live import live_stack

TASK = (
    "/bin/sh",
    "-c",
    'trap "echo term $SLURM_NODEID; exit 0" TERM; '
    'echo "start $SLURM_NODEID of $SLURM_NNODES"; while :; do sleep 0.1; done',
)


def test_an_elastic_job_grows_and_shrinks_live(tmp_path: Path) -> None:
    stack = live_stack(nodes=3, gpus=1)
    engine = stack.engine
    admin = Caller(0, "root", admin=True)
    sleep = ("/bin/sleep", "600")
    [blocker] = stack.submit(
        JobSpec(
            name="blocker",
            gpus_per_task=1,
            time_limit=10 * MINUTE,
            command=sleep,
            workdir=str(tmp_path),
            output="blocker.out",
        )
    )
    assert stack.run(lambda: engine.jobs[blocker].state is JobState.RUNNING, 10)
    [job_id] = stack.submit(
        JobSpec(
            name="elastic",
            nodes_min=1,
            nodes_max=3,
            gpus_per_task=1,
            elastic=True,
            time_limit=10 * MINUTE,
            command=TASK,
            workdir=str(tmp_path),
        )
    )
    out = tmp_path / f"slurm-{job_id}.out"

    def lines() -> list[str]:
        return out.read_text().splitlines() if out.exists() else []

    try:
        assert stack.run(lambda: len(lines()) == 2, 20), lines()
        # Placed on one node (the placement tries the maximum, then the minimum), it grows
        # onto the other free node in the same pass: that rank starts with two in its size.
        assert sorted(lines())[1] == "start 1 of 2" and sorted(lines())[0] in (
            "start 0 of 1",
            "start 0 of 2",
        )
        job = engine.jobs[job_id]
        stack.controller.cancel(blocker, admin)
        assert stack.run(lambda: "start 2 of 3" in lines(), 20), lines()
        info = job_info(job, engine.cluster)
        assert info["tasks"] == 3 and info["gpus"] == 3 and info["nodelist"] == "gpu[001-003]", info
        # A job that may preempt it takes the node it grew onto last.
        [high] = stack.submit(
            JobSpec(
                name="high",
                qos="high",
                gpus_per_task=1,
                time_limit=10 * MINUTE,
                command=sleep,
                workdir=str(tmp_path),
                output="high.out",
            )
        )
        assert stack.run(lambda: engine.jobs[high].state is JobState.RUNNING, 20)
        assert stack.run(lambda: "term 2" in lines(), 20), lines()
        stack.run(lambda: False, 1)  # the removed rank's end is reported meanwhile
        assert job.state is JobState.RUNNING and job.run == 1
        info = job_info(job, engine.cluster)
        assert info["tasks"] == 2 and info["gpus"] == 2 and info["nodelist"] == "gpu[001-002]", info
        assert "term 0" not in lines() and "term 1" not in lines()
    finally:
        for j in list(engine.jobs):
            stack.controller.cancel(j, admin)
        tasks = stack.agents.runner
        assert stack.run(lambda: not tasks.running_count() and not tasks.unreaped(), 60)
    assert job.state is JobState.CANCELLED
