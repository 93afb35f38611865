"""scancel against a real Phalanx, compared with the reference Slurm's captures."""

from __future__ import annotations

import getpass
import re

import pytest
from slurm_shell import Shell, reference

from phalanx.domain.request import MAX_ARRAY_TASKS
from phalanx.slurm.commandline import CommandLineError
from phalanx.slurm.scancel import MAX_ARRAY_SIZE, parse_job_ids


def submit(shell: Shell, options: str) -> str:
    done = shell.run(f"sbatch --parsable {options} --wrap='sleep 300'")
    assert done.rc == 0, done
    return done.stdout.strip()


def state(shell: Shell, job_id: str) -> str:
    return str(shell.cluster.job(int(job_id))["state"])


def run_as_reference(shell: Shell, name: str, **ids: str) -> None:
    theirs = reference(name)
    command = theirs.command
    for ref_id, our_id in ids.items():
        # A job id, not an array task index: "9_9" names task 9 of job 9.
        command = re.sub(rf"(?<![\d_]){ref_id.lstrip('_')}(?!\d)", our_id, command)
    ours = shell.run(command)
    assert (ours.stdout, ours.stderr, ours.rc) == (theirs.stdout, theirs.stderr, theirs.rc)


@pytest.mark.parametrize(
    "name",
    ["51_scancel_unknown", "52_scancel_unknown_v", "53_scancel_garbage", "54_scancel_noargs"],
)
def test_messages_and_exit_codes_are_slurms(shell: Shell, name: str) -> None:
    run_as_reference(shell, name)


def test_a_job_then_again_when_it_has_ended(shell: Shell) -> None:
    # As capture.py: the running filler (1), then the held job (7), then 7 again.
    filler = submit(shell, "-J filler")
    shell.cluster.wait([int(filler)], ("RUNNING",), final=False)
    run_as_reference(shell, "49_scancel_filler", _1=filler)
    job = submit(shell, "-H -J heldjob")
    run_as_reference(shell, "55_scancel_ok", _7=job)
    shell.cluster.wait([int(filler), int(job)], ("CANCELLED",))
    run_as_reference(shell, "56_scancel_again_completed", _7=job)
    done = shell.run(f"scancel -v {job}")
    assert done.rc == 0
    assert done.stderr.endswith("Job/step already completing or completed\n")


def test_one_array_task_then_the_whole_array(shell: Shell) -> None:
    array = submit(shell, "-H --array=0-9%2")
    run_as_reference(shell, "50_scancel_array_task", _9=array)
    tasks = shell.cluster.call("GET", "/v1/jobs", query={"ids": array, "all": True})["jobs"]
    states = {t["array_task_id"]: t["state"] for t in tasks}
    assert states[9] == "CANCELLED" and states[0] == "PENDING"
    assert shell.run(f"scancel {array}_[1-2,5]").rc == 0
    assert shell.run(f"scancel {array}").rc == 0
    tasks = shell.cluster.call("GET", "/v1/jobs", query={"ids": array, "all": True})["jobs"]
    assert {t["state"] for t in tasks} == {"CANCELLED"}


def test_filters_by_name_state_and_user(shell: Shell) -> None:
    keep = submit(shell, "-H -J keep")
    gone = submit(shell, "-H -J gone")
    assert shell.run("scancel --name=gone --state=PD").rc == 0
    assert (state(shell, keep), state(shell, gone)) == ("PENDING", "CANCELLED")
    ours = shell.run(f"scancel -u {getpass.getuser()}")
    assert (ours.stdout, ours.stderr, ours.rc) == ("", "", 0)
    assert state(shell, keep) == "CANCELLED"
    theirs = reference("105_scancel_user_all")
    assert (theirs.stdout, theirs.stderr, theirs.rc) == ("", "", 0)


def test_one_cluster_options_no_ops_and_filters_nothing_passes(shell: Shell) -> None:
    job = submit(shell, "-H -J mine")
    for argv in ("--reservation=r", "--wckey=w", "-M elsewhere"):
        shell.run(f"scancel --me {argv}")
    assert state(shell, job) == "PENDING"
    done = shell.run("scancel -M elsewhere 1")
    assert done.rc == 1 and "can't be reached now" in done.stderr
    done = shell.run(f"scancel --clusters=all --ctld -H -i --sibling=x --me -n mine {job}")
    assert (done.stderr, done.rc) == ("", 0)
    assert state(shell, job) == "CANCELLED"


@pytest.mark.parametrize(
    ("words", "ids"),
    [
        (["12"], [(12, None)]),
        (["12_3"], [(12, 3)]),
        (["12_[1-2,5]"], [(12, 1), (12, 2), (12, 5)]),
        (["12.batch", "13.0"], [(12, None), (13, None)]),
        (["12,13"], [(12, None), (13, None)]),
    ],
)
def test_job_ids(words: list[str], ids: list[tuple[int, int | None]]) -> None:
    assert parse_job_ids(words) == ids


# Task ids past Slurm's MaxArraySize: 12_[1-99999999999] built a list of 10^11 ids (tens of GB).
@pytest.mark.parametrize(
    "word", ["abc", "12_x", "_1", "12_[a]", "1.x", "12_²", "12_[1-99999999999]", "12_[0-1001]"]
)
def test_what_is_not_a_job_id(word: str) -> None:
    with pytest.raises(CommandLineError) as caught:
        parse_job_ids([word])
    assert (caught.value.lines, caught.value.status) == (
        [f"scancel: error: Invalid job id {word}"],
        1,
    )


def test_the_largest_task_id_is_the_domains() -> None:
    assert MAX_ARRAY_SIZE == MAX_ARRAY_TASKS
    assert parse_job_ids(["12_[999-1000]"]) == [(12, 999), (12, 1000)]
