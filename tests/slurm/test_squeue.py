"""``squeue`` against Slurm's own output (``/work/shared/slurm/reference/out``), on a live
Phalanx with the jobs the reference was captured with.

What depends on the run is normalized on both sides: job ids (mapped to the reference's),
elapsed times, instants and node names (Phalanx places the jobs elsewhere). Rows are compared
as sorted lists: priorities, and so the order within a state, are Phalanx's own, and a
``%Q`` column is masked. Where the custom formats print more, these differ by design or by
how the scene is built, and are made equal in ``_row``:

* ``MIN_MEMORY``: the reference's slurm.conf has ``DefMemPerCPU=8000``; Phalanx has no
  default, so a job that asks for none prints ``0``, as Slurm without one does.
* ``TRES_PER_NODE``: the scene submits ``train_llm`` with 4 GPUs per task and no model
  (``--gres=gpu:h100:4`` in the reference).
* the raw id (``-O JobID``) of a running array task: Slurm gave them new ids (11, 12).
"""

from __future__ import annotations

import json
import re
import shlex
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from slurm_cluster import (
    map_ids,
    normalize_nodes,
    pending_jobs,
    reference,
    reference_scene,
    run,
    start,
)

from phalanx.domain.hostlist import expand
from phalanx.server.localcluster import LocalCluster
from phalanx.slurm import squeue
from phalanx.slurm.format import instant
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
        ids, failed = reference_scene(cluster, work)
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
    # Not on the wire yet: the nodes a pending job is planned on ((null) for all). Start
    # times are Phalanx's own plan: compared as "known or not".
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


INSTANT = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d")


def _row(names: list[str], values: list[str], ids: dict[int, int]) -> tuple[str, ...]:
    """A row of a custom format with what must differ made equal (the module docstring)."""
    row = dict(zip(names, values, strict=False))
    running = row.get("STATE") == "RUNNING"
    if row.get("NAME") == "arr" and running and "_" not in row["JOBID"]:
        row["JOBID"] = "TASK"
    else:
        row["JOBID"] = map_ids(row["JOBID"], ids)
    for name in ("START_TIME", "SUBMIT_TIME"):
        if name in row:
            row[name] = INSTANT.sub("WHEN", row[name])
    if running and "TIME_LEFT" in row:
        row["TIME_LEFT"] = "LEFT"
    if "PRIORITY" in row:
        row["PRIORITY"] = "P"
    if "MIN_MEMORY" in row:
        row["MIN_MEMORY"] = row["MIN_MEMORY"].replace("8000M", "0")
    if "TRES_PER_NODE" in row:
        row["TRES_PER_NODE"] = row["TRES_PER_NODE"].replace("gpu:h100:", "gpu:")
    if "NODELIST" in row:
        row["NODELIST"] = normalize_nodes(row["NODELIST"])
    return tuple(row.values())


def _rows(text: str, ids: dict[int, int], split: str | None) -> tuple[str, list[tuple[str, ...]]]:
    header, *lines = text.splitlines()
    names = header.split(split)
    return header, sorted(_row(names, line.split(split), ids) for line in lines)


def test_custom_format(scene: Scene) -> None:
    command, out, _, err, rc = reference("14_squeue_format_custom.txt")
    got, got_err, got_rc = _squeue(scene, shlex.split(command)[1:])
    assert (got_err, got_rc) == (err, rc)
    assert _rows(got, scene[1], "|") == _rows(out, {}, "|")


def test_long_Format_with_widths(scene: Scene) -> None:
    command, out, lines, err, rc = reference("17_squeue_Format_long.txt")
    got, got_err, got_rc = _squeue(scene, shlex.split(command)[1:])
    assert (got_err, got_rc) == (err, rc)
    assert _rows(got, scene[1], None) == _rows(out, {}, None)
    # Every field is padded to its width (Name:30, the rest 20), the empty NODELIST too.
    assert {len(line) for line in got.splitlines()} == {len(lines[0])} == {270}


def test_count_of_a_users_jobs(scene: Scene) -> None:
    command, out, _, err, rc = reference("24_squeue_user.txt")
    squeue_part, pipe = command.split("|")
    assert pipe.strip() == "wc -l"
    # The reference's jobs were root's; the scene's are this user's.
    argv = [squeue._me() if a == "root" else a for a in shlex.split(squeue_part)[1:]]
    got, got_err, got_rc = _squeue(scene, argv)
    assert (f"{len(got.splitlines())}\n", got_err, got_rc) == (out, err, rc)


# The values of the document that differ by design (as in ``_row``) or by the run.
DOCUMENT_MASKS = {
    "account": "the scene's user",  # and the user's group below
    "group_id": "",
    "group_name": "",
    "association_id": "Phalanx has no associations: 0",
    "command": "the scene submits a command, the reference sbatch --wrap",
}


def _document_head(text: str, lines: int | None = None) -> list[str]:
    out = []
    for line in text.splitlines()[:lines]:
        line = re.sub(r"\b1[7-9]\d{8}\b", "TIME", normalize_nodes(line))
        key = re.match(r'\s*(?:"(\w+)": |!!str (\w+): )', line)
        if key and (key[1] or key[2]) in DOCUMENT_MASKS:
            line = key[0] + "X"
        out.append(line)
    return out


@pytest.mark.parametrize(
    "capture", ["25_squeue_json_head.txt", "26_squeue_yaml_head.txt"], ids=["json", "yaml"]
)
def test_json_and_yaml_heads(scene: Scene, capture: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The document's head as Slurm prints it: meta, errors and the first job (1, filler)
    up to where the capture was cut (``| head -c``), its last partial line left out."""
    monkeypatch.setenv("PHALANX_CLUSTER", "refcluster")
    command, out, _, err, rc = reference(capture)
    argv, head = command.split("|")
    assert head.strip().startswith("head -c")
    got, got_err, got_rc = _squeue(scene, shlex.split(argv)[1:])
    assert (got_err, got_rc) == (err, rc)
    want = _document_head(out)[:-1]
    assert _document_head(got, len(want)) == want


def test_json_and_yaml_are_one_document(scene: Scene) -> None:
    """``--json`` parses, lists the jobs squeue lists (a pending array as one record), and
    ``--yaml`` is the same document (where an empty string is null, as in Slurm's YAML)."""
    as_json, _, rc = _squeue(scene, ["--json"])
    as_yaml, _, rc_yaml = _squeue(scene, ["--yaml"])
    assert rc == rc_yaml == 0
    doc = json.loads(as_json)
    listed, _, _ = _squeue(scene, ["-h", "-o", "%i %T"])
    assert len(doc["jobs"]) == len(listed.splitlines())
    keys = [list(job) for job in doc["jobs"]]
    assert all(k == keys[0] for k in keys) and len(keys[0]) == 110
    [array] = [j for j in doc["jobs"] if j["array_task_string"]]
    assert (array["array_task_string"], array["array_max_tasks"]) == ("2-9%2", 2)
    [gpu] = [j for j in doc["jobs"] if j["name"] == "train_llm"]
    assert (gpu["cpus_per_task"], gpu["memory_per_node"], gpu["tres_per_node"]) == (
        8,
        65536,
        "gres:gpu:4",
    )

    def nulls(value: object) -> object:
        if isinstance(value, dict):
            return {k: nulls(v) for k, v in value.items()}
        if isinstance(value, list):
            return [nulls(v) for v in value]
        return None if value == "" else value

    assert yaml.safe_load(as_yaml) == nulls(doc)


def test_json_for_an_unknown_job(scene: Scene) -> None:
    out, err, rc = _squeue(scene, ["--json", "-j", "999999"])
    assert (out, err, rc) == ("", "slurm_load_jobs error: Invalid job id specified\n", 1)


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


def test_one_cluster_options_and_no_ops_change_nothing(scene: Scene) -> None:
    argv = ["-h", "-o", "%i %t"]
    plain = _squeue(scene, argv)
    for extra in (
        ["-M", "all"],
        ["--clusters=elsewhere,phalanx"],
        ["-a"],
        ["--hide"],
        ["--federation"],
        ["--local"],
        ["--sib"],
        ["--noconvert"],
        ["-P"],
        ["--array-unique"],
        ["-v"],
    ):
        assert _squeue(scene, argv + extra) == plain, extra
    _, err, rc = _squeue(scene, ["-M", "elsewhere"])
    assert rc == 1 and err.startswith("squeue: error: 'elsewhere' can't be reached now")


def test_sort_nodes_and_filters_nothing_here_passes(scene: Scene) -> None:
    out, _, _ = _squeue(scene, ["-h", "-o", "%A", "-S", "-A"])
    ids = [int(x) for x in out.split()]
    assert len(ids) > 2 and ids == sorted(ids, reverse=True)
    out, _, _ = _squeue(scene, ["-h", "-o", "%A", "--sort=t,A"])
    assert [int(x) for x in out.split()] != ids
    running, _, _ = _squeue(scene, ["-h", "-t", "R", "-o", "%A %N"])
    node = expand(running.split()[1])[0]
    out, _, _ = _squeue(scene, ["-h", "-t", "R", "-o", "%A %N", "-w", node])
    assert out and all(node in expand(line.split()[1]) for line in out.splitlines())
    assert _squeue(scene, ["-h", "-L", "x"]) == ("", "", 0)
    assert _squeue(scene, ["-h", "--reservation=x"]) == ("", "", 0)
    _, err, rc = _squeue(scene, ["-s"])
    assert (err, rc) == (
        "squeue: error: --steps: steps are not listed by squeue here: use sacct\n",
        1,
    )


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
        _job(10 + t, array_job_id=10, array_task_id=t, array_throttle=2, reason="JobArrayTaskLimit")
        for t in (2, 3, 4, 6)
    ]
    [record] = collapse(tasks)
    assert squeue.value("i", record, 0) == "10_[2-4,6%2]"
    assert squeue.value("K", record, 0) == "2-4,6%2"
    assert squeue.value("A", record, 0) == "10"


def test_tres_per_node_is_what_was_asked_per_node() -> None:
    asked = _job(1, "RUNNING", gpus=120.0, gpus_per_task=0, exclusive=True)
    assert squeue.value("b", asked, 0) == "N/A"  # --exclusive holds GPUs it did not ask for
    gpu = _job(2, "RUNNING", gpus_per_task=2, ntasks_per_node=2, gpu_model="h100")
    assert squeue.value("b", gpu, 0) == "gres:gpu:h100:4"


def test_a_pending_jobs_start_is_its_plan_else_its_begin_time() -> None:
    begin = 1_800_000_000_000
    assert squeue.value("S", _job(1, begin=begin), 0) == instant(begin)
    assert squeue.value("S", _job(2, begin=begin, expected_start=begin + 60_000), 0) == (
        instant(begin + 60_000)
    )
    assert squeue.value("S", _job(3), 0) == "N/A"


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
        "gpus_per_task": 2,
        "ntasks_per_node": 2,
        "gpu_model": "h100",
        "array_throttle": 2 if extra.get("array_job_id") else None,
        "begin": 4_000_000 if state == "PENDING" else None,
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


def test_the_document_reads_only_the_fields_fetched() -> None:
    from phalanx.slurm import openapi

    now = 10_000_000
    running_job = _full(
        1, "RUNNING", exclusive=True, gpus=4.0, gpu_model=None, nodelist="gpu[001-002]"
    )
    jobs = [running_job, _full(2, "PENDING", dependency="afterok:1")]
    rest = {"cpus_per_task": 1, "exit_code": 0, "features": [], "output": None, "error": None}
    rest |= {"requeue": True, "restarts": 0, "tasks": 2, "exclusive": False, "dependency": ""}
    for job in jobs:
        for key, value in rest.items():
            job.setdefault(key, value)
    opts = squeue._parse(["--json"])
    fields = squeue.wire_fields(opts, [])
    sent = [{k: j[k] for k in fields} for j in jobs]
    nodes = {"gpu001": {"name": "gpu001", "gpus": 2, "gpu_model": "h100", "cpus": 4}}
    assert openapi.document(sent, nodes, now) == openapi.document(jobs, nodes, now)
    [running, pending] = openapi.document(jobs, nodes, now)["jobs"]
    assert running["gres_detail"] == ["gpu:h100:2(IDX:0-1)", "gpu:2(IDX:N/A)"]
    assert list(running["job_resources"]["allocated_nodes"][0]["sockets"]["0"]["cores"]) == [
        "0",
        "1",
        "2",
        "3",
    ]
    assert (pending["dependency"], pending["job_resources"]) == ("afterok:1", {})


def test_squeue_as_a_process_lists_1000_pending_jobs(scene: Scene, tmp_path: Path) -> None:
    # How long it takes, against Slurm's, is measured by bench/slurm_commands.py.
    cluster = scene[0]
    tmp_path.chmod(0o755)
    pending_jobs(cluster, 1000, tmp_path)
    env = {"PHALANX_STATE_DIR": str(cluster.state_dir), "PATH": "/usr/bin:/bin"}
    argv = [sys.executable, "-m", "phalanx.slurm.squeue"]
    done = subprocess.run(argv, env=env, capture_output=True, text=True, check=True)
    assert len(done.stdout.splitlines()) > 1000


def test_iterate_lists_again_under_the_time_until_interrupted(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    listed: list[float | None] = []
    monkeypatch.setattr(squeue, "_once", lambda opts: listed.append(opts.iterate) or 0)

    def sleep(seconds: float) -> None:
        assert seconds == 5.0
        if len(listed) == 2:
            raise KeyboardInterrupt

    monkeypatch.setattr(squeue.time, "sleep", sleep)
    assert squeue.main(["-i", "5"]) == 0
    assert listed == [5.0, 5.0]
    assert len(capsys.readouterr().out.splitlines()) == 2  # the time, before each listing
    assert squeue.main(["--iterate=0"]) == 1
