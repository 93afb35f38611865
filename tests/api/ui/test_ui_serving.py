"""The serving page (a ``ServingSource`` attached, or none) and the accounts page's usage over
time: per account and per ClusterQueue (used, nominal, borrowed), sampled, drawn, pushed."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from test_ui_pages import _queued_cluster
from ui_scene import USER, Ui, scene

from phalanx.api.serving import Autoscaling, Load, ScaleDecision, Served
from phalanx.api.ui import attach_serving


def _text(html: str) -> str:
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html))


@dataclass
class FakeServing:
    rows: list[Served] = field(default_factory=list)
    made: list[ScaleDecision] = field(default_factory=list)

    def served(self) -> list[Served]:
        return self.rows

    def decisions(self) -> list[ScaleDecision]:
        return self.made


def _web(ready: int, rps: float, p99: float | None = 0.025) -> Served:
    return Served(
        "default",
        "web",
        "",
        3,
        3,
        ready,
        Load("web", 2.5, rps, 0, 0.004 if p99 else None, p99, 2, 10),
        Autoscaling(
            "HorizontalPodAutoscaler", "web-hpa", 1, 5, ("cpu 72% / 50%",), 1_700_000_000_000
        ),
    )


def test_without_a_serving_source_the_page_says_so(ui: Ui) -> None:
    page = _text(ui.client().get("/ui/serving", headers=USER).text)
    assert "does not serve the Kubernetes API" in page


def test_deployments_load_autoscalers_and_decisions(ui: Ui) -> None:
    decision = ScaleDecision(
        1_700_000_005_000,
        "HorizontalPodAutoscaler",
        "default",
        "web-hpa",
        "Deployment/web",
        1,
        3,
        "cpu resource utilization (percentage of request) above target",
    )
    lonely = Served("ml", "lonely", "InferenceService/echo", 0, 0, 0)
    attach_serving(ui.app, FakeServing([_web(2, 41.5), lonely], [decision]))
    page = ui.client().get("/ui/serving", headers=USER).text
    row = _text(page[page.index('id="served-default-web"') : page.index('id="served-ml-lonely"')])
    assert "default/web 3 / 3 / 2" in row
    assert "web 2.50 41.50 0 4.0 / 25.0 ms" in row
    assert "HPA web-hpa 1&ndash;5 cpu 72% / 50% 2023-11-14 22:13:20" in row
    other = _text(page[page.index('id="served-ml-lonely"') : page.index('id="decisions"')])
    assert "InferenceService/echo" in other and "no Service, or no answer from the router" in other
    decisions = _text(page[page.index('id="decisions"') :])
    assert "2023-11-14 22:13:25 HPA default/web-hpa Deployment/web 1 3 cpu resource" in decisions
    assert "over its last 2 s, latency quantiles over its last 10 s" in _text(page)


def test_no_deployments_and_no_decisions_yet(ui: Ui) -> None:
    attach_serving(ui.app, FakeServing())
    page = _text(ui.client().get("/ui/serving", headers=USER).text)
    assert "No Deployments yet" in page and "No scale written by an autoscaler" in page


def test_replicas_and_load_are_sampled_and_drawn_over_time(ui: Ui) -> None:
    source = FakeServing([_web(1, 10.0)])
    attach_serving(ui.app, source)
    series = ui.app.state.ui_series
    series.sample()
    source.rows = [_web(3, 90.0, p99=None)]
    series.sample()
    assert [s.served[0].ready for s in series.samples][-2:] == [1, 3]
    page = ui.client().get("/ui/serving", headers=USER).text
    for chart in ("replicas-chart", "rps-chart", "latency-chart"):
        drawn = page[page.index(f'id="{chart}"') :]
        assert drawn.index("<polyline") < drawn.index("</div>"), chart
        assert ">default/web</text>" in drawn[: drawn.index("</div>")]
    # The second sample had no latency (no request ended): one point, not a drop to 0 ms.
    latency = page[page.index('id="latency-chart"') :]
    points = re.search(r'<polyline[^>]* points="([^"]*)"', latency)
    assert points is not None and len(points.group(1).split()) == 1


def test_the_serving_panel_is_pushed_live(ui: Ui) -> None:
    attach_serving(ui.app, FakeServing([_web(2, 41.5)]))
    client, _ = ui.browser("t-user")
    with client.stream("GET", "/ui/live/serving") as r:
        assert r.headers["content-type"].startswith("text/event-stream")
        seen = ""
        for chunk in r.iter_text():
            seen += chunk
            if "event: serving" in seen and 'id="latency-chart"' in seen:
                break
    assert 'data: <tr id="served-default-web">' in seen


def test_queues_and_accounts_over_time() -> None:
    with scene(_queued_cluster()) as ui:  # type: ignore[arg-type]
        series = ui.app.state.ui_series
        series.sample()
        ui.submit(gpus_per_task=6)  # team-a: nominal 4, so 2 borrowed
        now = series.sample()
        assert now.by_queue["team-a"].used == 6.0 and now.by_queue["team-a"].nominal == 4.0
        assert now.by_queue["team-a"].borrowed == 2.0
        assert now.by_queue["team-b"].used == 0.0 and now.by_queue["team-b"].nominal == 12.0
        assert set(now.fairshare) == {r.account for r in ui.controller.fairshare() if r.parent}
        assert all(0.0 <= f <= 1.0 for f in now.fairshare.values())
        page = ui.client().get("/ui/accounts", headers=USER).text
        client, _ = ui.browser("t-user")
        with client.stream("GET", "/ui/live/accounts") as r:
            pushed = ""
            for chunk in r.iter_text():
                pushed += chunk
                if "event: accounts" in pushed and 'data-queue="team-b"' in pushed:
                    break
    for name in ("team-a", "team-b"):
        chart = page[page.index(f'data-queue="{name}"') :]
        chart = chart[: chart.index("</div>")]
        assert chart.count("<polyline") == 3
        for legend in ("used", "nominal", "borrowed"):
            assert f">{legend}</text>" in chart
    assert 'id="share-chart"' in page and 'id="usage-chart"' in page
    assert 'sse-connect="/ui/live/accounts"' in page
    assert 'data: <div class="queue-chart" data-queue="team-a">' in pushed
