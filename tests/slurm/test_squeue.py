"""``squeue`` against Slurm's own output (``/work/shared/slurm/reference/out``), on a live
Phalanx with the jobs the reference was captured with.

What depends on the run is normalized on both sides: job ids (mapped to the reference's),
elapsed times, node names (Phalanx places the jobs elsewhere), and the ``%2`` task limit of a
collapsed array (not on the wire yet). Rows are compared as sorted lists: priorities, and so
the order within a state, are Phalanx's own.
"""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from slurm_cluster import (
    map_ids,
    normalize_nodes,
    pending_jobs,
    reference,
    reference_jobs,
    run,
    start,
    submit,
)

from phalanx.server.localcluster import LocalCluster
from phalanx.slurm import squeue
from phalanx.slurm.squeue import collapse, order, select

Scene = tuple[LocalCluster, dict[int, int], int]


@pytest.fixture(scope="module")
def scene(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Scene]:
    state = tmp_path_factory.mktemp("squeue")
    work = state / "work"
    work.mkdir()
    work.chmod(0o755)
    cluster = start(state)
    try:
        ids = reference_jobs(cluster, work)
        [failed] = submit(cluster, work, command=["sh", "-c", "exit 3"], name="wrap")
        ids[failed] = 34
        cluster.wait([failed])
        running = [i for i, ref in ids.items() if ref in (1, 2, 3, 4, 6)]
        cluster.wait(running, ("RUNNING",), final=False)
        yield cluster, ids, failed
    finally:
        cluster.stop()


def _squeue(scene: Scene, argv: list[str]) -> tuple[str, str, int]:
    return run(squeue.main, argv, scene[0].state_dir)


ELAPSED = re.compile(r"\b\d+:\d\d\b")


def _norm(text: str, ids: dict[int, int], elapsed: slice | None = None) -> list[str]:
    lines = []
    for line in text.splitlines():
        line = normalize_nodes(map_ids(line, ids))
        # A right-justified id keeps its width when the task limit goes.
        line = re.sub(r"(?<= )(\S+)%\d+\]", lambda m: " " * 2 + m.group(1) + "]", line)
        line = re.sub(r"%\d+\]", "]", line)
        if elapsed is not None and len(line) >= elapsed.stop:
            line = (
                line[: elapsed.start]
                + "T".rjust(elapsed.stop - elapsed.start)
                + line[elapsed.stop :]
            )
        lines.append(line)
    return lines


def _compare(scene: Scene, capture: str, elapsed: slice | None = None) -> None:
    command, out, _, err, rc = reference(capture)
    argv = shlex.split(command)[1:]
    got_out, got_err, got_rc = _squeue(scene, argv)
    want = _norm(out, {}, elapsed)
    got = _norm(got_out, scene[1], elapsed)
    header = 1 if "-h" not in argv else 0
    assert got[:header] == want[:header]
    assert sorted(got[header:]) == sorted(want[header:]), got_out
    assert (got_err, got_rc) == (err, rc)


TIME = slice(50, 60)


def test_default(scene: Scene) -> None:
    _compare(scene, "11_squeue_default.txt", TIME)


def test_default_format_spelled_out(scene: Scene) -> None:
    _compare(scene, "13_squeue_default_format_explicit.txt", TIME)


def test_pending_come_before_running(scene: Scene) -> None:
    out, _, _ = _squeue(scene, [])
    states = [line[47:49].strip() for line in out.splitlines()[1:]]
    assert states == sorted(states, key=lambda s: s != "PD")


def test_noheader_custom_format(scene: Scene) -> None:
    _compare(scene, "15_squeue_o_noheader.txt")


def test_states_pending(scene: Scene) -> None:
    _compare(scene, "20_squeue_states_pd.txt", TIME)


def test_job_list(scene: Scene) -> None:
    _compare(scene, "22_squeue_job_list.txt", TIME)


def test_unknown_job(scene: Scene) -> None:
    _compare(scene, "23_squeue_unknown_job.txt")


def test_long_format(scene: Scene) -> None:
    _, out, _, _, _ = reference("12_squeue_long.txt")
    got, _, rc = _squeue(scene, ["-l"])
    assert rc == 0
    date = "%a %b %d %H:%M:%S %Y"
    time.strptime(got.splitlines()[0], date)
    want = _norm(out, {}, slice(58, 68))[1:]
    have = _norm(got, scene[1], slice(58, 68))[1:]
    assert have[0] == want[0]
    assert sorted(have[1:]) == sorted(want[1:])


def test_long_Format_with_a_bad_field(scene: Scene) -> None:
    command, _, lines, err, rc = reference("16_squeue_Format_bad.txt")
    got, got_err, got_rc = _squeue(scene, shlex.split(command)[1:])
    assert (got_err, got_rc) == (err, rc)
    assert got.splitlines()[0] == lines[0]
    assert len(got.splitlines()) == len(lines)
    assert all(len(line) == 20 for line in got.splitlines())


def test_long_Format_with_separators(scene: Scene) -> None:
    command, out, _, _, _ = reference("18_squeue_Format_sep.txt")
    got, _, rc = _squeue(scene, shlex.split(command)[1:])
    assert rc == 0
    strip = lambda text: sorted(line.split("|", 1)[1] for line in text.splitlines())  # noqa: E731
    assert strip(got) == strip(out)


def test_array_tasks_one_per_line(scene: Scene) -> None:
    command, out, lines, _, _ = reference("19_squeue_array_r.txt")
    got, _, rc = _squeue(scene, shlex.split(command)[1:])
    assert rc == 0
    # Column 2 is the raw job id: Slurm gave the running tasks new ids (11, 12).
    drop = lambda text: [re.sub(r"^(\S+) \S+", r"\1 _", x) for x in text.splitlines()]  # noqa: E731
    assert got.splitlines()[0] == lines[0]
    assert drop(got)[1:] == drop(out)[1:]


def test_start_times(scene: Scene) -> None:
    _, _, lines, _, _ = reference("21_squeue_start.txt")
    got, _, rc = _squeue(scene, ["--start"])
    assert rc == 0
    assert got.splitlines()[0] == lines[0]
    # Not on the wire yet: the nodes a pending job is planned on ((null) for all) and the
    # begin time of a BeginTime job (N/A): start times are compared as "known or not" for
    # the jobs Phalanx plans.
    when = lambda x: re.sub(r"(\d{4}-\S+|N/A)", lambda m: "WHEN".rjust(len(m[0])), x)  # noqa: E731
    want = [when(x.replace("NODES", "(null)")) for x in _norm("\n".join(lines), {})[1:]]
    have = [when(x) for x in _norm(got, scene[1])[1:]]
    assert sorted(map(_squash, have)) == sorted(map(_squash, want))
    [bigjob] = [x for x in got.splitlines() if "bigjob" in x]
    assert re.search(r"PD \d{4}-\d\d-\d\dT", bigjob)


def _squash(line: str) -> str:
    return " ".join(line.split())


def test_finished_job_shows_only_with_all_states(scene: Scene) -> None:
    _, ids, failed = scene
    for capture in ("102_squeue_completed_job.txt", "103_squeue_completed_job_all_states.txt"):
        command, out, _, err, rc = reference(capture)
        argv = [str(failed) if a == "34" else a for a in shlex.split(command)[1:]]
        got, got_err, got_rc = _squeue(scene, argv)
        assert _norm(got, ids, TIME) == _norm(out, {}, TIME)
        assert (got_err, got_rc) == (err, rc)


def test_filters(scene: Scene) -> None:
    out, _, _ = _squeue(scene, ["-h", "-o", "%j", "-n", "wrap,small"])
    assert sorted(out.split()) == ["small", "wrap", "wrap"]
    out, _, _ = _squeue(scene, ["-h", "-o", "%i", "-u", "nobody"])
    assert out == ""
    out, _, _ = _squeue(scene, ["-h", "-o", "%i", "--me", "-p", "gpu"])
    assert len(out.splitlines()) == 12
    out, _, _ = _squeue(scene, ["-h", "-t", "R,pending", "-o", "%t"])
    assert set(out.split()) == {"R", "PD"}


def test_bad_options(scene: Scene) -> None:
    _, err, rc = _squeue(scene, ["--bogus"])
    assert rc == 1 and err.startswith("squeue: unrecognized option '--bogus'")
    _, err, rc = _squeue(scene, ["-t", "XX"])
    assert (rc, err) == (1, "squeue: error: Invalid job state specified: XX\n")


# ------------------------------------------------------------------------------ pure parts
def _job(job_id: int, state: str = "PENDING", **extra: object) -> dict[str, object]:
    job: dict[str, object] = {
        "job_id": job_id,
        "array_job_id": None,
        "array_task_id": None,
        "name": "j",
        "user": "u",
        "account": "a",
        "partition": "p",
        "qos": "normal",
        "state": state,
        "reason": "Priority" if state == "PENDING" else "None",
        "priority": 1.0,
        "nodes_requested": 1,
        "gpus": 0.0,
        "cpus": 1,
        "time_limit_ms": 60_000,
        "submit": 0,
        "start": None,
        "end": None,
        "nodelist": "",
    }
    job.update(extra)
    return job


def test_finished_jobs_are_forgotten_after_min_job_age() -> None:
    opts = squeue._parse(["-t", "all"])
    now = 10_000_000
    fresh = _job(1, "COMPLETED", end=now - 299_000)
    old = _job(2, "COMPLETED", end=now - 301_000)
    assert [j["job_id"] for j in select([fresh, old], opts, now)] == [1]


def test_pending_array_tasks_collapse_with_their_limit() -> None:
    tasks = [
        _job(
            10 + t, array_job_id=10, array_task_id=t, array_max_tasks=2, reason="JobArrayTaskLimit"
        )
        for t in (2, 3, 4, 6)
    ]
    [record] = collapse(tasks)
    assert squeue.value("i", record, 0) == "10_[2-4,6%2]"
    assert squeue.value("K", record, 0) == "2-4,6%2"
    assert squeue.value("A", record, 0) == "10"


def test_order_is_partition_state_priority() -> None:
    jobs = [_job(1, "RUNNING"), _job(2, priority=5.0), _job(3), _job(4)]
    assert [j["job_id"] for j in order(jobs, start=False)] == [2, 4, 3, 1]


def _full(job_id: int, state: str, **extra: object) -> dict[str, object]:
    """A record with every field squeue may read (as ``GET /v1/jobs`` sends)."""
    job = _job(job_id, state, **extra)
    job.setdefault("start", 1_000_000 if state != "PENDING" else None)
    for key, value in {
        "nodelist": "" if state == "PENDING" else "gpu[001-002]",
        "end": 2_000_000 if state in squeue.FINAL else None,
        "expected_start": 3_000_000 if state == "PENDING" else None,
        "signal": 9 if state == "FAILED" else 0,
        "command": ["/bin/x", "y"],
        "workdir": "/w",
        "comment": "hi",
        "mem_mb": 4096,
        "gpus": 4.0,
        "cpus": 8,
    }.items():
        job.setdefault(key, value)
    return job


@pytest.mark.parametrize("argv", [[], ["-l"], ["--start"], ["-u", "u", "-A", "a", "-q", "normal"]])
def test_the_fields_fetched_are_all_that_is_read(argv: list[str]) -> None:
    """Each ``-o`` letter prints the same from the fields ``wire_fields`` asks for as from
    whole records, and selection and sort need no more."""
    now = 10_000_000
    jobs = [
        _full(1, "RUNNING"),
        _full(2, "PENDING", time_limit_ms=squeue.UNLIMITED_MS),
        _full(3, "FAILED", end=now - 1000),
        _full(4, "TIMEOUT", end=now - 1000),
        _full(5, "PENDING", array_job_id=5, array_task_id=0),
        _full(6, "PENDING", array_job_id=5, array_task_id=1),
        _full(7, "RUNNING", array_job_id=5, array_task_id=2),
        _full(8, "COMPLETED", end=now - 1000),
    ]
    opts = squeue._parse([*argv, "-t", "all"])
    letters = "".join(squeue.HEADERS)
    _, specs, _ = squeue.parse_percent("%" + "%".join(letters), letters)
    fields = squeue.wire_fields(opts, specs)
    sent = [{k: j[k] for k in fields} for j in jobs]

    def listing(records: list[dict[str, object]]) -> list[list[str]]:
        shown = order(collapse(select(records, opts, now)), opts.start)
        return [[squeue.value(s.key, j, now) for s in specs] for j in shown]

    assert listing(sent) == listing(jobs)
    assert len(listing(jobs)) == (2 if opts.start else 7)  # arrays collapse; --start: pending


def test_squeue_with_1000_pending_jobs_is_quick(scene: Scene, tmp_path: Path) -> None:
    cluster = scene[0]
    tmp_path.chmod(0o755)
    pending_jobs(cluster, 1000, tmp_path)
    env = {"PHALANX_STATE_DIR": str(cluster.state_dir), "PATH": "/usr/bin:/bin"}
    argv = [sys.executable, "-m", "phalanx.slurm.squeue"]
    took = []
    for _ in range(3):
        t0 = time.perf_counter()
        done = subprocess.run(argv, env=env, capture_output=True, text=True, check=True)
        took.append(time.perf_counter() - t0)
    assert len(done.stdout.splitlines()) > 1000
    assert sorted(took)[1] < 2.0
