"""The controller's subcommands (submit, jobs, job, cancel, nodes, acct) against the fake
controller of tests/client: output, exit statuses, and one line on every error path."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path

import pytest

from phalanx.cli.main import main

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "client"))
from fake_controller import TOKEN, FakeController, Served, serve

PHALANX = Path(sys.executable).with_name("phalanx")


@pytest.fixture
def served(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Served]:
    with serve(FakeController(), tmp_path) as running:
        monkeypatch.delenv("PHALANX_URL", raising=False)
        monkeypatch.delenv("PHALANX_TOKEN", raising=False)
        monkeypatch.setenv("PHALANX_STATE_DIR", str(running.state_dir))
        yield running


def phalanx(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    status = main(list(argv))
    out, err = capsys.readouterr()
    assert "Traceback" not in err
    return status, out, err


def lines(out: str) -> list[list[str]]:
    return [line.split() for line in out.splitlines()]


# ---------------------------------------------------------------------------- submit
def test_submit_prints_the_id_and_sends_the_options(
    served: Served, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MY_SETTING", "42")
    status, out, _ = phalanx(
        capsys, "submit", "-N", "2", "-n", "4", "--gpus-per-task", "1", "-p", "debug",
        "-t", "1:00:00", "-J", "train", "-C", "a&b", "--hold", "--no-requeue",
        "--begin", "2030-01-02T03:04:05", "--", "python", "train.py", "--lr", "3",
    )  # fmt: skip
    assert (status, out) == (0, "100\n")
    sent = served.fake.requests[-1]
    assert sent.command == ["python", "train.py", "--lr", "3"]
    assert (sent.nodes, sent.ntasks_per_node, sent.gpus_per_task) == ("2", 4, 1)
    assert (sent.partition, sent.time, sent.name) == ("debug", "1:00:00", "train")
    assert (sent.constraint, sent.hold, sent.requeue) == (["a", "b"], True, False)
    assert sent.begin == int(datetime(2030, 1, 2, 3, 4, 5).timestamp() * 1000)
    assert sent.environment["MY_SETTING"] == "42"
    assert sent.workdir == os.getcwd()


def test_submit_an_array_prints_its_first_id(
    served: Served, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    status, out, _ = phalanx(capsys, "submit", "--array", "3-5", "-D", str(tmp_path), "--", "x")
    assert (status, out) == (0, "100\n")
    assert served.fake.requests[-1].workdir == str(tmp_path)


def test_submit_without_a_command_is_a_usage_error(
    served: Served, capsys: pytest.CaptureFixture[str]
) -> None:
    status, _, err = phalanx(capsys, "submit", "-N", "2", "--")
    assert status == 2
    assert err.startswith("phalanx submit: error: no command")
    assert served.fake.requests == []


def test_a_field_the_controller_rejects_is_named(
    served: Served, capsys: pytest.CaptureFixture[str]
) -> None:
    status, _, err = phalanx(capsys, "submit", "--ntasks-per-node", "0", "--", "x")
    assert status == 2
    assert err.startswith("phalanx submit: error: ntasks_per_node: ")
    status, _, err = phalanx(capsys, "submit", "-p", "nope", "--", "x")
    assert (status, err) == (2, "phalanx submit: error: no partition 'nope'\n")


def test_a_bad_begin_is_a_usage_error(served: Served, capsys: pytest.CaptureFixture[str]) -> None:
    status, _, err = phalanx(capsys, "submit", "--begin", "tomorrow", "--", "x")
    assert status == 2
    assert "begin" in err


def test_a_full_store_refuses_with_status_1(
    served: Served, capsys: pytest.CaptureFixture[str]
) -> None:
    served.fake.store_full = True
    status, _, err = phalanx(capsys, "submit", "--", "x")
    assert status == 1
    assert "submissions refused" in err


def test_an_unreachable_controller_is_named(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("PHALANX_URL", raising=False)
    monkeypatch.setenv("PHALANX_STATE_DIR", str(tmp_path))
    for argv in (["submit", "--", "x"], ["jobs"], ["job", "1"], ["cancel", "1"], ["nodes"],
                 ["acct"]):  # fmt: skip
        status, out, err = phalanx(capsys, *argv)
        assert (status, out) == (1, "")
        assert err.startswith(f"phalanx {argv[0]}: error: cannot reach the controller")
        assert str(tmp_path / "controller.sock") in err
        assert err.count("\n") == 1


# ---------------------------------------------------------------------------- jobs
def seed(fake: FakeController) -> None:
    now = time.time_ns() // 1_000_000
    fake.add_job(job_id=5, name="big", state="RUNNING", reason="None", start=now - 3_723_000,
                 nodelist="n[1-2]", nodes_requested=2, gpus=16.0)  # fmt: skip
    # Requeued: it keeps its first start, yet shows no elapsed time while pending again.
    fake.add_job(job_id=6, array_job_id=6, array_task_id=0, reason="Resources", gpus=0.5,
                 start=now - 50_000)  # fmt: skip
    fake.add_job(job_id=7, array_job_id=6, array_task_id=1, partition="debug")
    fake.add_job(job_id=8, state="COMPLETED", start=now - 60_000, end=now - 30_000,
                 nodelist="n1")  # fmt: skip
    fake.add_job(job_id=9, user="bob")


def test_jobs_table(served: Served, capsys: pytest.CaptureFixture[str]) -> None:
    seed(served.fake)
    status, out, _ = phalanx(capsys, "jobs")
    assert status == 0
    table = lines(out)
    assert table[0] == ["JOBID", "PARTITION", "NAME", "USER", "STATE", "TIME", "NODES", "GPUS",
                        "NODELIST(REASON)"]  # fmt: skip
    assert table[1][:5] == ["5", "gpu", "big", "alice", "RUNNING"]
    assert table[1][5].startswith("01:02:0")
    assert table[1][6:] == ["2", "16", "n[1-2]"]
    assert table[2] == ["6_0", "gpu", "train", "alice", "PENDING", "00:00:00", "1", "0.5",
                        "(Resources)"]  # fmt: skip
    assert [row[0] for row in table[3:]] == ["6_1", "9"]
    # Columns line up: every cell of a column starts where its header does.
    header = out.splitlines()[0]
    assert all(line[header.index("STATE")] != " " for line in out.splitlines()[1:])


def test_jobs_why_adds_the_reason_message_as_a_last_column(
    served: Served, capsys: pytest.CaptureFixture[str]
) -> None:
    seed(served.fake)
    served.fake.add_job(
        job_id=10, reason="AssocGrpGRES", reason_message="ClusterQueue team-a uses 8 GPUs"
    )
    plain = phalanx(capsys, "jobs")[1].splitlines()
    status, out, _ = phalanx(capsys, "jobs", "--why")
    assert status == 0
    table = out.splitlines()
    assert table[0].split()[-1] == "WHY" and table[0].split()[:-1] == plain[0].split()
    assert table[-1].split()[-6:] == [
        "(AssocGrpGRES)",
        "ClusterQueue",
        "team-a",
        "uses",
        "8",
        "GPUs",
    ]
    # squeue's columns are unchanged: each row starts as it does without --why.
    assert [line.split()[:9] for line in table[1:]] == [line.split() for line in plain[1:]]


def test_jobs_filters(served: Served, capsys: pytest.CaptureFixture[str]) -> None:
    seed(served.fake)
    assert [row[0] for row in lines(phalanx(capsys, "jobs", "--all")[1])[1:]] == [
        "5", "6_0", "6_1", "8", "9"
    ]  # fmt: skip
    assert [row[0] for row in lines(phalanx(capsys, "jobs", "-u", "bob")[1])[1:]] == ["9"]
    assert [row[0] for row in lines(phalanx(capsys, "jobs", "-p", "debug")[1])[1:]] == ["6_1"]
    assert [row[0] for row in lines(phalanx(capsys, "jobs", "-t", "running")[1])[1:]] == ["5"]
    assert [row[0] for row in lines(phalanx(capsys, "jobs", "-u", "nobody")[1])[1:]] == []


def test_jobs_over_tcp_with_a_token(
    served: Served, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    seed(served.fake)
    monkeypatch.setenv("PHALANX_URL", served.url)
    monkeypatch.setenv("PHALANX_TOKEN", TOKEN)
    assert phalanx(capsys, "jobs")[0] == 0
    monkeypatch.setenv("PHALANX_TOKEN", "wrong")
    status, _, err = phalanx(capsys, "jobs")
    assert status == 1
    assert err == "phalanx jobs: error: missing or wrong bearer token\n"


def test_jobs_as_a_process_answers_and_imports_little(served: Served) -> None:
    # How long it takes is measured by bench/live_memory.py (phalanx jobs, 10,000 pending).
    seed(served.fake)
    env = {**os.environ, "PHALANX_STATE_DIR": str(served.state_dir)}
    done = subprocess.run([str(PHALANX), "jobs"], capture_output=True, text=True, env=env,
                          timeout=60, check=False)  # fmt: skip
    assert (done.returncode, done.stderr) == (0, "")
    assert done.stdout.splitlines()[1].split()[0] == "5"
    probe = (
        "import sys\n"
        "from phalanx.cli.main import main\n"
        "status = main(['jobs'])\n"
        "heavy = [m for m in ('httpx', 'pydantic', 'numpy', 'rich') if m in sys.modules]\n"
        "print('HEAVY', heavy, status)\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          env=env, timeout=60, check=False)  # fmt: skip
    assert "HEAVY [] 0" in done.stdout


# ---------------------------------------------------------------------------- job
def test_job_shows_key_value_pairs(served: Served, capsys: pytest.CaptureFixture[str]) -> None:
    served.fake.add_job(job_id=9, name="eval", state="FAILED", reason="NonZeroExitCode",
                        start=1_000, end=61_000, exit_code=3, signal=0, nodelist="n2",
                        command=["python", "eval.py", "--name", "a b"], workdir="/w",
                        tasks=8, gpus=8.0, restarts=1)  # fmt: skip
    status, out, _ = phalanx(capsys, "job", "9")
    assert status == 0
    pairs = dict(
        pair.split("=", 1) for line in out.splitlines() if "Command=" not in line
        for pair in line.split()
    )  # fmt: skip
    assert pairs["JobId"] == "9"
    assert (pairs["JobState"], pairs["Reason"]) == ("FAILED", "NonZeroExitCode")
    assert (pairs["ExitCode"], pairs["Restarts"], pairs["NodeList"]) == ("3:0", "1", "n2")
    assert (pairs["NumTasks"], pairs["Gpus"], pairs["TimeLimit"]) == ("8", "8", "01:00:00")
    assert pairs["StartTime"] == datetime.fromtimestamp(1).strftime("%Y-%m-%dT%H:%M:%S")
    assert pairs["WorkDir"] == "/w"
    assert "   Command=python eval.py --name 'a b'" in out.splitlines()


def test_a_pending_job_shows_its_expected_start(
    served: Served, capsys: pytest.CaptureFixture[str]
) -> None:
    served.fake.add_job(job_id=3, expected_start=86_400_000)
    out = phalanx(capsys, "job", "3")[1]
    expected = datetime.fromtimestamp(86_400).strftime("%Y-%m-%dT%H:%M:%S")
    assert f"StartTime={expected}" in out
    assert "EndTime=Unknown" in out
    assert "NodeList=(null)" in out


def test_an_unknown_job_is_not_a_usage_error(
    served: Served, capsys: pytest.CaptureFixture[str]
) -> None:
    assert phalanx(capsys, "job", "99")[::2] == (1, "phalanx job: error: no job 99\n")


# ---------------------------------------------------------------------------- cancel
def test_cancel(served: Served, capsys: pytest.CaptureFixture[str]) -> None:
    seed(served.fake)
    assert phalanx(capsys, "cancel", "5", "6") == (0, "", "")
    # An array job's id cancels all its tasks.
    assert [served.fake.jobs[i].state for i in (5, 6, 7, 9)] == ["CANCELLED"] * 3 + ["PENDING"]


def test_cancel_reports_each_refusal_and_goes_on(
    served: Served, capsys: pytest.CaptureFixture[str]
) -> None:
    served.fake.add_job(job_id=1, user="bob")
    served.fake.add_job(job_id=2)
    status, out, err = phalanx(capsys, "cancel", "1", "99", "2")
    assert (status, out) == (1, "")
    assert err.splitlines() == [
        "phalanx cancel: error: job 1: job 1 belongs to another user",
        "phalanx cancel: error: no job 99",
    ]
    assert served.fake.jobs[2].state == "CANCELLED"


# ---------------------------------------------------------------------------- nodes, acct
def test_nodes_table(served: Served, capsys: pytest.CaptureFixture[str]) -> None:
    status, out, _ = phalanx(capsys, "nodes")
    assert status == 0
    assert lines(out) == [
        ["NODE", "STATE", "GPUS", "CPUS", "MEMORY", "PARTITIONS", "LEAF", "REASON"],
        ["n1", "mixed", "4/8", "16/64", "1T", "gpu,debug", "leaf0", "-"],
        ["n2", "idle*", "0/8", "0/64", "500G", "gpu", "leaf1", "-"],
    ]


def test_acct_table(served: Served, capsys: pytest.CaptureFixture[str]) -> None:
    day = 86_400_000
    served.fake.add_job(job_id=11, state="COMPLETED", start=day, end=day + 90_000,
                        nodelist="n1")  # fmt: skip
    served.fake.add_job(job_id=12, state="FAILED", start=3 * day, end=3 * day + 5_000,
                        exit_code=1, signal=9, user="bob")  # fmt: skip
    served.fake.add_job(job_id=13)  # still pending: not in accounting
    status, out, _ = phalanx(capsys, "acct")
    assert status == 0
    table = lines(out)
    assert table[0] == ["JOBID", "NAME", "USER", "ACCOUNT", "PARTITION", "STATE", "EXITCODE",
                        "START", "END", "ELAPSED", "NODELIST"]  # fmt: skip
    start = datetime.fromtimestamp(86_400).strftime("%Y-%m-%dT%H:%M:%S")
    assert table[1] == ["11", "train", "alice", "ml", "gpu", "COMPLETED", "0:0", start,
                        table[1][8], "00:01:30", "n1"]  # fmt: skip
    assert table[2][6] == "1:9"
    assert len(table) == 3
    since = datetime.fromtimestamp(2 * 86_400).isoformat()
    assert [row[0] for row in lines(phalanx(capsys, "acct", "--since", since)[1])[1:]] == ["12"]
    assert [row[0] for row in lines(phalanx(capsys, "acct", "-u", "alice")[1])[1:]] == ["11"]
    assert [row[0] for row in lines(phalanx(capsys, "acct", "-j", "12,13")[1])[1:]] == ["12"]


def test_acct_checks_its_arguments(served: Served, capsys: pytest.CaptureFixture[str]) -> None:
    assert phalanx(capsys, "acct", "-j", "1,x")[0] == 2
    status, _, err = phalanx(capsys, "acct", "--since", "yesterday")
    assert status == 2
    assert "since" in err
