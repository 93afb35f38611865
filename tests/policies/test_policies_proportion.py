"""Volcano's proportion plugin in the ``volcano`` profile (``priority/proportion``,
``admit/proportion``): scenarios after Volcano's documentation of Queue weight, capability
and guarantee (``docs/user-guide``, the Queue resource management page): two queues on a
16-GPU cluster, each with more 1-GPU jobs pending than the cluster holds, share it by
weight (1:1 gives 8 and 8; 2:1 gives 10 and 5, deserved 10.67 and 5.33 in whole GPUs),
a capability caps a queue and its cut goes to the other, a guarantee is kept for its queue,
and a queue with nothing to run lends everything."""

from __future__ import annotations

import dataclasses

from phalanx.config.queues import queues_from_yaml
from phalanx.domain.state import JobState, Reason
from phalanx.domain.time import HOUR
from phalanx.policies.proportion import QUEUE_LABEL
from phalanx.testing import EngineDriver, make_job, small_cluster


def queue(name: str, weight: int, extra: str = "") -> str:
    return (
        "apiVersion: scheduling.volcano.sh/v1beta1\nkind: Queue\n"
        f"metadata: {{name: {name}}}\nspec:\n  weight: {weight}\n{extra}"
    )


def driver(*documents: str) -> EngineDriver:
    cluster = dataclasses.replace(
        small_cluster(nodes=2, gpus=8), queues=queues_from_yaml("---\n".join(documents))
    )
    return EngineDriver(cluster, "volcano")


def fill(d: EngineDriver, name: str, count: int = 20) -> list[int]:
    spec = make_job(gpus=1, account=name, time_limit=HOUR)
    ids = [d.submit(spec)[0] for _ in range(count)]
    return ids


def running(d: EngineDriver, ids: list[int]) -> int:
    return sum(d.state(i) is JobState.RUNNING for i in ids)


def test_weights_one_to_one_share_the_cluster_evenly() -> None:
    d = driver(queue("q1", 1), queue("q2", 1))
    a, b = fill(d, "q1"), fill(d, "q2")
    d.settle()
    assert (running(d, a), running(d, b)) == (8, 8)


def test_weights_two_to_one_give_two_thirds_and_one_third() -> None:
    d = driver(queue("q1", 2), queue("q2", 1))
    a, b = fill(d, "q1"), fill(d, "q2")
    d.settle()
    assert (running(d, a), running(d, b)) == (10, 5)
    waiting = d.job(a[-1])
    assert waiting.reason == Reason.QUOTA and waiting.reason_plugin == "admit/proportion"
    assert waiting.reason_message == (
        "queue q1 holds 10 GPUs of its deserved 10.67 GPUs; the job asks 1 GPUs"
    )


def test_capability_caps_a_queue_and_the_rest_goes_to_the_other() -> None:
    d = driver(queue("q1", 2, "  capability: {nvidia.com/gpu: 4}\n"), queue("q2", 1))
    a, b = fill(d, "q1"), fill(d, "q2")
    d.settle()
    assert (running(d, a), running(d, b)) == (4, 12)


def test_a_guarantee_is_kept_for_its_queue() -> None:
    d = driver(queue("q1", 3), queue("q2", 1, "  guarantee:\n    resource: {nvidia.com/gpu: 8}\n"))
    a, b = fill(d, "q1"), fill(d, "q2")
    d.settle()
    # Weights alone would give q2 4 GPUs; its guarantee raises it to 8, and q1 may not take
    # what is guaranteed to q2.
    assert (running(d, a), running(d, b)) == (8, 8)


def test_a_queue_with_nothing_to_run_lends_everything() -> None:
    d = driver(queue("q1", 1), queue("q2", 3))
    a = fill(d, "q1")
    d.settle()
    assert running(d, a) == 16


def test_the_queue_label_names_the_queue_and_an_unknown_queue_waits() -> None:
    d = driver(queue("q1", 1), queue("q2", 1))
    named = make_job(gpus=1, account="anyone", time_limit=HOUR, extra=((QUEUE_LABEL, "q2"),))
    lost = make_job(gpus=1, account="anyone", time_limit=HOUR)
    [n] = d.submit(named)
    [m] = d.submit(lost)
    d.settle()
    assert d.state(n) is JobState.RUNNING
    assert d.job(m).reason == Reason.INVALID_ACCOUNT
    assert d.job(m).reason_message == "queue default doesn't exist"


def test_without_volcano_queues_the_profile_is_drf_between_accounts() -> None:
    d = EngineDriver(small_cluster(nodes=2, gpus=8), "volcano")
    a, b = fill(d, "acct-a"), fill(d, "acct-b")
    d.settle()
    assert running(d, a) + running(d, b) == 16
    assert abs(running(d, a) - running(d, b)) <= 1


def test_a_queue_below_its_share_reclaims_from_one_above_it() -> None:
    """Volcano's reclaim: q1 took the whole idle cluster; q2's jobs arrive and take their
    deserved half back from q1's newest jobs."""
    d = driver(queue("q1", 1), queue("q2", 1))
    a = fill(d, "q1", 16)
    d.settle()
    assert running(d, a) == 16
    b = fill(d, "q2", 8)
    d.run(d.now + HOUR // 2)
    assert (running(d, a), running(d, b)) == (8, 8)
    assert all(d.state(i) is JobState.RUNNING for i in a[:8])  # the newest gave way


def test_a_queue_that_is_not_reclaimable_keeps_what_it_holds() -> None:
    d = driver(queue("q1", 1, "  reclaimable: false\n"), queue("q2", 1))
    a = fill(d, "q1", 16)
    d.settle()
    b = fill(d, "q2", 8)
    d.run(d.now + HOUR // 2)
    assert (running(d, a), running(d, b)) == (16, 0)
