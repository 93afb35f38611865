"""What the dashboard's pages show, read from a real controller: the cluster map by topology,
the queue with its filters and reasons, accounts and quotas, efficiency, a job's page."""

from __future__ import annotations

import dataclasses
import os
import re
from pathlib import Path
from typing import Any

from ui_scene import ROOT, USER, Ui, scene

from phalanx.config.clusterspec import regular_cluster
from phalanx.domain.quantity import GPU
from phalanx.domain.queues import (
    ClusterQueue,
    FlavorQuotas,
    LabelSelector,
    LocalQueue,
    Queues,
    ResourceFlavor,
    ResourceGroup,
    ResourceQuota,
)


def _text(html: str) -> str:
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html))


def test_every_page_loads_for_a_user_and_an_administrator(ui: Ui) -> None:
    job = ui.submit(gpus_per_task=2)
    client = ui.client()
    for headers in (USER, ROOT):
        for path in (
            "/ui",
            "/ui/queue",
            "/ui/accounts",
            "/ui/fragments/accounts",
            "/ui/efficiency",
            f"/ui/jobs/{job}",
            "/ui/serving",
            "/ui/sim",
        ):
            r = client.get(path, headers=headers)
            assert r.status_code == 200, (path, r.text)
    assert client.get("/ui/jobs/999", headers=USER).status_code == 404
    framed = client.get("/ui/queue", headers=ROOT).headers
    assert framed["x-frame-options"] == "DENY"  # no other site frames the buttons
    assert "frame-ancestors 'none'" in framed["content-security-policy"]


def test_the_assets_are_served_here_and_no_page_loads_anything_from_elsewhere(ui: Ui) -> None:
    client = ui.client()
    for name in ("htmx.min.js", "sse.min.js", "ui.css", "ui.js"):
        r = client.get(f"/ui/static/{name}")
        assert r.status_code == 200 and len(r.content) > 500, name
    assert client.get("/ui/static/htmx.min.js").text.startswith("/*! htmx 2.")
    for path in ("/ui", "/ui/queue", "/ui/sim"):
        html = client.get(path, headers=USER).text
        assert not re.search(r'(src|href)="(https?:)?//', html), path


def test_the_map_follows_the_topology_and_colours_gpus_by_job() -> None:
    base = regular_cluster(4, 4, 2, leaves_per_spine=1)
    nodes = tuple(dataclasses.replace(n, block=n.index // 2) for n in base.nodes)
    with scene(dataclasses.replace(base, nodes=nodes)) as ui:
        job = ui.submit(gpus_per_task=3)
        page = ui.client().get("/ui", headers=USER).text
    text = _text(page)
    assert "spine1" in text and "spine2" in text and "leaf01" in text and "leaf02" in text
    assert "NVLink nvl0" in text and "NVLink nvl1" in text
    # three GPUs of one node carry the job's id and colour; the rest are free
    held = re.findall(rf'href="/ui/jobs/{job}" style="background: ([^"]+)"', page)
    assert len(held) == 3 and len(set(held)) == 1
    assert page[page.index('class="map"') :].count('class="gpu free"') == 16 - 3


def test_a_drained_node_shows_its_reason(ui: Ui) -> None:
    from phalanx.domain.caller import Caller

    ui.controller.update_nodes(["gpu002"], "drain", "bad fan", Caller(0, "root", True))
    ui.run()
    page = ui.client().get("/ui", headers=USER).text
    node = page[page.index('id="node-gpu002"') :]
    assert "drained" in node[:300] and "bad fan" in node[:2000]


def test_a_down_node_and_a_draining_one_show_their_state_and_reason(ui: Ui) -> None:
    from phalanx.domain.caller import Caller

    root = Caller(0, "root", True)
    job = ui.submit(gpus_per_task=8)  # fills gpu001
    ui.controller.update_nodes(["gpu001"], "drain", "ecc errors", root)  # its job runs on
    ui.controller.update_nodes(["gpu002"], "down", "psu failed", root)
    ui.run()
    page = ui.client().get("/ui", headers=USER).text
    first = page[page.index('id="node-gpu001"') : page.index('id="node-gpu002"')]
    second = page[page.index('id="node-gpu002"') :]
    assert 'class="node draining"' in page and "ecc errors" in first
    assert f'href="/ui/jobs/{job}"' in first  # the draining node's GPUs still show the job
    assert 'class="node down"' in page and "psu failed" in second[:2000]


def test_the_queue_shows_reasons_expected_starts_priorities_and_filters(ui: Ui) -> None:
    running = ui.submit(gpus_per_task=8, nodes="2", time="1:00:00")
    waiting = ui.submit(gpus_per_task=8, nodes="2", time="10:00")
    other = ui.submit(user="root", gpus_per_task=8, nodes="2", account="root")
    client = ui.client()
    page = client.get("/ui/queue", headers=USER).text
    pending = page[page.index('id="pending"') : page.index('id="running"')]
    row = pending[pending.index(f'id="job-{waiting}"') :]
    row = row[: row.index("</tr>")]
    job = ui.controller.job(waiting)
    assert str(job.reason) in row
    assert job.expected_start is not None
    # the expected start: when the running job's time limit ends
    assert "2023-11-14 23:13:20" in row
    for factor in job.factors:
        assert factor in pending
    assert f'id="job-{running}"' in page[page.index('id="running"') :]
    assert "gpu001:0,1,2,3,4,5,6,7 gpu002:0,1,2,3,4,5,6,7" in page
    mine = client.get("/ui/queue", params={"user": "nobody"}, headers=USER).text
    assert f'id="job-{waiting}"' in mine and f'id="job-{other}"' not in mine
    nothing = client.get("/ui/queue", params={"queue": "nope"}, headers=USER).text
    assert "No job waits." in nothing and "No job runs." in nothing
    part = client.get("/ui/queue", params={"partition": "gpu"}, headers=USER).text
    assert f'id="job-{other}"' in part


def _queued_cluster() -> object:
    base = regular_cluster(2, 8, 2)
    cpu = ResourceQuota("cpu", 1_000_000)  # milli-CPUs: plenty, GPUs are the quota here
    quota = ResourceQuota(GPU, 4000, borrowing_limit=8000)  # thousandths
    cq = ClusterQueue(
        "team-a",
        (ResourceGroup((GPU, "cpu"), (FlavorQuotas("default", (quota, cpu)),)),),
        cohort="all",
        namespace_selector=LabelSelector(),
    )
    lender = ClusterQueue(
        "team-b",
        (
            ResourceGroup(
                (GPU, "cpu"), (FlavorQuotas("default", (ResourceQuota(GPU, 12_000), cpu)),)
            ),
        ),
        cohort="all",
        namespace_selector=LabelSelector(),
    )
    queues = Queues(
        flavors={"default": ResourceFlavor("default")},
        cluster_queues={"team-a": cq, "team-b": lender},
        local_queues={("root", "default"): LocalQueue("root", "default", "team-a")},
    )
    return dataclasses.replace(base, queues=queues)


def test_accounts_show_fair_share_and_quota_used_and_borrowed() -> None:
    with scene(_queued_cluster()) as ui:  # type: ignore[arg-type]
        ui.submit(gpus_per_task=6)
        page = ui.client().get("/ui/accounts", headers=USER).text
        queue = ui.client().get("/ui/queue", params={"queue": "team-a"}, headers=USER).text
    quotas = _text(page[page.index('id="quotas"') :])
    # team-a: nominal 4, 6 in use, 2 borrowed, borrowing limit 8
    assert "ClusterQueue team-a all 4.0 6.0 2.0 8.0" in quotas
    assert "ClusterQueue team-b all 12.0 0.0 0.0 none" in quotas
    shares = _text(page[page.index('id="fairshare"') : page.index('id="quotas"')])
    assert "root" in shares
    assert "team-a" in queue and "No job runs." not in queue


def test_without_queues_the_accounts_page_says_so(ui: Ui) -> None:
    page = ui.client().get("/ui/accounts", headers=USER).text
    assert "No Kueue ClusterQueues are configured" in page


def test_the_efficiency_page_shows_figures_now_and_over_time(ui: Ui) -> None:
    ui.submit(gpus_per_task=8)
    series = ui.app.state.ui_series
    series.sample()
    series.sample()
    page = _text(ui.client().get("/ui/efficiency", headers=USER).text)
    assert "eta_sched" in page and "theta_overhead" in page
    assert "50.0% GPU utilisation 8.0 of 16 GPUs in service" in page
    assert "productive GPU-hours" in page


def test_a_jobs_outputs_are_shown_to_administrators_and_its_owner_only(
    ui: Ui, tmp_path: Path
) -> None:
    tmp_path.chmod(0o755)
    out = tmp_path / "out.txt"
    out.write_text("line one\nthe last line\n")
    job = ui.submit(gpus_per_task=2, output=str(out), workdir=str(tmp_path))
    client = ui.client()
    admin = client.get(f"/ui/jobs/{job}", headers=ROOT).text
    assert "the last line" in admin and str(out) in admin
    # nobody owns the job, but not the file (root does): the owner cannot read root's files
    owner = client.get(f"/ui/jobs/{job}", headers=USER).text
    assert "the last line" not in owner and "not nobody&#39;s" in owner
    theirs = ui.submit(user="root", gpus_per_task=2, output=str(out), workdir=str(tmp_path))
    stranger = client.get(f"/ui/jobs/{theirs}", headers=USER).text
    assert "the last line" not in stranger and "Only the job's owner" in stranger
    assert os.path.exists(out)


def test_a_jobs_page_has_its_timeline_nodes_and_accounting(ui: Ui) -> None:
    job = ui.submit(gpus_per_task=2, name="train")
    page = _text(ui.client().get(f"/ui/jobs/{job}", headers=USER).text)
    assert "Job 1 train" in page
    assert "submitted 2023-11-14 22:13:20" in page and "started 2023-11-14 22:13:20" in page
    assert "gpu001:0,1" in page
    assert "RUNNING state" in page


def test_a_long_queue_shows_its_first_rows_and_says_so(ui: Ui, monkeypatch: Any) -> None:
    from phalanx.api.ui import render

    monkeypatch.setattr(render, "MAX_ROWS", 2)
    ids = [ui.submit(gpus_per_task=8, nodes="2", nice=i) for i in range(4)]
    page = ui.client().get("/ui/queue", headers=USER).text
    pending = page[page.index("<h2>Pending") : page.index("<h2>Running")]
    assert '<span class="muted">(3)</span>' in pending
    assert "The first 2 by priority" in pending
    # the highest priorities: the least nice of the waiting ones
    shown = re.findall(r'<tr id="job-(\d+)"', pending)
    assert shown == [str(ids[1]), str(ids[2])]
