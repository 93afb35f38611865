"""The simulation report page: a ``phalanx simulate --json`` result, uploaded or named by an
administrator, compared policy by policy; bad documents named by source, line and field."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from ui_scene import ROOT, USER, Ui

from phalanx.api.ui.simreport import read_report
from phalanx.errors import InputError

DOC = {
    "policies": {
        "slurm": {
            "eta_sched": 0.95,
            "theta_overhead": 0.02,
            "jct_mean_s": 1200.0,
            "wait_by_size": {"1": {"jobs": 10, "mean_s": 5.0, "p95_s": 9.0}},
        },
        "k8s-default": {
            "eta_sched": 0.55,
            "theta_overhead": 0.25,
            "jct_mean_s": 3400.0,
            "wait_by_size": {"1": {"jobs": 10, "mean_s": 50.0, "p95_s": 90.0}},
        },
    },
    "trace": "philly.csv",
    "load": 1.0,
    "seed": 0,
    "cluster": {"name": "c", "nodes": 4, "gpus": 32},
}


def test_a_report_compares_policies_with_the_best_marked() -> None:
    report = read_report(json.dumps(DOC))
    assert list(report.policies) == ["slurm", "k8s-default"]
    assert report.facts["trace"] == "philly.csv" and "nodes 4" in report.facts["cluster"]
    charts = dict(report.charts())
    eta = str(charts["eta_sched (scheduling efficiency)"])
    # bars as percent; the higher eta is best, the lower theta is best
    assert "95%" in eta and "55%" in eta
    best = re.findall(r'<text[^>]*>([^<]+)</text><rect class="bar best"', eta)
    assert best == ["slurm"]
    theta = str(charts["theta_overhead (GPU time lost to overheads)"])
    assert re.findall(r'<text[^>]*>([^<]+)</text><rect class="bar best"', theta) == ["slurm"]
    assert report.figures() == ["eta_sched", "jct_mean_s", "theta_overhead"]
    assert report.sizes() == ["1"]


def test_the_projects_own_results_file_reads() -> None:
    path = Path(__file__).parents[3] / "docs" / "results" / "philly-1024.json"
    report = read_report(path.read_text(), source=str(path))
    assert {"slurm", "phalanx", "k8s-default"} <= set(report.policies)
    assert len(report.charts()) >= 8


def test_a_report_with_the_nested_figures_simulate_writes_reads() -> None:
    # `phalanx simulate --json` writes JCT by size class for every policy and, with --queues,
    # figures per queue: a report holding them is read, and they are not charted as numbers.
    doc = json.loads(json.dumps(DOC))
    doc["policies"]["slurm"]["jct_by_size"] = {"1": 1100.0, "2-4": 0.0}
    doc["policies"]["slurm"]["queues"] = {"team-a": {"jct_mean_s": 1000.0, "reclaims": 2}}
    doc["policies"]["slurm"]["wait_by_size"] = {
        size: {"jobs": 1, "mean_s": 1.0} for size in sorted(["1", "2-4", "5-8", "9-64", "65+"])
    }
    report = read_report(json.dumps(doc))
    assert report.figures() == ["eta_sched", "jct_mean_s", "theta_overhead"]
    assert report.sizes() == ["1", "2-4", "5-8", "9-64", "65+"]
    with pytest.raises(InputError, match=r"policies\.slurm\.jct_by_size"):
        doc["policies"]["slurm"]["jct_by_size"] = 3
        read_report(json.dumps(doc))


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('{"policies": {\n  "a": 1,\n', "upload:3"),
        ("[1, 2]", "expected a JSON object"),
        ('{"trace": "x"}', "field 'policies'"),
        ('{"policies": {"a": [1]}}', "field 'policies.a'"),
        ('{"policies": {"a": {"eta_sched": [1]}}}', "field 'policies.a.eta_sched'"),
        ('{"policies": {"a": {"wait_by_size": 3}}}', "field 'policies.a.wait_by_size'"),
        ('{"policies": {"a": {"eta_sched": NaN}}}', "field 'policies.a.eta_sched'"),
    ],
)
def test_bad_documents_name_where_they_are_wrong(text: str, message: str) -> None:
    with pytest.raises(InputError) as err:
        read_report(text)
    assert message in str(err.value)


def test_an_uploaded_report_is_rendered_and_a_bad_one_is_a_422(ui: Ui) -> None:
    client, csrf = ui.browser("t-user")
    hdr = {"X-CSRF-Token": csrf, "X-File-Name": "mine.json"}
    ok = client.post("/ui/sim", content=json.dumps(DOC), headers=hdr)
    assert ok.status_code == 200, ok.text
    assert "mine.json" in ok.text and "k8s-default" in ok.text and "<svg" in ok.text
    bad = client.post("/ui/sim", content="{oops", headers=hdr)
    assert bad.status_code == 422 and "mine.json:1" in bad.text
    forged = client.post("/ui/sim", content=json.dumps(DOC))  # no CSRF token
    assert forged.status_code == 403


def test_only_administrators_load_a_file_on_the_controllers_host(ui: Ui, tmp_path: Path) -> None:
    path = tmp_path / "r.json"
    path.write_text(json.dumps(DOC))
    client = ui.client()
    r = client.get("/ui/sim", params={"path": str(path)}, headers=ROOT)
    assert r.status_code == 200 and "philly.csv" in r.text
    assert client.get("/ui/sim", params={"path": str(path)}, headers=USER).status_code == 403
    missing = client.get("/ui/sim", params={"path": str(tmp_path / "no.json")}, headers=ROOT)
    assert missing.status_code == 422 and "cannot read it" in missing.text
    relative = client.get("/ui/sim", params={"path": "r.json"}, headers=ROOT)
    assert relative.status_code == 422 and "absolute" in relative.text
