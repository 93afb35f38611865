"""``phalanx simulate`` end to end, in-process through ``main`` (one test through a subprocess)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from phalanx.cli.main import main

TRACES = (Path(__file__).parents[2] / ".." / "shared" / "traces").resolve()
PHILLY = TRACES / "philly" / "philly.csv"
needs_philly = pytest.mark.skipif(
    not PHILLY.exists(), reason=f"shared Philly trace not present at {PHILLY}"
)

REQUIRED_KEYS = {
    "jobs",
    "eta_sched",
    "theta_overhead",
    "utilization",
    "jct_mean_s",
    "jct_p95_s",
    "wait_mean_s",
    "wait_p95_s",
    "makespan_s",
    "gang_wait_gpu_hours",
    "lost_gpu_hours",
    "preemptions",
    "deadlocks",
    "fairness_jain",
    "sim_wall_s",
    "jobs_per_s",
}
PNG = b"\x89PNG\r\n\x1a\n"


def write(path: Path, text: str) -> str:
    path.write_text(text, encoding="utf-8")
    return str(path)


def error_line(capsys: pytest.CaptureFixture[str]) -> str:
    err = capsys.readouterr().err
    assert "Traceback" not in err
    lines = err.strip().splitlines()
    assert lines, "an error message on stderr"
    return lines[-1]


@needs_philly
def test_philly_slice_table_json_markdown(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    report, table = tmp_path / "run.json", tmp_path / "table.md"
    status = main(
        [
            "simulate",
            "--trace",
            str(PHILLY),
            "--limit",
            "300",
            "--nodes",
            "32",
            "--policy",
            "fifo",
            "--policy",
            "volcano",
            "--json",
            str(report),
            "--per-account",
            "--markdown",
            str(table),
        ]
    )
    captured = capsys.readouterr()
    assert status == 0, captured.err
    assert "fifo" in captured.out and "volcano" in captured.out
    assert "philly.csv: 300 jobs on 32 nodes x 8 GPUs" in captured.out
    assert "load 1" in captured.out
    # Off a terminal, one line per policy on stderr.
    assert "policy fifo: 300 jobs in" in captured.err
    assert "policy volcano: 300 jobs in" in captured.err

    doc = json.loads(report.read_text(encoding="utf-8"))
    assert list(doc["policies"]) == ["fifo", "volcano"]
    for figures in doc["policies"].values():
        assert figures.keys() >= REQUIRED_KEYS
        assert figures["jobs"] == 300
    assert doc["trace"] == str(PHILLY)
    assert doc["cluster"]["nodes"] == 32 and doc["cluster"]["gpus"] == 256
    assert doc["cluster"]["nodes_per_switch"] == 8
    assert doc["load"] == 1.0 and doc["seed"] == 0 and doc["limit"] == 300
    assert set(doc["accounts"]) == {"fifo", "volcano"}
    fifo_accounts = doc["accounts"]["fifo"]
    assert sum(figures["jobs"] for figures in fifo_accounts.values()) == 300
    assert next(iter(fifo_accounts.values())).keys() >= REQUIRED_KEYS

    markdown = table.read_text(encoding="utf-8")
    assert markdown.startswith("| policy |") and "| fifo |" in markdown


def test_generate_with_plots(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "plots"
    status = main(
        [
            "simulate",
            "--generate",
            "0.2",
            "--nodes",
            "4",
            "--policy",
            "fifo",
            "--policy",
            "slurm",
            "--out",
            str(out),
        ]
    )
    captured = capsys.readouterr()
    assert status == 0, captured.err
    assert "generated (0.2 days, seed 0)" in captured.out
    pngs = sorted(p.name for p in out.glob("*.png"))
    assert pngs == ["gantt_fifo.png", "gantt_slurm.png", "utilization.png", "wait_cdf.png"]
    for name in pngs:
        assert (out / name).read_bytes().startswith(PNG)
        assert str(out / name) in captured.out


def test_job_bigger_than_cluster_is_rejected_others_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    trace = write(
        tmp_path / "jobs.csv",
        "name,submit,runtime,gpus\nsmall,0,60,1\nhuge,10,60,128\nfull,20,60,8\n",
    )
    report = tmp_path / "run.json"
    status = main(
        [
            "simulate",
            "--trace",
            trace,
            "--nodes",
            "2",
            "--gpus-per-node",
            "8",
            "--policy",
            "fifo",
            "--policy",
            "k8s-default",
            "--json",
            str(report),
        ]
    )
    captured = capsys.readouterr()
    assert status == 0, captured.err
    for figures in json.loads(report.read_text(encoding="utf-8"))["policies"].values():
        assert figures["jobs"] == 3
        assert figures["rejected"] == 1
        assert figures["unfinished"] == 0
    assert "policy fifo: 1 job rejected (could never fit this cluster)" in captured.out
    assert "2 (huge, line 3)" in captured.out


def test_openb_trace_defaults_to_the_node_list_next_to_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write(
        tmp_path / "openb_node_list_gpu_node.csv",
        "sn,cpu_milli,memory_mib,gpu,model\nn0,64000,262144,2,P100\nn1,96000,393216,8,V100\n",
    )
    pods = write(
        tmp_path / "openb_pod_list_default.csv",
        "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,"
        "creation_time,deletion_time,scheduled_time\n"
        "p0,4000,1024,1,1000,,LS,Running,0,100,0\n"
        "p1,4000,1024,1,500,,BE,Running,5,200,5\n",
    )
    status = main(["simulate", "--trace", pods, "--policy", "fifo"])
    captured = capsys.readouterr()
    assert status == 0, captured.err
    assert "2 jobs on 2 nodes (10 GPUs)" in captured.out


def test_malformed_row_names_file_line_and_field(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    trace = write(tmp_path / "broken.csv", "submit,runtime,gpus\n0,10,1\n5,abc,1\n")
    assert main(["simulate", "--trace", trace, "--nodes", "2", "--policy", "fifo"]) == 2
    message = error_line(capsys)
    assert message.startswith("phalanx: error: ")
    assert "broken.csv:3" in message and "runtime" in message


def test_malformed_row_through_python_m_phalanx(tmp_path: Path) -> None:
    trace = write(tmp_path / "broken.csv", "submit,runtime,gpus\n0,10,1\n5,10,-4\n")
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "phalanx",
            "simulate",
            "--trace",
            trace,
            "--nodes",
            "2",
            "--policy",
            "fifo",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2
    assert "Traceback" not in done.stderr
    assert done.stderr.startswith("phalanx: error: ")
    assert "broken.csv:3" in done.stderr and "gpus" in done.stderr


def test_unknown_policy_lists_the_valid_ones(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    trace = write(tmp_path / "jobs.csv", "submit,runtime,gpus\n0,10,1\n")
    assert main(["simulate", "--trace", trace, "--nodes", "2", "--policy", "slurmish"]) == 2
    message = error_line(capsys)
    assert "slurmish" in message
    for name in ("fifo", "slurm", "k8s-default", "kueue", "volcano", "tiresias", "phalanx"):
        assert name in message


def test_unknown_trace_format(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    trace = write(tmp_path / "jobs.csv", "submit,runtime,gpus\n0,10,1\n")
    assert main(["simulate", "--trace", trace, "--nodes", "2", "--trace-format", "gwf"]) == 2
    assert "--trace-format" in error_line(capsys)


def test_trace_format_that_cannot_be_guessed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    trace = write(tmp_path / "jobs.txt", "submit,runtime,gpus\n0,10,1\n")
    assert main(["simulate", "--trace", trace, "--nodes", "2"]) == 2
    message = error_line(capsys)
    assert message.startswith("phalanx: error: ") and "jobs.txt" in message


def test_bad_cluster_yaml_names_the_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    trace = write(tmp_path / "jobs.csv", "submit,runtime,gpus\n0,10,1\n")
    cluster = write(
        tmp_path / "cluster.yaml",
        "nodes:\n  - names: gpu[1-2]\n    gpus: -8\n    gpu_model: H100\n"
        "    cpus: 8\n    memory: 64G\n",
    )
    assert main(["simulate", "--trace", trace, "--cluster", cluster]) == 2
    message = error_line(capsys)
    assert message.startswith("phalanx: error: ")
    assert "cluster.yaml:3" in message and "gpus" in message


def test_missing_files_are_one_line_errors(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = str(tmp_path / "nowhere.csv")
    assert main(["simulate", "--trace", missing, "--nodes", "2"]) == 2
    assert "nowhere.csv" in error_line(capsys)
    trace = write(tmp_path / "jobs.csv", "submit,runtime,gpus\n0,10,1\n")
    assert main(["simulate", "--trace", trace, "--cluster", str(tmp_path / "c.yaml")]) == 2
    assert "c.yaml" in error_line(capsys)


@pytest.mark.parametrize(
    "extra",
    [
        ["--nodes", "2", "--cluster", "c.yaml"],  # mutually exclusive
        ["--nodes", "2", "--generate", "1"],  # --trace and --generate together
        ["--nodes", "2", "--mtbf", "10"],  # --mtbf without --repair
        ["--nodes", "2", "--window", "5"],  # not START:END
        ["--nodes", "2", "--load", "0"],
        ["--nodes", "2", "--checkpoint-save", "-1"],
        ["--nodes", "2", "--checkpoint-restore", "soon"],
        ["--nodes", "0"],
        [],  # no cluster for a non-openb trace
    ],
)
def test_bad_arguments_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], extra: list[str]
) -> None:
    trace = write(tmp_path / "jobs.csv", "submit,runtime,gpus\n0,10,1\n")
    assert main(["simulate", "--trace", trace, "--policy", "fifo", *extra]) == 2
    error_line(capsys)


def test_checkpoint_save_and_restore_reach_the_run_and_the_json(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # An 8-GPU job runs; a new one arrives after 2 h and tiresias suspends the first.
    trace = write(tmp_path / "jobs.csv", "submit,runtime,gpus\n0,36000,8\n7200,600,8\n")
    figures = {}
    for save in (0, 40):
        report = tmp_path / f"run{save}.json"
        argv = ["simulate", "--trace", trace, "--nodes", "1", "--policy", "tiresias"]
        argv += ["--checkpoint-save", str(save), "--checkpoint-restore", "20"]
        assert main([*argv, "--json", str(report)]) == 0, capsys.readouterr().err
        doc = json.loads(report.read_text(encoding="utf-8"))
        assert (doc["checkpoint_save_s"], doc["checkpoint_restore_s"]) == (save, 20)
        figures[save] = doc["policies"]["tiresias"]
    assert figures[0]["preemptions"] == figures[40]["preemptions"] == 1
    assert figures[0]["lost_gpu_hours"] == figures[40]["lost_gpu_hours"] == 0
    evict = figures[40]["evict_gpu_hours"] - figures[0]["evict_gpu_hours"]
    assert evict == pytest.approx(8 * 40 / 3600)


def test_neither_trace_nor_generate(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["simulate", "--nodes", "2"]) == 2
    assert "--trace" in error_line(capsys)


def test_elastic_share_grows_jobs_and_bad_shares_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``--elastic 1``: every job that can be is elastic; on a cluster with room to spare they
    grow and their mean JCT drops against the same run without."""
    jct = []
    for share in ("0", "1"):
        out = tmp_path / f"e{share}.json"
        argv = ["simulate", "--generate", "0.2", "--limit", "30", "--nodes", "16"]
        assert main([*argv, "--policy", "phalanx", "--elastic", share, "--json", str(out)]) == 0
        jct.append(json.loads(out.read_text())["policies"]["phalanx"]["jct_mean_s"])
    assert jct[1] < jct[0]
    capsys.readouterr()
    assert main(["simulate", "--generate", "0.1", "--nodes", "4", "--elastic", "1.5"]) == 2
    err = capsys.readouterr().err
    assert "--elastic" in err and "\n" not in err.strip()


def test_jobs_no_queue_admits_end_the_replay_and_are_reported(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    queues = tmp_path / "queues.yaml"
    queues.write_text(
        "apiVersion: kueue.x-k8s.io/v1beta1\nkind: ResourceFlavor\nmetadata: {name: gpu}\n---\n"
        "apiVersion: kueue.x-k8s.io/v1beta1\nkind: ClusterQueue\nmetadata: {name: lab}\n"
        "spec:\n  namespaceSelector: {}\n  resourceGroups:\n"
        "  - coveredResources: [nvidia.com/gpu]\n    flavors:\n    - name: gpu\n"
        "      resources:\n      - {name: nvidia.com/gpu, nominalQuota: 32}\n"
    )
    argv = ["simulate", "--generate", "0.1", "--limit", "5", "--nodes", "4"]
    assert main([*argv, "--policy", "phalanx", "--queues", str(queues)]) == 0
    assert "policy phalanx: 5 jobs never finished" in capsys.readouterr().out
