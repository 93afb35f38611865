"""Real kubectl against ``phalanx up`` started without ``--queues``: Kueue's quickstart
objects applied through the API become the engine's queues. A Job with the queue name is
admitted against the ClusterQueue's quota (9 CPUs: a second 5-CPU Job waits), the
ClusterQueue's status shows it, raising ``nominalQuota`` with ``kubectl apply`` admits the
second, a negative quota is refused naming the field, and the queue objects restart with
the controller (the change was journaled)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import pytest
from test_kubectl_kueue import BIG_JOB, QUEUES, Kube, _condition, _phalanx, _until, kube_up

pytestmark = pytest.mark.skipif(not QUEUES.exists(), reason="no Kueue example manifests")


@pytest.fixture(scope="module")
def kube(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Kube]:
    with kube_up(tmp_path_factory.mktemp("queueobjects"), 1, 8) as k:
        yield k


def _cq_status(kube: Kube) -> dict[str, Any]:
    text = kube.run("get", "cq", "cluster-queue", "-o", "jsonpath={.status}")
    return json.loads(text) if text else {}


def _active(status: dict[str, Any]) -> str:
    return next((c["status"] for c in status.get("conditions") or () if c["type"] == "Active"), "")


def _admitted(kube: Kube, job: str) -> bool:
    return _condition(kube.workload_of(job), "Admitted").get("status") == "True"


def test_applied_queues_admit_against_their_quota_and_follow_changes(kube: Kube) -> None:
    kube.run("apply", "-f", str(QUEUES))
    assert _until(lambda: _active(_cq_status(kube)) == "True", 20)
    for name in ("first", "second"):
        path = kube.root / f"{name}.yaml"
        path.write_text(BIG_JOB.format(name=name, seconds=300))
        kube.run("create", "-f", str(path))
        if name == "first":
            assert _until(lambda: _admitted(kube, "first"))
    assert _until(lambda: _condition(kube.workload_of("second"), "QuotaReserved") != {})
    pending = _condition(kube.workload_of("second"), "QuotaReserved")
    assert pending["status"] == "False" and "in flavor default-flavor" in pending["message"]
    assert _until(
        lambda: (
            {k: _cq_status(kube).get(k) for k in ("pendingWorkloads", "admittedWorkloads")}
            == {"pendingWorkloads": 1, "admittedWorkloads": 1}
        ),
        20,
    )
    usage = _cq_status(kube)["flavorsReservation"]
    assert usage[0]["name"] == "default-flavor"
    assert {r["name"]: r["total"] for r in usage[0]["resources"]}["cpu"] == "5"

    # more quota through kubectl apply: the second fits now
    raised = kube.root / "raised.yaml"
    raised.write_text(QUEUES.read_text().replace("nominalQuota: 9", "nominalQuota: 12"))
    kube.run("apply", "-f", str(raised))
    assert _until(lambda: _admitted(kube, "second"), 30)
    assert _until(lambda: _cq_status(kube).get("admittedWorkloads") == 2, 20)


def test_a_negative_quota_is_refused_naming_the_field(kube: Kube) -> None:
    bad = kube.root / "bad.yaml"
    bad.write_text(QUEUES.read_text().replace("nominalQuota: 9", "nominalQuota: -1"))
    done = kube.fails("apply", "-f", str(bad))
    assert "is invalid" in done
    assert "spec.resourceGroups[0].flavors[0].resources[0].nominalQuota" in done


def test_a_local_queue_of_a_missing_cluster_queue_is_inactive(kube: Kube) -> None:
    path = kube.root / "orphan.yaml"
    path.write_text(
        "apiVersion: kueue.x-k8s.io/v1beta2\nkind: LocalQueue\nmetadata:\n  name: orphan\n"
        "  namespace: default\nspec:\n  clusterQueue: nowhere\n"
    )
    kube.run("apply", "-f", str(path))

    def reason() -> str:
        text = kube.run("get", "lq", "orphan", "-o", "jsonpath={.status.conditions}")
        found = [c for c in json.loads(text or "[]") if c["type"] == "Active"]
        return f"{found[0]['status']} {found[0]['reason']}" if found else ""

    assert _until(lambda: reason() == "False ClusterQueueDoesNotExist", 20)
    kube.run("delete", "-f", str(path))


_COMMAND = "import sys; from phalanx.slurm.{0} import main; sys.exit(main(sys.argv[1:]))"


def test_an_sbatch_job_has_a_workload_in_its_accounts_namespace(kube: Kube) -> None:
    env = dict(os.environ, PHALANX_STATE_DIR=str(kube.state))
    env.pop("PHALANX_URL", None)
    done = subprocess.run(
        [sys.executable, "-c", _COMMAND.format("sbatch"), "-A", "physics", "--wrap", "sleep 30"],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    job_id = done.stdout.split()[-1]

    def view() -> dict[str, Any]:
        found = json.loads(kube.run("get", "workloads", "-n", "physics", "-o", "json"))["items"]
        return next((w for w in found if w["metadata"]["name"] == f"slurm-{job_id}"), {})

    assert _until(lambda: _condition(view(), "QuotaReserved") != {}, 30)
    # ClusterQueues are configured and namespace physics has no LocalQueue "default"
    waiting = _condition(view(), "QuotaReserved")
    assert waiting["status"] == "False"
    assert "LocalQueue default doesn't exist" in waiting["message"]
    rows = kube.run("get", "workloads", "-A").splitlines()
    assert any(r.split()[:2] == ["physics", f"slurm-{job_id}"] for r in rows[1:]), rows
    env_cancel = [sys.executable, "-c", _COMMAND.format("scancel"), job_id]
    subprocess.run(env_cancel, env=env, timeout=60, check=False, capture_output=True)


def test_queue_objects_and_their_quota_survive_a_restart_and_go_with_delete(kube: Kube) -> None:
    assert _phalanx(["down"], kube.state).returncode == 0
    config = kube.root / "cluster.yaml"
    up = ["up", "--detach", "--port", "0", "--config", str(config), "--agents", "all"]
    started = _phalanx(up, kube.state)
    assert started.returncode == 0, started.stderr
    made = _phalanx(["kubeconfig"], kube.state)
    kube.config.write_text(made.stdout)
    assert _until(lambda: _active(_cq_status(kube)) == "True", 30)
    nominal = "jsonpath={.spec.resourceGroups[0].flavors[0].resources[0].nominalQuota}"
    assert kube.run("get", "cq", "cluster-queue", "-o", nominal) == "12"
    kube.run("delete", "job", "first", "second")
    kube.run("delete", "-f", str(QUEUES))
    assert kube.run("get", "cq", "-o", "name") == ""
    assert kube.run("get", "lq", "-A", "-o", "name") == ""
