"""The dashboard's templates (Jinja2, package data) and the fragments that pages and live
streams share: each ``*_fragment`` reads the service once and renders one panel."""

from __future__ import annotations

import time
from datetime import UTC, datetime
from typing import Any

from jinja2 import Environment, PackageLoader, select_autoescape

from phalanx.api.convert import job_info
from phalanx.api.service import Service
from phalanx.api.serving import ServingSource
from phalanx.api.ui.charts import bars, lines
from phalanx.api.ui.series import EFFICIENCY_WINDOW_MS, Sample, Series
from phalanx.api.ui.session import Viewer
from phalanx.api.ui.views import (
    QueueFilter,
    cluster_map,
    colour,
    queue_of,
    quota_rows,
    select_jobs,
)
from phalanx.domain.hostlist import compress
from phalanx.domain.state import JobState
from phalanx.sched.job import Job

__all__ = [
    "ENV",
    "accounts_fragment",
    "efficiency_fragment",
    "job_fragment",
    "overview_fragment",
    "page",
    "queue_fragment",
    "serving_fragment",
]

CHART_LINES = 6
"""Series drawn per chart at most: the largest (a chart of fifty lines shows none)."""


def _clock(ms: int | None) -> str:
    if ms is None:
        return ""
    return datetime.fromtimestamp(ms / 1000, UTC).strftime("%Y-%m-%d %H:%M:%S")


def _duration(ms: int | float | None) -> str:
    if ms is None:
        return ""
    s = int(ms // 1000)
    d, s = divmod(s, 86_400)
    h, s = divmod(s, 3600)
    m, s = divmod(s, 60)
    return (f"{d}-" if d else "") + f"{h:02d}:{m:02d}:{s:02d}"


def _relative(ms: int | None) -> str:
    """``in 5m`` / ``3m ago`` against the wall clock."""
    if ms is None:
        return ""
    delta = (ms - time.time() * 1000) / 1000
    text = _duration(abs(delta) * 1000)
    return f"in {text}" if delta >= 0 else f"{text} ago"


ENV = Environment(
    loader=PackageLoader("phalanx.api.ui", "templates"),
    autoescape=select_autoescape(default=True, default_for_string=True),
    trim_blocks=True,
    lstrip_blocks=True,
)
ENV.filters["clock"] = _clock
ENV.filters["duration"] = _duration
ENV.filters["relative"] = _relative
ENV.globals["colour"] = colour

NAV = (
    ("overview", "/ui", "Cluster"),
    ("queue", "/ui/queue", "Queue"),
    ("accounts", "/ui/accounts", "Accounts"),
    ("efficiency", "/ui/efficiency", "Efficiency"),
    ("serving", "/ui/serving", "Serving"),
    ("sim", "/ui/sim", "Simulation report"),
)


def page(name: str, who: Viewer, service: Service, **context: Any) -> str:
    """A whole page: the layout, the navigation, and ``name``.html's content."""
    return ENV.get_template(f"{name}.html").render(
        who=who.caller,
        csrf=who.csrf,
        nav=NAV,
        current=name,
        cluster_name=service.cluster.name,
        **context,
    )


def overview_fragment(service: Service, who: Viewer) -> str:
    running = service.jobs(states=["RUNNING"])
    counts: dict[str, int] = {}
    for (state, _), n in service.counts().items():
        counts[state] = counts.get(state, 0) + n
    eta, theta = service.efficiency(EFFICIENCY_WINDOW_MS)
    return ENV.get_template("_overview.html").render(
        who=who.caller,
        csrf=who.csrf,
        spines=cluster_map(service, running),
        jobs={j.id: j for j in running},
        counts=counts,
        eta=eta,
        theta=theta,
    )


def _gpus_where(job: Job, service: Service) -> str:
    if job.alloc is None:
        return ""
    names = service.cluster.nodes
    return " ".join(
        f"{names[n].name}:{','.join(map(str, d))}"
        for n, d in zip(job.alloc.nodes, job.alloc.devices, strict=False)
    )


MAX_ROWS = 200
"""Rows per table of the queue page: the first by priority (pending) or id (running); the
filters narrow the rest. A page of thousands of rows helps nobody, and its render would hold
the controller's loop."""


def queue_fragment(service: Service, who: Viewer, wanted: QueueFilter) -> str:
    pending, running = select_jobs(service, wanted)
    factors = sorted({k for j in pending[:MAX_ROWS] for k in j.factors})
    cluster = service.cluster
    return ENV.get_template("_queue.html").render(
        who=who.caller,
        csrf=who.csrf,
        pending=pending[:MAX_ROWS],
        running=running[:MAX_ROWS],
        pending_total=len(pending),
        running_total=len(running),
        factors=factors,
        queue_of=lambda j: queue_of(j, cluster),
        gpus_where=lambda j: _gpus_where(j, service),
        nodelist=lambda j: (
            compress([cluster.nodes[i].name for i in j.alloc.nodes]) if j.alloc else ""
        ),
    )


def _over(
    samples: list[Sample], names: list[str], value: Any
) -> dict[str, list[tuple[float, float]]]:
    """``value(sample, name)`` over time (seconds since the first sample) per name; a
    sample where the value is None (not measured then) is left out, not drawn as 0."""
    t0 = samples[0].at_ms if samples else 0
    return {
        n: [((s.at_ms - t0) / 1000, v) for s in samples if (v := value(s, n)) is not None]
        for n in names
    }


def _largest(samples: list[Sample], keys: Any, size: Any) -> list[str]:
    """The ``CHART_LINES`` names with the largest ``size(sample, name)`` at any sample."""
    names = {n for s in samples for n in keys(s)}
    return sorted(names, key=lambda n: (-max(size(s, n) for s in samples), n))[:CHART_LINES]


def accounts_fragment(service: Service, series: Series) -> str:
    rows = service.fairshare()
    jobs = service.jobs()  # not final: quota is held by more than RUNNING jobs
    in_use: dict[str, float] = {}
    for job in jobs:
        if job.state is JobState.RUNNING and job.alloc is not None:
            in_use[job.account] = in_use.get(job.account, 0.0) + job.alloc.gpus
    samples = list(series.samples)
    ranked = _largest(samples, lambda s: s.by_account, lambda s, a: s.by_account.get(a, 0.0))
    shares = _largest(samples, lambda s: s.fairshare, lambda s, a: s.by_account.get(a, 0.0))
    queues = sorted({q for s in samples for q in s.by_queue})[:CHART_LINES]

    def queue_chart(name: str) -> Any:
        def at(s: Sample, what: str) -> float:
            use = s.by_queue.get(name)
            return 0.0 if use is None else float(getattr(use, what))

        return lines(_over(samples, ["used", "nominal", "borrowed"], at), y_label=name)

    def weighted(s: Sample, name: str) -> float | None:
        use = s.by_queue.get(name)
        return None if use is None else use.weighted_share

    quotas = quota_rows(service.cluster, jobs)
    fair = [q for q in quotas if q.weighted_share is not None]
    finite = [q.weighted_share for q in fair if q.weighted_share is not None and not q.unbounded]
    return ENV.get_template("_accounts.html").render(
        rows=rows,
        in_use=in_use,
        quotas=quotas,
        fair=fair,
        # Bars against a share of 1000 (a weight-1 queue borrowing all its cohort lends),
        # or the largest share where one is above it.
        fair_scale=max([1000, *finite]),
        fair_chart=lines(_over(samples, queues, weighted), y_label="weighted share")
        if fair
        else None,
        share_bars=bars({r.account: r.fairshare for r in rows if r.parent is not None}),
        usage_chart=lines(
            _over(samples, ranked, lambda s, a: s.by_account.get(a, 0.0)),
            y_label="GPUs in use per account",
        ),
        share_chart=lines(
            _over(samples, shares, lambda s, a: s.fairshare.get(a, 0.0)),
            y_max=1.0,
            y_label="fair-share factor per account",
        ),
        queue_charts=[(q, queue_chart(q)) for q in queues],
        every_s=series.every_s,
    )


def serving_fragment(serving: ServingSource | None, series: Series) -> str:
    """The serving panel: each Deployment's replicas, load and autoscaler, the autoscalers'
    latest decisions, and replicas and load over time."""
    if serving is None:
        return ENV.get_template("_serving.html").render(served=None)
    samples = list(series.samples)

    def find(s: Sample, key: str) -> Any:
        return next((w for w in s.served if w.key == key), None)

    def ready(s: Sample, key: str) -> float:
        w = find(s, key)
        return float(w.ready) if w is not None else 0.0

    def rps(s: Sample, key: str) -> float:
        w = find(s, key)
        return w.load.rps if w is not None and w.load is not None else 0.0

    def p99_ms(s: Sample, key: str) -> float | None:
        w = find(s, key)
        p99 = w.load.p99_s if w is not None and w.load is not None else None
        return p99 * 1000 if p99 is not None else None

    def keys(s: Sample) -> list[str]:
        return [w.key for w in s.served]

    busiest = _largest(samples, keys, rps)
    return ENV.get_template("_serving.html").render(
        served=serving.served(),
        decisions=serving.decisions()[:MAX_DECISIONS],
        every_s=series.every_s,
        replicas_chart=lines(
            _over(samples, _largest(samples, keys, ready), ready), y_label="ready replicas"
        ),
        rps_chart=lines(_over(samples, busiest, rps), y_label="requests per second"),
        latency_chart=lines(_over(samples, busiest, p99_ms), y_label="p99 latency, ms"),
    )


MAX_DECISIONS = 30
"""Scale decisions listed, newest first."""


def efficiency_fragment(service: Service, series: Series) -> str:
    samples = list(series.samples)
    eta, theta = service.efficiency(EFFICIENCY_WINDOW_MS)
    last = samples[-1] if samples else None
    t0 = samples[0].at_ms if samples else 0

    def over(attr: str) -> list[tuple[float, float]]:
        return [((s.at_ms - t0) / 1000, float(getattr(s, attr))) for s in samples]

    return ENV.get_template("_efficiency.html").render(
        eta=eta,
        theta=theta,
        last=last,
        productive=series.productive_gpu_h,
        window_min=EFFICIENCY_WINDOW_MS // 60_000,
        every_s=series.every_s,
        sched_chart=lines(
            {"eta_sched": over("eta_sched"), "theta_overhead": over("theta_overhead")},
            y_max=1.0,
            percent=True,
            y_label="eta_sched and theta_overhead",
        ),
        use_chart=lines(
            {
                "GPU utilisation": over("utilization"),
                "idle while pending": over("idle_while_pending"),
            },
            y_max=1.0,
            percent=True,
            y_label="GPU utilisation",
        ),
        jobs_chart=lines({"pending": over("pending"), "running": over("running")}, y_label="jobs"),
    )


def job_fragment(service: Service, who: Viewer, job: Job) -> str:
    info = job_info(job, service.cluster)
    return ENV.get_template("_job.html").render(
        who=who.caller,
        csrf=who.csrf,
        job=job,
        info=info,
        gpus_where=_gpus_where(job, service),
        queue=queue_of(job, service.cluster),
        now_ms=int(time.time() * 1000),
    )
