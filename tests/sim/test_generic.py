import json
from pathlib import Path

import pytest

from phalanx.domain.time import MINUTE, SECOND
from phalanx.errors import TraceError
from phalanx.sim.traces import FORMATS, guess_format, read_trace
from phalanx.sim.traces.generic import read_generic
from phalanx.sim.traces.options import TraceOptions

CSV = """submit,runtime,gpus,nodes,gpus_per_node,account,user,name,time_limit,partition,qos,gpu_milli,cpus,mem_mb,gpu_model,checkpoint_interval
10.5,60,16,,,team-a,ann,big,3600,gpu,high,,,,,600
0,30,12,,,,,,,,,,,,,
5,0,0,,,,,frac,,,,500,2,1024,A100|H100,
20,1,24,4,,,,,,,,,,,,
"""  # noqa: E501


def write(tmp_path: Path, name: str, text: str) -> str:
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def test_csv(tmp_path: Path) -> None:
    jobs = read_trace(write(tmp_path, "jobs.csv", CSV))
    assert [job.trace_id for job in jobs] == ["job1", "frac", "big", "job3"]
    assert [job.submit for job in jobs] == [0, 5_000, 10_500, 20_000]
    job1, frac, big, job3 = jobs
    assert (big.spec.account, big.spec.user, big.spec.partition, big.spec.qos) == (
        "team-a",
        "ann",
        "gpu",
        "high",
    )
    assert (big.spec.nodes_min, big.spec.gpus_per_node, big.spec.time_limit) == (2, 8, 3_600_000)
    assert big.spec.checkpoint_interval == 10 * MINUTE
    assert (job1.spec.account, job1.spec.user, job1.spec.qos) == ("root", "root", "normal")
    assert (job1.spec.nodes_min, job1.spec.gpus_per_node) == (2, 6)
    assert job1.spec.time_limit is not None and job1.spec.time_limit >= job1.runtime
    assert (frac.spec.gpu_milli, frac.spec.cpus_per_task, frac.spec.mem_per_node_mb) == (
        500,
        2,
        1024,
    )
    assert frac.spec.gpu_models == frozenset({"A100", "H100"}) and frac.runtime == SECOND
    assert (job3.spec.nodes_min, job3.spec.gpus_per_node) == (4, 6)


def test_jsonl_matches_csv(tmp_path: Path) -> None:
    rows = [
        {
            "submit": 10.5,
            "runtime": 60,
            "gpus": 16,
            "account": "team-a",
            "user": "ann",
            "name": "big",
            "time_limit": 3600,
            "partition": "gpu",
            "qos": "high",
            "checkpoint_interval": 600,
            "nodes": None,
        },
        {"submit": 0, "runtime": 30, "gpus": 12},
        {
            "submit": "5",
            "runtime": 0,
            "gpus": 0,
            "name": "frac",
            "gpu_milli": 500,
            "cpus": 2,
            "mem_mb": 1024,
            "gpu_model": "A100|H100",
        },
        {"submit": 20, "runtime": 1, "gpus": 24, "nodes": 4},
    ]
    text = "\n".join(json.dumps(row) for row in rows) + "\n\n"
    jsonl = read_trace(write(tmp_path, "jobs.jsonl", text))
    csv = read_trace(write(tmp_path, "jobs.csv", CSV))
    assert [(j.submit, j.spec, j.runtime) for j in jsonl] == [
        (j.submit, j.spec, j.runtime) for j in csv
    ]
    assert [j.line for j in jsonl] == [2, 3, 1, 4] and [j.line for j in csv] == [3, 4, 2, 5]
    assert [
        job.submit for job in read_generic(str(tmp_path / "jobs.jsonl"), TraceOptions(load=2.0))
    ] == [
        0,
        2_500,
        5_250,
        10_000,
    ]
    assert (
        len(read_generic(str(tmp_path / "jobs.jsonl"), TraceOptions(limit=3, window=(1, 60_000))))
        == 3
    )


@pytest.mark.parametrize(
    ("row", "field"),
    [
        ({"submit": 1, "runtime": 1}, "gpus"),
        ({"submit": 1, "runtime": 1, "gpus": -2}, "gpus"),
        ({"submit": 1, "runtime": 1, "gpus": True}, "gpus"),
        ({"submit": "x", "runtime": 1, "gpus": 1}, "submit"),
        ({"submit": 1, "runtime": -1, "gpus": 1}, "runtime"),
        ({"submit": 1, "runtime": 1, "gpus": 10, "nodes": 3}, "nodes"),
        ({"submit": 1, "runtime": 1, "gpus": 10, "gpus_per_node": 4}, "gpus_per_node"),
        ({"submit": 1, "runtime": 1, "gpus": 16, "nodes": 2, "gpus_per_node": 4}, "gpus"),
        ({"submit": 1, "runtime": 1, "gpus": 2, "gpu_milli": 500}, "gpu_milli"),
        ({"submit": 1, "runtime": 1, "gpus": 1, "time_limit": 0}, "time_limit"),
        ({"submit": 1, "runtime": 1, "gpus": 1, "mem_mb": -5}, "mem_mb"),
        (
            {"submit": 1, "runtime": 1, "gpus": 1, "checkpoint_on_signal": "maybe"},
            "checkpoint_on_signal",
        ),
        # Integers beyond a float (an OverflowError traceback) or beyond 2^53 (inexact).
        ({"submit": 1, "runtime": 1, "gpus": 10**400}, "gpus"),
        ({"submit": 1, "runtime": 10**400, "gpus": 1}, "runtime"),
        ({"submit": 1, "runtime": 1, "gpus": 1, "mem_mb": 2**53 + 2}, "mem_mb"),
        # Times past 10^12 s: a submit of 1e300 s overflowed the policies' int64 columns.
        ({"submit": 1e300, "runtime": 1, "gpus": 1}, "submit"),
        ({"submit": 1, "runtime": 1e13, "gpus": 1}, "runtime"),
        ({"submit": 1, "runtime": 1, "gpus": 1, "time_limit": 1e300}, "time_limit"),
        # A list is no name (it made an account called "['a']").
        ({"submit": 1, "runtime": 1, "gpus": 1, "account": ["a"]}, "account"),
        ({"submit": 1, "runtime": 1, "gpus": 1, "user": {"a": 1}}, "user"),
    ],
)
def test_malformed_rows_name_line_and_field(
    tmp_path: Path, row: dict[str, object], field: str
) -> None:
    good = json.dumps({"submit": 0, "runtime": 1, "gpus": 1})
    path = write(tmp_path, "bad.jsonl", f"{good}\n\n{json.dumps(row)}\n")
    with pytest.raises(TraceError) as info:
        read_trace(path)
    assert (info.value.line, info.value.field) == (3, field)


def test_checkpoint_on_signal_is_a_yes_no_field(tmp_path: Path) -> None:
    rows = [
        {"submit": 0, "runtime": 1, "gpus": 1, "checkpoint_on_signal": True},
        {"submit": 1, "runtime": 1, "gpus": 1, "checkpoint_on_signal": "No"},
        {"submit": 2, "runtime": 1, "gpus": 1, "checkpoint_on_signal": "1"},
        {"submit": 3, "runtime": 1, "gpus": 1},
    ]
    text = "\n".join(json.dumps(row) for row in rows) + "\n"
    jobs = read_trace(write(tmp_path, "jobs.jsonl", text))
    assert [job.spec.checkpoint_on_signal for job in jobs] == [True, False, True, False]


def test_bad_json_and_missing_csv_column(tmp_path: Path) -> None:
    with pytest.raises(TraceError) as info:
        read_trace(write(tmp_path, "bad.jsonl", '{"submit": 0,\n'))
    assert info.value.line == 1 and "invalid JSON" in info.value.message
    with pytest.raises(TraceError) as info:
        read_trace(write(tmp_path, "bad2.jsonl", "[1, 2]\n"))
    assert info.value.line == 1
    with pytest.raises(TraceError) as info:
        read_trace(write(tmp_path, "bad.csv", "submit,runtime\n1,2\n"))
    assert (info.value.line, info.value.field) == (1, "gpus")


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("[" * 100_000 + "]" * 100_000, "nested too deeply"),  # was a RecursionError
        ('{"submit": 0, "runtime": 1, "gpus": 1' + "0" * 5_000 + "}", "4,300 digits"),
    ],
)
def test_json_that_python_cannot_parse_is_a_trace_error(
    tmp_path: Path, line: str, message: str
) -> None:
    with pytest.raises(TraceError, match=message) as info:
        read_trace(
            write(tmp_path, "bad.jsonl", f'{{"submit": 0, "runtime": 1, "gpus": 1}}\n{line}\n')
        )
    assert info.value.line == 2


def test_a_csv_with_a_byte_order_mark_reads_its_first_column(tmp_path: Path) -> None:
    path = tmp_path / "excel.csv"
    path.write_bytes("submit,runtime,gpus\n0,10,1\n".encode("utf-8-sig"))
    assert [job.runtime for job in read_trace(str(path))] == [10 * SECOND]


def test_a_column_named_twice_is_refused(tmp_path: Path) -> None:
    with pytest.raises(TraceError, match="column given twice") as info:
        read_trace(write(tmp_path, "dup.csv", "submit,runtime,gpus,gpus\n0,10,1,2\n"))
    assert (info.value.line, info.value.field) == (1, "gpus")


def test_format_dispatch(tmp_path: Path) -> None:
    path = write(tmp_path, "jobs.txt", CSV)
    assert len(read_trace(path, "csv")) == 4
    with pytest.raises(TraceError, match="cannot tell the trace format"):
        guess_format(path)
    with pytest.raises(TraceError) as info:
        read_trace(path, "parquet")
    assert "'parquet'" in info.value.message
    assert all(fmt in info.value.message for fmt in FORMATS)
    assert guess_format("x.swf.gz") == "swf" and guess_format("x.ndjson") == "jsonl"
    with pytest.raises(TraceError, match="no such trace file"):
        read_trace(str(tmp_path / "missing.csv"))
