"""Kueue's fair sharing on the accounts page: each ClusterQueue's weight and weighted share
(the figure its ``status.fairSharing.weightedShare`` reports), as a column and a bar, moving
as jobs start, sampled over time; and what the page says while fair sharing is off."""

from __future__ import annotations

import dataclasses
import re

from ui_scene import USER, scene

from phalanx.config.clusterspec import regular_cluster
from phalanx.domain.cluster import Cluster
from phalanx.domain.quantity import GPU
from phalanx.domain.queues import (
    ClusterQueue,
    FairSharing,
    FlavorQuotas,
    LabelSelector,
    LocalQueue,
    Queues,
    ResourceFlavor,
    ResourceGroup,
    ResourceQuota,
)
from phalanx.kube.queuestatus import cluster_queue_status


def _cluster(weight: float, fair: bool = True) -> Cluster:
    """16 GPUs; team-a (nominal 4 GPUs, ``weight``) borrows from team-b (nominal 12) in
    cohort ``all``; root's jobs go to team-a."""
    cpu = ResourceQuota("cpu", 1_000_000)  # milli-CPUs: plenty, GPUs are the quota here

    def cq(name: str, gpus: int, w: float) -> ClusterQueue:
        group = ResourceGroup((GPU, "cpu"), (FlavorQuotas("f", (ResourceQuota(GPU, gpus), cpu)),))
        return ClusterQueue(
            name,
            (group,),
            cohort="all",
            namespace_selector=LabelSelector(),
            fair_sharing_weight=w,
        )

    queues = Queues(
        flavors={"f": ResourceFlavor("f")},
        cluster_queues={"team-a": cq("team-a", 4000, weight), "team-b": cq("team-b", 12_000, 1)},
        local_queues={("root", "default"): LocalQueue("root", "default", "team-a")},
        fair_sharing=FairSharing(enable=fair),
    )
    return dataclasses.replace(regular_cluster(2, 8, 2), queues=queues)


def _row(page: str, queue: str) -> list[str]:
    """The cells of ``queue``'s row in the fair-sharing table, as text."""
    found = re.search(rf'<tr data-queue="{queue}">(.*?)</tr>', page, re.S)
    assert found is not None, page
    return [re.sub(r"<[^>]+>", "", c).strip() for c in re.findall(r"<td.*?</td>", found[1], re.S)]


def _bar(page: str, queue: str) -> float:
    found = re.search(rf'<tr data-queue="{queue}">.*?share-bar.*?width: ([0-9.]+)%', page, re.S)
    assert found is not None, page
    return float(found[1])


def test_weighted_share_and_weight_per_cluster_queue_as_the_status_reports_them() -> None:
    with scene(_cluster(weight=2)) as ui:
        ui.submit(gpus_per_task=6)  # team-a: 6 of its 4 GPUs, 2 borrowed of the 16 lent
        page = ui.client().get("/ui/accounts", headers=USER).text
        jobs = ui.controller.jobs()
        status = cluster_queue_status(ui.controller.cluster, jobs)
    # 2 of 16 GPUs: 125 per mille, over weight 2: 62 (integer division, as Kueue).
    assert _row(page, "team-a") == ["team-a", "all", "2", "2.0", "62", ""]
    assert _row(page, "team-b") == ["team-b", "all", "1", "0.0", "0", ""]
    assert status["team-a"]["fairSharing"] == {"weightedShare": 62}  # the same figure
    assert status["team-b"]["fairSharing"] == {"weightedShare": 0}
    assert _bar(page, "team-a") == 62 / 1000 * 100 and _bar(page, "team-b") == 0


def test_the_share_moves_as_jobs_start_and_is_sampled_over_time() -> None:
    with scene(_cluster(weight=1)) as ui:
        ui.submit(gpus_per_task=6)
        series = ui.app.state.ui_series
        client = ui.client()
        before = client.get("/ui/fragments/accounts", headers=USER).text
        ui.submit(gpus_per_task=4)  # 10 of 4: 6 borrowed of 16
        series.sample()
        after = client.get("/ui/fragments/accounts", headers=USER).text
        samples = list(series.samples)
    assert _row(before, "team-a")[4] == "125"  # 2 of 16, weight 1
    assert _row(after, "team-a")[4] == "375"  # 6 of 16
    assert [s.by_queue["team-a"].weighted_share for s in samples][-1] == 375.0
    assert samples[-1].by_queue["team-b"].weighted_share == 0.0
    assert 'id="fair-chart"' in after and "<polyline" in after


def test_a_weight_0_queue_that_borrows_has_the_largest_share() -> None:
    with scene(_cluster(weight=0)) as ui:
        ui.submit(gpus_per_task=6)
        page = ui.client().get("/ui/accounts", headers=USER).text
        ui.app.state.ui_series.sample()
        sample = ui.app.state.ui_series.samples[-1]
    assert _row(page, "team-a")[2:5] == ["0", "2.0", "max (weight 0, borrowing)"]
    assert _bar(page, "team-a") == 100
    assert sample.by_queue["team-a"].weighted_share is None  # not drawn: it would flatten all


def test_with_fair_sharing_off_the_page_says_how_to_turn_it_on() -> None:
    with scene(_cluster(weight=2, fair=False)) as ui:
        ui.submit(gpus_per_task=6)
        page = ui.client().get("/ui/accounts", headers=USER).text
    assert 'id="fair-sharing"' not in page and 'id="fair-chart"' not in page
    assert "fair sharing is off" in page and "fairSharing: {enable: true}" in page
    assert 'id="quotas"' in page  # the quota table is there all the same
