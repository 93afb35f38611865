"""The option parser (getopt_long's rules) and the request the options ask for."""

from __future__ import annotations

import os

import pytest

from phalanx.slurm.commandline import CommandLineError, Options, parse_args
from phalanx.slurm.jobtable import SBATCH
from phalanx.slurm.options import option_environment, parse_gres, to_request, valid_time


def parsed(*argv: str) -> dict[str, str]:
    options, rest = parse_args(argv, SBATCH)
    assert rest == []
    return options.values


@pytest.mark.parametrize(
    "argv",
    [
        ["--time=30"],
        ["--time", "30"],
        ["-t", "30"],
        ["-t30"],
    ],
)
def test_every_form_of_a_value(argv: list[str]) -> None:
    assert parsed(*argv) == {"time": "30"}


def test_an_unambiguous_prefix_names_its_option() -> None:
    assert parsed("--parti=gpu", "--job", "x") == {"partition": "gpu", "job-name": "x"}


def test_flags_bundle_and_the_last_value_wins() -> None:
    options, rest = parse_args(["-vvH", "-J", "a", "--job-name=b", "--parsable"], SBATCH)
    assert (options.values, options.verbose, rest) == (
        {"hold": "", "job-name": "b", "parsable": ""},
        2,
        [],
    )


def test_options_end_at_the_script_and_at_double_dash() -> None:
    assert parse_args(["-N2", "job.sh", "-N", "3"], SBATCH)[1] == ["job.sh", "-N", "3"]
    assert parse_args(["--", "-x"], SBATCH)[1] == ["-x"]


def test_aliases_and_optional_values() -> None:
    assert parsed("--tasks-per-node=2", "--exclusive", "--nice") == {
        "ntasks-per-node": "2",
        "exclusive": "",
        "nice": "",
    }
    assert parsed("--requeue", "--no-requeue") == {"requeue": "no"}


@pytest.mark.parametrize(
    ("argv", "lines"),
    [
        (["--foo"], ["sbatch: unrecognized option '--foo'"]),
        (["--foo=1"], ["sbatch: unrecognized option '--foo'"]),
        (["-y"], ["sbatch: invalid option -- 'y'"]),
        (["--time"], ["sbatch: option '--time' requires an argument"]),
        (["-t"], ["sbatch: option requires an argument -- 't'"]),
        (["--hold=1"], ["sbatch: option '--hold' doesn't allow an argument"]),
        (["--mem-per"], ["sbatch: option '--mem-per' is ambiguous"]),
        (["--tim=1"], ["sbatch: option '--tim=1' is ambiguous"]),
    ],
)
def test_getopt_errors(argv: list[str], lines: list[str]) -> None:
    with pytest.raises(CommandLineError) as caught:
        parse_args(argv, SBATCH)
    assert caught.value.lines == [*lines, 'Try "sbatch --help" for more information']
    assert caught.value.status == 255


@pytest.mark.parametrize(
    "text", ["30", "5:00", "1:00:00", "2-12", "2-12:30", "2-12:30:15", "UNLIMITED", "infinite"]
)
def test_valid_times(text: str) -> None:
    assert valid_time(text)


@pytest.mark.parametrize("text", ["abc", "1:99:99:99", "1:60", "1:00:60", "2-24", "", "1-"])
def test_invalid_times(text: str) -> None:
    assert not valid_time(text)


def test_gres() -> None:
    assert parse_gres("gpu:2", "sbatch") == (2, None, None)
    assert parse_gres("gpu:h100:4", "sbatch") == (4, "h100", None)
    assert parse_gres("gpu", "sbatch") == (1, None, None)
    assert parse_gres("gpu:x", "sbatch") == (1, "x", None)
    assert parse_gres("shard:3", "sbatch") == (0, None, "shard:3")
    with pytest.raises(CommandLineError):
        parse_gres("fpga:1", "sbatch")


def request(*argv: str, environ: dict[str, str] | None = None) -> dict[str, object]:
    options, _ = parse_args(argv, SBATCH)
    body = to_request(options, SBATCH, environ or {"HOME": "/h"}, "/submit").body
    body.pop("environment")
    return body


BASE = {"ntasks_per_node": 1, "cpus_per_task": 1, "open_mode": "truncate", "workdir": "/submit"}


@pytest.mark.parametrize(
    ("argv", "fields"),
    [
        ([], {}),
        (["-n", "4", "-c", "2"], {"ntasks_per_node": 4, "cpus_per_task": 2}),
        (
            ["-N", "2", "-n", "4", "--gpus-per-task=1"],
            {"nodes": "2", "ntasks_per_node": 2, "gpus_per_task": 1},
        ),
        (
            ["--gres=gpu:h100:4", "--mem=64G"],
            {"gpus_per_task": 4, "gpu_model": "h100", "mem": "65536M"},
        ),
        (["-N2", "-G", "16"], {"nodes": "2", "gpus_per_task": 8}),
        (
            ["--gpus-per-node=a100:2", "--cpus-per-gpu=4"],
            {"gpus_per_task": 2, "gpu_model": "a100", "cpus_per_task": 8},
        ),
        (["-c", "4", "--mem-per-cpu=1G"], {"cpus_per_task": 4, "mem": "4096M"}),
        (
            ["-N2", "--ntasks-per-node=2", "-c", "2", "--mem-per-cpu=1G"],
            {"nodes": "2", "ntasks_per_node": 2, "cpus_per_task": 2, "mem": "4096M"},
        ),
        (
            ["--ntasks-per-node=2", "--gres=gpu:8"],
            {"ntasks_per_node": 2, "gpus_per_task": 4},
        ),
        (["-N2", "-n", "4", "-G", "8"], {"nodes": "2", "ntasks_per_node": 2, "gpus_per_task": 2}),
        (["--gres=gpu:2", "--mem-per-gpu=10G"], {"gpus_per_task": 2, "mem": "20480M"}),
        (["--nodes=1-3"], {"nodes": "1-3"}),
        (["--nodes=-1"], {}),
        (
            [
                "-J",
                "x",
                "-p",
                "gpu",
                "-A",
                "acct",
                "-q",
                "high",
                "-t",
                "1:00:00",
                "-a",
                "0-3%2",
                "-d",
                "afterok:1",
                "--signal=B:USR1@60",
                "--comment=c",
                "-o",
                "o",
                "-e",
                "e",
            ],
            {
                "name": "x",
                "partition": "gpu",
                "account": "acct",
                "qos": "high",
                "time": "1:00:00",
                "array": "0-3%2",
                "dependency": "afterok:1",
                "signal": "B:USR1@60",
                "comment": "c",
                "output": "o",
                "error": "e",
            },
        ),
        (
            ["--open-mode=append", "--no-requeue", "--exclusive", "-H", "-C", "a&b"],
            {
                "open_mode": "append",
                "requeue": False,
                "exclusive": True,
                "hold": True,
                "constraint": ["a", "b"],
            },
        ),
        (["-N", "2-4", "--elastic"], {"nodes": "2-4", "elastic": True}),
        (
            ["--switches=2@1:00", "--nice=5", "-D", "sub"],
            {"switches": 2, "switches_wait": "1:00", "nice": 5, "workdir": "/submit/sub"},
        ),
    ],
)
def test_the_request_options_ask_for(argv: list[str], fields: dict[str, object]) -> None:
    assert request(*argv) == {**BASE, **fields}


@pytest.mark.parametrize(
    ("argv", "line", "status"),
    [
        (["--mem=lots"], "sbatch: error: Invalid --mem specification", 255),
        (["--time=abc"], "sbatch: error: Invalid --time specification", 255),
        (
            ["--nodes=4-2"],
            "sbatch: error: Maximum node count 2 is less than minimum node count 4",
            255,
        ),
        (["-n", "0"], 'sbatch: error: Invalid numeric value "0" for --ntasks.', 1),
        (["-c", "x"], 'sbatch: error: Invalid numeric value "x" for --cpus-per-task.', 1),
        (["--open-mode=sometimes"], "sbatch: error: Invalid --open-mode argument: sometimes", 255),
        (["--gres=fpga:1"], "sbatch: error: Invalid generic resource (gres) specification", 1),
        (["--begin=whenever"], "sbatch: error: Invalid --begin specification", 255),
    ],
)
def test_values_slurm_refuses_before_submitting(argv: list[str], line: str, status: int) -> None:
    with pytest.raises(CommandLineError) as caught:
        request(*argv)
    assert (caught.value.lines, caught.value.status) == ([line], status)


def test_export() -> None:
    env = {"HOME": "/h", "A": "1", "SLURM_X": "s"}
    options, _ = parse_args([], SBATCH)
    added = option_environment(options, "sbatch")
    assert to_request(options, SBATCH, env, "/").body["environment"] == {**env, **added}
    for spec, expected in [
        ("NONE", {"SLURM_X": "s"}),
        ("A,B=2", {"SLURM_X": "s", "A": "1", "B": "2"}),
        ("ALL,B=2", {**env, "B": "2"}),
    ]:
        options, _ = parse_args([f"--export={spec}"], SBATCH)
        added = option_environment(options, "sbatch")
        assert added["SLURM_EXPORT_ENV"] == spec
        body = to_request(options, SBATCH, env, "/").body
        assert body["environment"] == {**expected, **added}


def test_the_job_inherits_the_variables_slurm_sets_from_the_options() -> None:
    options, _ = parse_args(
        ["-n", "2", "--gpus-per-task=h100:1", "--gpus-per-node=2", "--mem-per-cpu=1G"], SBATCH
    )
    env = to_request(options, SBATCH, {"SLURM_X": "s"}, "/").body["environment"]
    assert env["SLURM_GPUS_PER_TASK"] == "h100:1"
    assert env["SLURM_GPUS_PER_NODE"] == "2"
    assert env["SLURM_MEM_PER_CPU"] == "1024"
    assert env["SLURM_PRIO_PROCESS"] == str(os.getpriority(os.PRIO_PROCESS, 0))
    assert env["SLURM_SUBMIT_HOST"] == os.uname().nodename.split(".")[0]
    assert "SLURM_EXPORT_ENV" not in env and "SLURM_GPUS" not in env
    options, _ = parse_args(["--mem=4G"], SBATCH)
    env = to_request(options, SBATCH, {}, "/").body["environment"]
    assert env["SLURM_MEM_PER_NODE"] == "4096" and "SLURM_GPUS_PER_TASK" not in env


def test_unsupported_options_are_kept() -> None:
    options, _ = parse_args(["-w", "n1", "-x", "n2", "--wckey=k", "--mail-type=END"], SBATCH)
    assert to_request(options, SBATCH, {}, "/").unsupported == {
        "nodelist": "n1",
        "exclude": "n2",
        "wckey": "k",
        "mail-type": "END",
    }


def test_later_options_override_earlier_ones() -> None:
    early = Options()
    parse_args(["-J", "script", "-t", "5", "--no-requeue"], SBATCH, early)
    late, _ = parse_args(["-J", "cli", "--requeue"], SBATCH)
    early.update(late)
    assert early.values == {"time": "5", "job-name": "cli", "requeue": ""}
