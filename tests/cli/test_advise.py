"""``phalanx advise`` end to end, in-process through ``main``."""

from __future__ import annotations

import base64
import json
import re
from html.parser import HTMLParser
from pathlib import Path

import pytest

from phalanx.cli.main import main
from phalanx.testing.mixes import TINY_MIX_YAML

TRACES = (Path(__file__).parents[2] / ".." / "shared" / "traces").resolve()
PHILLY = TRACES / "philly" / "philly.csv"
CLUSTER = ["--nodes", "8", "--gpus-per-node", "8", "--nodes-per-switch", "4"]
SETUP_KEYS = {
    "eta_sched",
    "theta_overhead",
    "utilization",
    "jct_mean_s",
    "wait_by_size",
    "jct_by_size",
    "slo_attainment",
    "productive_gpu_hours",
    "cost_per_productive_gpu_hour",
    "by_load",
    "spread",
}


@pytest.fixture
def mix_file(tmp_path: Path) -> str:
    path = tmp_path / "tiny.yaml"
    path.write_text(TINY_MIX_YAML)
    return str(path)


def _advise(tmp_path: Path, mix: str, *extra: str) -> tuple[int, dict[str, object]]:
    out = tmp_path / "advice.json"
    rc = main(["advise", "--mix", mix, *CLUSTER, "--seeds", "2", "--json", str(out), *extra])
    return rc, json.loads(out.read_text()) if out.exists() else {}


def test_json_has_every_setup_and_a_recommendation_with_its_numbers(
    tmp_path: Path, mix_file: str, capsys: pytest.CaptureFixture[str]
) -> None:
    rc, doc = _advise(tmp_path, mix_file, "--loads", "1,1.5", "--cost-per-gpu-hour", "2.5")
    assert rc == 0
    setups = doc["setups"]
    assert isinstance(setups, dict)
    assert set(setups) == {"slurm", "k8s", "kueue", "volcano", "split", "phalanx"}
    for figures in setups.values():
        assert set(figures) >= SETUP_KEYS
        assert set(figures["by_load"]) == {"1", "1.5"}
        assert 0 < figures["slo_attainment"] <= 1
        assert figures["cost_per_productive_gpu_hour"] > 0
        assert set(figures["wait_by_size"]) == {"1", "2-4", "5-8", "9-64", "65+"}
        assert set(figures["jct_by_size"]) == set(figures["wait_by_size"])
        assert figures["jct_by_size"]["9-64"] > 0  # the tiny mix's 2-4 node gangs finish
    rec = doc["recommendation"]
    assert isinstance(rec, dict) and rec["setup"] in setups
    best = setups[rec["setup"]]
    # The reasons quote the winner's own figures, as the JSON has them.
    text = " ".join(rec["reasons"])
    assert f"{best['cost_per_productive_gpu_hour']:,.3f} per productive GPU-hour" in text
    assert f"eta_sched {100 * best['eta_sched']:.1f} %" in text
    for name in setups:
        if name != rec["setup"]:
            assert any(r.startswith(f"{name}: ") for r in rec["reasons"])
    assert len(doc["runs"]) == 6 * 2 * 2
    assert doc["mfu"] == {"pretrain": 0.5, "finetune": 0.4, "chat": 0.3}
    printed = capsys.readouterr().out
    assert f"recommendation: {rec['setup']}" in printed
    assert "serving modelled as long-running replica jobs" in printed


def test_workers_write_the_same_json_as_a_serial_run(tmp_path: Path, mix_file: str) -> None:
    args = ("--setup", "slurm", "--setup", "split", "--loads", "0.8,1.2")
    (tmp_path / "serial").mkdir()
    (tmp_path / "parallel").mkdir()
    rc1, serial = _advise(tmp_path / "serial", mix_file, *args)
    rc2, parallel = _advise(tmp_path / "parallel", mix_file, *args, "--workers", "2")
    assert rc1 == rc2 == 0
    assert json.dumps(serial, sort_keys=True) == json.dumps(parallel, sort_keys=True)


class _Sources(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.links: list[str] = []
        self.images: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        for key, value in attrs:
            if key in ("src", "href") and value is not None:
                self.links.append(value)
                if tag == "img":
                    self.images.append(value)


def test_html_report_is_self_contained(tmp_path: Path, mix_file: str) -> None:
    page = tmp_path / "advice.html"
    rc, doc = _advise(tmp_path, mix_file, "--setup", "slurm", "--setup", "k8s", "--html", str(page))
    assert rc == 0
    text = page.read_text()
    parser = _Sources()
    parser.feed(text)
    assert len(parser.images) == 3
    assert not [link for link in parser.links if re.match(r"(?i)\s*(https?:)?//", link)]
    for src in parser.images:
        prefix = "data:image/png;base64,"
        assert src.startswith(prefix)
        assert base64.b64decode(src[len(prefix) :]).startswith(b"\x89PNG\r\n\x1a\n")
    assert "<script" not in text.lower()
    assert f"Recommendation: {doc['recommendation']['setup']}" in text  # type: ignore[index]


def test_a_workload_without_serving_has_no_split(tmp_path: Path) -> None:
    rc, doc = _advise(tmp_path, "gang-heavy", "--seeds", "1", "--setup", "slurm", "--setup", "k8s")
    assert rc == 0
    assert doc["setups"]["slurm"]["slo_attainment"] is None  # type: ignore[index]
    rc = main(["advise", "--mix", "gang-heavy", *CLUSTER, "--setup", "split"])
    assert rc == 2


@pytest.mark.skipif(not PHILLY.exists(), reason=f"shared Philly trace not present at {PHILLY}")
def test_a_trace_is_advised_on_like_simulate_replays_it(tmp_path: Path) -> None:
    out = tmp_path / "a.json"
    rc = main(
        ["advise", "--trace", str(PHILLY), "--limit", "150", *CLUSTER, "--seeds", "1",
         "--json", str(out)]
    )  # fmt: skip
    assert rc == 0
    doc = json.loads(out.read_text())
    assert set(doc["setups"]) == {"slurm", "k8s", "kueue", "volcano", "phalanx"}
    assert doc["notes"] and "split not run" in doc["notes"][0]
    assert doc["workload"]["jobs"] == 150


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["--setup", "lsf"], "field '--setup': unknown setup 'lsf'"),
        (["--mfu", "chat=1.5"], "field '--mfu': must be in (0, 1]"),
        (["--mfu", "vision=0.3"], "unknown workload class 'vision'"),
        (["--loads", "1,x"], "not a number: 'x'"),
        (["--loads", "1,1"], "a load is named twice"),
        (["--seeds", "0"], "must be at least 1"),
        (["--workers", "2", "--dask", "tcp://127.0.0.1:1"], "choose --workers or --dask"),
    ],
)
def test_bad_input_exits_2_with_a_clear_message(
    mix_file: str, capsys: pytest.CaptureFixture[str], args: list[str], words: str
) -> None:
    assert main(["advise", "--mix", mix_file, *CLUSTER, *args]) == 2
    err = capsys.readouterr().err
    assert words in err
    assert "Traceback" not in err


def test_a_malformed_mix_file_names_its_line_and_field(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(TINY_MIX_YAML.replace("per_day: 60", "per_day: -3"))
    assert main(["advise", "--mix", str(path), *CLUSTER]) == 2
    err = capsys.readouterr().err
    assert f"{path}:13, field 'classes[1].per_day': must be a positive number" in err
    assert main(["advise", "--mix", str(tmp_path / "none.yaml"), *CLUSTER]) == 2
    assert "neither a file nor a built-in mix" in capsys.readouterr().err


SLURM_CONF = Path(__file__).parents[1] / "config" / "data" / "slurm-ref" / "slurm.conf"


def test_a_slurm_conf_names_the_cluster(
    tmp_path: Path, mix_file: str, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "advice.json"
    conf = ["--slurm-conf", str(SLURM_CONF)]
    rc = main(["advise", "--mix", mix_file, *conf, "--setup", "slurm", "--seeds", "1",
               "--json", str(out)])  # fmt: skip
    assert rc == 0
    # n[01-04] with Gres=gpu:h100:8 under one leaf switch (its topology.conf)
    assert json.loads(out.read_text())["cluster"] == {"gpus": 32, "leaves": 1, "nodes": 4}
    capsys.readouterr()
    assert main(["advise", "--mix", mix_file, *conf, "--gpus-per-node", "4"]) == 2
    assert "field '--gpus-per-node': the cluster file already says this" in capsys.readouterr().err
    missing = tmp_path / "slurm.conf"
    assert main(["advise", "--mix", mix_file, "--slurm-conf", str(missing)]) == 2
    err = capsys.readouterr().err
    assert f"{missing}: cannot read it" in err and "Traceback" not in err
