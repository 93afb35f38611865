"""The dashboard's templates (Jinja2, package data) and the fragments that pages and live
streams share: each ``*_fragment`` reads the service once and renders one panel."""

from __future__ import annotations

import time
from datetime import UTC, datetime
from typing import Any

from jinja2 import Environment, PackageLoader, select_autoescape

from phalanx.api.convert import job_info
from phalanx.api.service import Service
from phalanx.api.ui.charts import bars, lines
from phalanx.api.ui.series import EFFICIENCY_WINDOW_MS, Series
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
from phalanx.sched.job import Job

__all__ = [
    "ENV",
    "accounts_fragment",
    "efficiency_fragment",
    "job_fragment",
    "overview_fragment",
    "page",
    "queue_fragment",
]


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


def accounts_fragment(service: Service, series: Series) -> str:
    rows = service.fairshare()
    running = service.jobs(states=["RUNNING"])
    in_use: dict[str, float] = {}
    for job in running:
        if job.alloc is not None:
            in_use[job.account] = in_use.get(job.account, 0.0) + job.alloc.gpus
    samples = list(series.samples)
    ranked = sorted(
        {a for s in samples for a in s.by_account},
        key=lambda a: -max(s.by_account.get(a, 0.0) for s in samples),
    )[:6]
    t0 = samples[0].at_ms if samples else 0
    usage_chart = lines(
        {a: [((s.at_ms - t0) / 1000, s.by_account.get(a, 0.0)) for s in samples] for a in ranked},
        y_label="GPUs in use per account",
    )
    return ENV.get_template("_accounts.html").render(
        rows=rows,
        in_use=in_use,
        quotas=quota_rows(service.cluster, running),
        share_bars=bars({r.account: r.fairshare for r in rows if r.parent is not None}),
        usage_chart=usage_chart,
    )


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
