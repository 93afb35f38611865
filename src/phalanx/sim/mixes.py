"""Workload mixes: a team's workload described by classes of work, and the jobs they make.

A mix is what ``phalanx advise --mix FILE`` reads (YAML) or names (``BUILTIN_MIXES``)::

    days: 2                       # arrivals fall in [0, days)
    classes:
      - name: pretrain            # also the account of its jobs (how reports group them)
        kind: pretrain            # pretrain | finetune | hpo | rlhf | serving
        per_day: 6                # arrivals per day (a burst counts once)
        nodes: [4, 8, 16, 32]     # gang size in nodes, one drawn per job (default [1])
        gpus: [8]                 # GPUs per node (or per replica), one drawn per job;
                                  # a value below 1 is a fraction of one GPU (one node only)
        hours: [6, 24]            # runtime, log-uniform in [low, high] hours
        burst: [1, 1]             # jobs per arrival, uniform (HPO trials, RLHF rollouts)
        checkpoint_minutes: 60    # periodic checkpoint (default none)
        mfu: 0.45                 # model FLOPs utilisation of this class (default: --mfu)
      - name: chat
        kind: serving
        replicas: [16, 64]        # replicas at the daily trough and at the peak
        gpus: [4]                 # GPUs per replica
        peak_hour: 14             # hour of the day of the peak (default 14)
        bucket_minutes: 60        # the curve is a replica count per bucket (default 60)

Serving is modelled, not simulated as a service (the serving issue is not done): the daily
curve ``r(b) = low + (peak - low) x (1 + cos(2 pi (hour(b) - peak_hour) / 24)) / 2`` (rounded)
gives the replicas wanted in each bucket ``b``; replica ``i`` is one long-running job for each
maximal stretch of buckets with ``r(b) > i``, submitted at the stretch's start with the
stretch as its runtime and time limit, in QOS ``high`` (priority 1000, may preempt
``normal``, on clusters that define it as ``regular_cluster`` does). Its SLO attainment is
read from when it started (``phalanx.sim.sweep``).

``load`` scales every class's arrival rate and the serving curve's replica counts.
Deterministic: one ``random.Random(seed)`` draws everything in class order.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass

from phalanx.config.yamlfield import YamlField, compose_yaml
from phalanx.domain.jobspec import MILLI, JobSpec
from phalanx.domain.time import DAY, HOUR, MINUTE, Duration
from phalanx.errors import ConfigError
from phalanx.sim.traces.estimates import estimate_limit
from phalanx.sim.workload import TraceJob

__all__ = [
    "BUILTIN_MIXES",
    "KINDS",
    "SERVING_QOS",
    "Mix",
    "WorkClass",
    "mix_jobs",
    "read_mix",
    "read_mix_text",
    "serving_curve",
]

KINDS = ("pretrain", "finetune", "hpo", "rlhf", "serving")
SERVING_QOS = "high"
_KEYS = (
    "name",
    "kind",
    "per_day",
    "nodes",
    "gpus",
    "hours",
    "burst",
    "checkpoint_minutes",
    "mfu",
    "replicas",
    "peak_hour",
    "bucket_minutes",
)
_USERS = 4


@dataclass(frozen=True, slots=True)
class WorkClass:
    """One class of work in a mix (fields as in the module docstring)."""

    name: str
    kind: str
    gpus: tuple[float, ...]
    per_day: float = 0.0
    nodes: tuple[int, ...] = (1,)
    hours: tuple[float, float] = (1.0, 1.0)
    burst: tuple[int, int] = (1, 1)
    checkpoint_minutes: float | None = None
    mfu: float | None = None
    replicas: tuple[int, int] = (0, 0)
    peak_hour: float = 14.0
    bucket_minutes: float = 60.0

    @property
    def serving(self) -> bool:
        return self.kind == "serving"


@dataclass(frozen=True, slots=True)
class Mix:
    name: str
    days: float
    classes: tuple[WorkClass, ...]

    def class_names(self) -> tuple[str, ...]:
        return tuple(c.name for c in self.classes)

    def serving_classes(self) -> tuple[str, ...]:
        return tuple(c.name for c in self.classes if c.serving)


BUILTIN_MIXES: dict[str, Mix] = {
    # Multi-node pre-training gangs take about three quarters of 512 GPUs at load 1, with a
    # stream of single-node fine-tuning jobs around them.
    "gang-heavy": Mix(
        "gang-heavy",
        4.0,
        (
            WorkClass(
                "pretrain", "pretrain", (8,), 9.0, (4, 8, 16, 32), (6.0, 24.0),
                checkpoint_minutes=60, mfu=0.45,
            ),
            WorkClass("finetune", "finetune", (1, 2, 4, 8), 30.0, hours=(0.5, 6.0), mfu=0.35),
        ),
    ),
    # Small HPO trials and RLHF rollouts (half on a fraction of a GPU) around a serving fleet
    # whose replicas follow the day, with some fine-tuning.
    "small-serving": Mix(
        "small-serving",
        1.5,
        (
            WorkClass("hpo", "hpo", (1,), 48.0, hours=(0.2, 2.0), burst=(20, 100), mfu=0.3),
            WorkClass(
                "rlhf", "rlhf", (1, 0.5), 8.0, hours=(0.01, 0.2), burst=(50, 300), mfu=0.25
            ),
            WorkClass(
                "finetune", "finetune", (1, 2, 4, 8), 120.0, hours=(0.5, 6.0),
                checkpoint_minutes=60, mfu=0.35,
            ),
            WorkClass("serving", "serving", (4,), replicas=(32, 96), mfu=0.3),
        ),
    ),
}  # fmt: skip


# -- reading ----------------------------------------------------------------------------------


def read_mix(path: str) -> Mix:
    """The mix in the YAML file at ``path``. ``ConfigError`` names file, line and field."""
    with open(path, encoding="utf-8") as handle:
        text = handle.read()
    return read_mix_text(text, path)


def read_mix_text(text: str, source: str) -> Mix:
    """The mix in YAML ``text``; errors name ``source`` as the file."""
    root = compose_yaml(text, source)
    top = root.mapping(("days", "classes"), required=("classes",))
    days = _float(top["days"], positive=True) if "days" in top else 1.0
    classes = tuple(_work_class(f) for f in top["classes"].sequence())
    if not classes:
        raise top["classes"].error("a mix needs at least one class")
    names = [c.name for c in classes]
    for f, name in zip(top["classes"].sequence(), names, strict=True):
        if names.count(name) > 1:
            raise f.error(f"duplicate class name {name!r}")
    return Mix(source, days, classes)


def _work_class(f: YamlField) -> WorkClass:
    spec = f.mapping(_KEYS, required=("name", "kind", "gpus"))
    kind = spec["kind"].as_str()
    if kind not in KINDS:
        raise spec["kind"].error(f"unknown kind {kind!r}; expected one of {list(KINDS)}")
    serving = kind == "serving"
    only_serving = ("replicas", "peak_hour", "bucket_minutes")
    only_batch = ("per_day", "hours", "burst", "nodes")
    for key in only_batch if serving else only_serving:
        if key in spec:
            raise spec[key].error(f"does not apply to kind {kind!r}")
    for key in ("replicas",) if serving else ("per_day", "hours"):
        if key not in spec:
            raise f.error(f"missing required key {key!r} for kind {kind!r}")
    gpus = tuple(_gpus(g) for g in spec["gpus"].sequence())
    nodes = tuple(n.as_int(1) for n in spec["nodes"].sequence()) if "nodes" in spec else (1,)
    if not gpus or not nodes:
        raise (spec["gpus"] if not gpus else spec["nodes"]).error("must not be empty")
    if any(g < 1 for g in gpus) and max(nodes) > 1:
        raise spec["gpus"].error("a fraction of a GPU is for one-node jobs only")
    return WorkClass(
        name=spec["name"].as_str(),
        kind=kind,
        gpus=gpus,
        per_day=_float(spec["per_day"], positive=True) if "per_day" in spec else 0.0,
        nodes=nodes,
        hours=_pair_float(spec["hours"]) if "hours" in spec else (1.0, 1.0),
        burst=_pair_int(spec["burst"], 1) if "burst" in spec else (1, 1),
        checkpoint_minutes=(
            _float(spec["checkpoint_minutes"], positive=True)
            if "checkpoint_minutes" in spec
            else None
        ),
        mfu=_fraction(spec["mfu"]) if "mfu" in spec else None,
        replicas=_pair_int(spec["replicas"], 0) if "replicas" in spec else (0, 0),
        peak_hour=_float(spec["peak_hour"]) if "peak_hour" in spec else 14.0,
        bucket_minutes=(
            _float(spec["bucket_minutes"], positive=True) if "bucket_minutes" in spec else 60.0
        ),
    )


def _float(f: YamlField, *, positive: bool = False) -> float:
    text = f.text()
    try:
        value = float(text)
    except ValueError:
        raise f.error(f"expected a number, got {text!r}") from None
    if not math.isfinite(value) or (positive and value <= 0) or value < 0:
        raise f.error(f"must be a {'positive' if positive else 'non-negative'} number: {text}")
    return value


def _fraction(f: YamlField) -> float:
    value = _float(f, positive=True)
    if value > 1:
        raise f.error(f"must be in (0, 1], got {value}")
    return value


def _gpus(f: YamlField) -> float:
    value = _float(f, positive=True)
    if value > 1 and value != int(value):
        raise f.error(f"GPUs above 1 must be whole, got {value}")
    if value < 1 and round(value * MILLI) < 1:
        raise f.error(f"a GPU fraction must be at least 0.001, got {value}")
    return value


def _pair(f: YamlField) -> list[YamlField]:
    items = f.sequence()
    if len(items) != 2:
        raise f.error(f"expected [low, high], got {len(items)} values")
    return items


def _pair_float(f: YamlField) -> tuple[float, float]:
    low, high = (_float(item, positive=True) for item in _pair(f))
    if high < low:
        raise f.error(f"high ({high}) is below low ({low})")
    return low, high


def _pair_int(f: YamlField, minimum: int) -> tuple[int, int]:
    low, high = (item.as_int(minimum) for item in _pair(f))
    if high < low:
        raise f.error(f"high ({high}) is below low ({low})")
    return low, high


# -- generating -------------------------------------------------------------------------------


def mix_jobs(mix: Mix, seed: int, load: float = 1.0) -> list[TraceJob]:
    """The jobs of ``mix`` for ``seed`` at ``load``, sorted by (submit, generation order)."""
    if not (math.isfinite(load) and load > 0):
        raise ConfigError(f"load must be positive: {load}", field="--loads")
    rng = random.Random(seed)
    horizon = round(mix.days * DAY)
    drafts: list[tuple[int, JobSpec, Duration]] = []
    for wc in mix.classes:
        if wc.serving:
            drafts.extend(_serving(wc, horizon, load))
        else:
            drafts.extend(_batch(rng, wc, horizon, load))
    order = sorted(range(len(drafts)), key=lambda i: drafts[i][0])
    jobs = []
    for k, i in enumerate(order):
        submit, spec, runtime = drafts[i]
        if spec.time_limit is None:
            spec = _with_limit(spec, estimate_limit(runtime, seed, k))
        jobs.append(TraceJob(submit, spec, runtime, trace_id=spec.name))
    return jobs


def _with_limit(spec: JobSpec, limit: Duration) -> JobSpec:
    from dataclasses import replace

    return replace(spec, time_limit=limit)


def _batch(
    rng: random.Random, wc: WorkClass, horizon: int, load: float
) -> list[tuple[int, JobSpec, Duration]]:
    out = []
    rate = wc.per_day * load / DAY
    at = rng.expovariate(rate)
    k = 0
    while at < horizon:
        user = f"{wc.name}-u{rng.randrange(_USERS)}"
        for i in range(rng.randint(*wc.burst)):
            # Members of a burst arrive within a minute of one another.
            submit = int(at) + (rng.randrange(MINUTE) if wc.burst[1] > 1 else 0)
            low, high = wc.hours
            hours = math.exp(rng.uniform(math.log(low), math.log(high)))
            runtime = max(1, round(hours * HOUR))
            nodes = rng.choice(wc.nodes)
            gpus = rng.choice(wc.gpus)
            name = f"{wc.name}{k}" if wc.burst[1] == 1 else f"{wc.name}{k}_{i}"
            out.append((submit, _spec(wc, name, user, nodes, gpus, None), runtime))
        k += 1
        at += rng.expovariate(rate)
    return out


def serving_curve(wc: WorkClass, horizon: int, load: float) -> list[int]:
    """Replicas wanted in each bucket of ``wc`` over ``[0, horizon)``."""
    bucket = round(wc.bucket_minutes * MINUTE)
    low, peak = wc.replicas
    out = []
    for b in range(math.ceil(horizon / bucket)):
        hour = ((b + 0.5) * bucket / HOUR) % 24
        wave = (1 + math.cos(2 * math.pi * (hour - wc.peak_hour) / 24)) / 2
        out.append(round((low + (peak - low) * wave) * load))
    return out


def _serving(wc: WorkClass, horizon: int, load: float) -> list[tuple[int, JobSpec, Duration]]:
    bucket = round(wc.bucket_minutes * MINUTE)
    curve = serving_curve(wc, horizon, load)
    out = []
    gpus = wc.gpus[0]
    for i in range(max(curve, default=0)):
        start: int | None = None
        for b, wanted in enumerate([*curve, 0]):
            if wanted > i and start is None:
                start = b
            elif wanted <= i and start is not None:
                runtime = (b - start) * bucket
                name = f"{wc.name}-r{i}-b{start}"
                spec = _spec(wc, name, f"{wc.name}-u0", 1, gpus, runtime)
                out.append((start * bucket, spec, runtime))
                start = None
    return out


def _spec(
    wc: WorkClass, name: str, user: str, nodes: int, gpus: float, limit: Duration | None
) -> JobSpec:
    whole = int(gpus) if gpus >= 1 else 0
    checkpoint = None if wc.checkpoint_minutes is None else round(wc.checkpoint_minutes * MINUTE)
    return JobSpec(
        name=name,
        user=user,
        account=wc.name,
        qos=SERVING_QOS if wc.serving else "normal",
        nodes_min=nodes,
        nodes_max=nodes,
        gpus_per_task=whole,
        gpu_milli=0 if whole else round(gpus * MILLI),
        cpus_per_task=max(1, whole),
        time_limit=limit,
        checkpoint_interval=checkpoint,
    )
