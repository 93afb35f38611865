"""Real kubectl: ``kubectl get nodes`` shows the engine's nodes (GPUs as
``nvidia.com/gpu`` capacity, Ready), and ``kubectl cordon``/``uncordon`` drain and resume a
node as ``scontrol update State=DRAIN|RESUME`` does (sinfo shows it drained)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator

import pytest
from test_kubectl_kueue import KUBECTL, Kube, _until, kube_up

pytestmark = pytest.mark.skipif(KUBECTL is None, reason="kubectl is not installed")


@pytest.fixture(scope="module")
def kube(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Kube]:
    with kube_up(tmp_path_factory.mktemp("nodes"), 2, 4) as k:
        yield k


def _sinfo_states(kube: Kube) -> str:
    env = dict(os.environ, PHALANX_STATE_DIR=str(kube.state))
    code = "import sys; from phalanx.slurm.sinfo import main; sys.exit(main(sys.argv[1:]))"
    done = subprocess.run(
        [sys.executable, "-c", code, "-N", "-h", "-o", "%N %t"],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_nodes_are_listed_with_their_gpus_and_ready(kube: Kube) -> None:
    assert _until(lambda: "node2" in kube.run("get", "nodes", "-o", "name"), 20)
    rows = [r.split() for r in kube.run("get", "nodes").splitlines()]
    assert rows[0] == ["NAME", "STATUS", "ROLES", "AGE", "VERSION"]
    assert _until(
        lambda: (
            [r.split()[1] for r in kube.run("get", "nodes").splitlines()[1:]] == ["Ready", "Ready"]
        ),
        20,
    )
    node = json.loads(kube.run("get", "node", "node1", "-o", "json"))
    assert node["status"]["capacity"]["nvidia.com/gpu"] == "4"
    assert node["status"]["allocatable"]["cpu"] == "32"


def test_cordon_drains_and_uncordon_resumes(kube: Kube) -> None:
    kube.run("cordon", "node1")
    assert _until(lambda: "node1 drain" in _sinfo_states(kube), 20), _sinfo_states(kube)
    row = [r.split() for r in kube.run("get", "nodes").splitlines() if r.startswith("node1 ")]
    assert row[0][1] == "Ready,SchedulingDisabled"
    taints = kube.run("get", "node", "node1", "-o", "jsonpath={.spec.taints[0].key}")
    assert taints == "node.kubernetes.io/unschedulable"
    kube.run("uncordon", "node1")
    assert _until(lambda: "node1 idle" in _sinfo_states(kube), 20)
    assert _until(
        lambda: kube.run("get", "node", "node1", "-o", "jsonpath={.spec.unschedulable}") == "",
        20,
    )
