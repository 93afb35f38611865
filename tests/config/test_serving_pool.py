"""``phalanx.config.serving_pool``: each mode's Kueue objects, the QOS routes, bad input."""

from __future__ import annotations

import pytest

from phalanx.config.queues import queues_from_file, queues_from_yaml
from phalanx.config.serving_pool import (
    SERVING_PRIORITY,
    ServingPool,
    parse_pool,
    pool_yaml,
    with_pool,
)
from phalanx.domain.queues import PreemptionPolicy
from phalanx.errors import ConfigError
from phalanx.testing import make_job, small_cluster


def gpu_quota(text: str, queue: str) -> tuple[int, int | None, int | None]:
    """GPUs of ``queue``: (nominal, borrowing limit, lending limit), in whole GPUs."""
    cq = queues_from_yaml(text).cluster_queues[queue]
    [q] = [q for _, q in cq.quotas() if q.name == "nvidia.com/gpu"]
    whole = [None if v is None else v // 1000 for v in (q.borrowing_limit, q.lending_limit)]
    return q.nominal // 1000, whole[0], whole[1]


def test_guaranteed_lends_the_pool_and_reclaims_it() -> None:
    text = pool_yaml(ServingPool("guaranteed", 24), 64)
    queues = queues_from_yaml(text)
    serving, training = queues.cluster_queues["serving"], queues.cluster_queues["training"]
    assert serving.cohort == training.cohort == "serving-pool"
    assert gpu_quota(text, "serving") == (24, None, None)
    assert gpu_quota(text, "training") == (40, None, None)
    assert serving.preemption.reclaim_within_cohort is PreemptionPolicy.ANY
    assert queues.priority_classes["high"].value == SERVING_PRIORITY


def test_static_never_lends_nor_borrows() -> None:
    text = pool_yaml(ServingPool("static", 24), 64)
    assert gpu_quota(text, "serving") == (24, 0, 0)
    assert gpu_quota(text, "training") == (40, 0, None)


def test_borrowable_is_one_queue_with_priority_preemption() -> None:
    queues = queues_from_yaml(pool_yaml(ServingPool("borrowable", None), 64))
    assert list(queues.cluster_queues) == ["shared"]
    shared = queues.cluster_queues["shared"]
    assert shared.preemption.within_cluster_queue is PreemptionPolicy.LOWER_PRIORITY


@pytest.mark.parametrize("mode", ["guaranteed:8", "static:8", "borrowable"])
def test_with_pool_routes_serving_and_training_qos(mode: str) -> None:
    cluster = with_pool(small_cluster(nodes=2, gpus=8), parse_pool(mode))
    replica = make_job(gpus=8, qos="high", account="chat")
    train = make_job(gpus=8, account="research")
    serving_cq, _ = cluster.cluster_queue_of(replica)
    training_cq, _ = cluster.cluster_queue_of(train)
    assert serving_cq is not None and training_cq is not None
    expected = ("shared", "shared") if mode == "borrowable" else ("serving", "training")
    assert (serving_cq.name, training_cq.name) == expected


def test_the_example_yaml_is_what_pool_yaml_writes() -> None:
    """examples/serving-pool.yaml (for ``phalanx up --queues``) is the guaranteed pool of
    the README: regenerate it with ``pool_yaml`` when the format changes."""
    from pathlib import Path

    path = Path(__file__).parents[2] / "examples" / "serving-pool.yaml"
    text = path.read_text(encoding="utf-8")
    assert text == pool_yaml(ServingPool("guaranteed", 128), 384)
    assert queues_from_file(str(path)).cluster_queues["serving"].cohort == "serving-pool"


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("shared:8", "unknown pool mode"),
        ("guaranteed", "needs its GPUs"),
        ("static:x", "not a GPU count"),
        ("static:0", "at least 1"),
        ("borrowable:8", "no GPUs of its own"),
    ],
)
def test_bad_pools_name_the_option(text: str, needle: str) -> None:
    with pytest.raises(ConfigError, match=needle) as caught:
        parse_pool(text)
    assert caught.value.field == "--pool"


def test_a_pool_over_the_cluster_or_over_queues_is_refused() -> None:
    cluster = small_cluster(nodes=2, gpus=8)
    with pytest.raises(ConfigError, match="16"):
        with_pool(cluster, ServingPool("static", 17))
    pooled = with_pool(cluster, ServingPool("static", 8))
    with pytest.raises(ConfigError, match="replaces"):
        with_pool(pooled, ServingPool("static", 8))
    with pytest.raises(ConfigError, match="no QOS"):
        with_pool(cluster, ServingPool("static", 8), "urgent")
