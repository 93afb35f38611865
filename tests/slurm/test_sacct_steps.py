"""sacct's rows for the steps ``srun`` starts in an allocation (``N.0``, ``N.1``, ...), against
Slurm's output (``out/95_sacct_job.txt``: ``sbatch -n 2 --gres=gpu:2`` of a script that runs
``srun bash -c ...`` once; ``out/96_sacct_long_job.txt``: ``sacct -l`` of such a job with one
task), on a live Phalanx with the shims on PATH."""

from __future__ import annotations

import re
import time

from slurm_shell import Shell, reference

REF_JOB = "29"  # the reference's job id
NODE = re.compile(r"\bn\d+\b")


def _submit(shell: Shell, name: str, body: str, options: str = "") -> int:
    (shell.workdir / name).write_text(f"#!/bin/sh\n{body}\n")
    done = shell.run(f"sbatch --parsable {options} -o {name}-%j.out {name}")
    assert done.rc == 0, done
    job_id = int(done.stdout.strip())
    shell.cluster.wait([job_id], ("COMPLETED", "FAILED"), timeout=60)
    return job_id


def _sacct(shell: Shell, job_id: int, fields: str) -> list[list[str]]:
    done = shell.run(f"sacct -j {job_id} -P -o {fields}")
    assert (done.stderr, done.rc) == ("", 0)
    lines = done.stdout.splitlines()
    assert lines[0] == fields.replace(",", "|")
    return [line.split("|") for line in lines[1:]]


def test_a_step_prints_as_slurm_prints_it(shell: Shell) -> None:
    ref = reference("95_sacct_job")
    # The reference cluster's DefMemPerCPU=8000 (its SLURM_MEM_PER_CPU), asked here.
    job_id = _submit(shell, "step.sh", "srun bash -c true", "-n 2 --gres=gpu:2 --mem-per-cpu=8000")
    done = shell.run(ref.command.replace(f"-j {REF_JOB} ", f"-j {job_id} "))
    assert (done.stderr, done.rc) == (ref.stderr, ref.rc)
    ours = re.sub(rf"(?m)(^|\|){job_id}(?=[.|])", rf"\g<1>{REF_JOB}", done.stdout)
    assert NODE.sub("NODE", ours) == NODE.sub("NODE", ref.stdout)
    rows = _sacct(shell, job_id, "JobID,JobName,NTasks,NNodes,AllocCPUS,Start,End")
    step = rows[2]
    assert step[:5] == [f"{job_id}.0", "bash", "2", "1", "2"]
    assert step[5] <= step[6] and step[6] != "Unknown"


def test_the_long_list_of_fields_is_slurms(shell: Shell) -> None:
    ref = reference("96_sacct_long_job")  # job 28: env_job.sh, one task, one ``srun bash``
    ref_job = "28"
    body = "env | grep ^SLURM_\nsrun bash -c 'echo $SLURM_PROCID'"
    job_id = _submit(shell, "env_job.sh", body, "--mem-per-cpu=8000")
    done = shell.run(ref.command.replace(f"-j {ref_job}", f"-j {job_id}"))
    assert (done.stderr, done.rc) == (ref.stderr, ref.rc)
    ours, theirs = done.stdout.splitlines(), ref.stdout.splitlines()
    assert ours[:2] == theirs[:2] and len(ours) == len(theirs) == 5
    spans = [m.span() for m in re.finditer(r"-+", theirs[1])]
    names = [theirs[0][a:b].strip() for a, b in spans]

    def cells(line: str, job: str) -> dict[str, str]:
        row = {name: line[a:b] for name, (a, b) in zip(names, spans, strict=True)}
        for name in ("JobID", "JobIDRaw"):
            row[name] = row[name].replace(job, ref_job, 1).strip()
        row["Elapsed"] = "TIME"
        # Phalanx's agents measure each step's peak RSS; the reference gathered nothing
        # (no JobAcctGatherType), so its MaxRSS is empty.
        row["MaxRSS"] = ""
        return row

    assert all(len(line) == len(theirs[0]) for line in ours)
    assert [cells(line, str(job_id)) for line in ours[2:]] == [
        cells(line, ref_job) for line in theirs[2:]
    ]


def test_a_failing_step_shows_its_exit_code(shell: Shell) -> None:
    body = "srun sh -c 'exit 7'\nsrun -n1 sh -c 'kill -USR1 $$'\nexit 0"
    job_id = _submit(shell, "fail.sh", body, "-n 2")
    rows = _sacct(shell, job_id, "JobID,JobName,State,ExitCode")
    assert rows == [
        [str(job_id), "fail.sh", "COMPLETED", "0:0"],
        [f"{job_id}.batch", "batch", "COMPLETED", "0:0"],
        [f"{job_id}.0", "sh", "FAILED", "7:0"],
        [f"{job_id}.1", "sh", "FAILED", "0:10"],
    ]


def test_several_steps_each_with_their_own_nodes_and_usage(shell: Shell) -> None:
    body = "srun -N1 -n1 true\nsrun -N2 -n2 /bin/true\nsrun -n1 sleep 0.2"
    job_id = _submit(shell, "many.sh", body, "-N 2 --ntasks-per-node=1 --gpus-per-node=2")
    rows = _sacct(shell, job_id, "JobID,JobName,NNodes,NTasks,AllocTRES,State,TotalCPU,MaxRSS")
    assert [r[0] for r in rows] == [
        str(job_id),
        f"{job_id}.batch",
        f"{job_id}.0",
        f"{job_id}.1",
        f"{job_id}.2",
    ]
    zero, one, two = rows[2:]
    assert zero[1:5] == ["true", "1", "1", zero[4]] and "node=1" in zero[4]
    assert "gres/gpu=2," in zero[4]
    assert one[1:4] == ["true", "2", "2"] and "gres/gpu=4," in one[4] and "node=2" in one[4]
    assert two[1] == "sleep"
    assert all(r[5] == "COMPLETED" and r[7] != "" for r in (zero, one, two))
    # With -X, only the allocations.
    done = shell.run(f"sacct -X -P -n -j {job_id} -o JobID")
    assert done.stdout == f"{job_id}\n"


def test_a_running_job_shows_its_running_step(shell: Shell) -> None:
    (shell.workdir / "long.sh").write_text("#!/bin/sh\nsrun sleep 30\n")
    done = shell.run("sbatch --parsable -o long-%j.out long.sh")
    job_id = int(done.stdout.strip())
    try:
        shell.cluster.wait([job_id], ("RUNNING",), final=False)
        for _ in range(100):
            rows = _sacct(shell, job_id, "JobID,JobName,State,End")
            if len(rows) == 3:
                break
            time.sleep(0.05)
        assert rows[2] == [f"{job_id}.0", "sleep", "RUNNING", "Unknown"]
    finally:
        shell.run(f"scancel {job_id}")
    shell.cluster.wait([job_id], ("CANCELLED",))
    rows = _sacct(shell, job_id, "JobID,State,ExitCode")
    assert rows[2][:2] == [f"{job_id}.0", "CANCELLED"]


def test_steps_of_ended_jobs_outlive_a_controller_restart(shell: Shell) -> None:
    job_id = _submit(shell, "kept.sh", "srun -n1 sh -c 'exit 4'", "-n 1")
    before = _sacct(shell, job_id, "JobID,JobName,State,ExitCode,NodeList,AllocTRES")
    assert before[2][:4] == [f"{job_id}.0", "sh", "FAILED", "4:0"]
    shell.cluster.kill_controller()
    shell.cluster.start_controller()
    shell.cluster.wait_agents()
    assert _sacct(shell, job_id, "JobID,JobName,State,ExitCode,NodeList,AllocTRES") == before
