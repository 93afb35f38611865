"""Real kubectl against ``phalanx up`` with agents: a Job submitted by a kube user runs as
that user's engine job (account = its namespace, as ``sacct`` shows), and ``kubectl logs``
(job/NAME, a pod, --tail, -f, a wrong container) reads its output."""

from __future__ import annotations

import os
import pwd
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

KUBECTL = shutil.which("kubectl")
USER = "phalanx-test"
"""A kube user that is a user of this machine too (the controller launches as its uid)."""


def _is_user(name: str) -> bool:
    try:
        pwd.getpwnam(name)
    except KeyError:
        return False
    return True


pytestmark = [
    pytest.mark.skipif(KUBECTL is None, reason="kubectl is not installed"),
    pytest.mark.skipif(not _is_user(USER), reason=f"no user {USER} on this machine"),
]

SETUP = """\
apiVersion: v1
kind: Namespace
metadata:
  name: team-a
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata:
  name: tester-admin
  namespace: team-a
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: ClusterRole
  name: cluster-admin
subjects:
- kind: User
  name: phalanx-test
"""

JOB = """\
apiVersion: batch/v1
kind: Job
metadata:
  name: hello
  namespace: team-a
  annotations:
    phalanx.io/user: root
spec:
  template:
    spec:
      restartPolicy: Never
      containers:
      - name: main
        image: busybox
        command: ["sh", "-c", "echo hello; echo world"]
"""


def _phalanx(args: list[str], state: Path, *module: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PHALANX_STATE_DIR=str(state))
    env.pop("PHALANX_DB", None)
    return subprocess.run(
        [sys.executable, "-m", *(module or ("phalanx",)), *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )


class Cluster:
    def __init__(self, root: Path, state: Path) -> None:
        self.root = root
        self.state = state

    def kubectl(self, user: str, *args: str, ok: bool = True) -> subprocess.CompletedProcess[str]:
        assert KUBECTL is not None
        config = self.root / f"{user}.kubeconfig"
        if not config.exists():
            made = _phalanx(["kubeconfig", *(("--user", user) if user else ())], self.state)
            assert made.returncode == 0, made.stderr
            config.write_text(made.stdout)
        env = dict(os.environ, KUBECONFIG=str(config), HOME=str(self.root))
        done = subprocess.run(
            [KUBECTL, *args], capture_output=True, text=True, env=env, timeout=120
        )
        if ok:
            assert done.returncode == 0, f"kubectl {' '.join(args)}: {done.stderr}"
        return done


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    from phalanx.server.localcluster import cluster_yaml

    root = tmp_path_factory.mktemp("kubelogs")
    state = root / "state"
    config = root / "cluster.yaml"
    config.write_text(cluster_yaml(1, 8))
    up = ["up", "--detach", "--port", "0", "--config", str(config), "--agents", "all"]
    started = _phalanx(up, state)
    assert started.returncode == 0, started.stderr
    try:
        yield Cluster(root, state)
    finally:
        _phalanx(["down"], state)
        log = (state / "log" / "controller.log").read_text() if (state / "log").exists() else ""
        assert "Traceback" not in log, log


def test_a_users_job_runs_as_them_and_kubectl_logs_reads_it(cluster: Cluster) -> None:
    setup = cluster.root / "setup.yaml"
    setup.write_text(SETUP)
    cluster.kubectl("", "apply", "--validate=false", "-f", str(setup))
    job = cluster.root / "job.yaml"
    job.write_text(JOB)
    cluster.kubectl(USER, "create", "--validate=false", "-f", str(job))
    cluster.kubectl(
        USER, "wait", "-n", "team-a", "--for=condition=complete", "job/hello", "--timeout=90s"
    )
    # the forged annotation was overwritten with the bearer token's user
    who = cluster.kubectl(
        USER, "get", "job", "hello", "-n", "team-a",
        "-o", "jsonpath={.metadata.annotations.phalanx\\.io/user}",
    ).stdout  # fmt: skip
    assert who == USER
    acct = _phalanx(
        ["-a", "-X", "-n", "-P", "-o", "JobName,User,Account"], cluster.state, "phalanx.slurm.sacct"
    )
    assert acct.returncode == 0, acct.stderr
    rows = [line.split("|") for line in acct.stdout.splitlines()]
    assert any(user == USER and account == "team-a" for _, user, account in rows), rows

    assert cluster.kubectl(USER, "logs", "-n", "team-a", "job/hello").stdout == "hello\nworld\n"
    pod = cluster.kubectl(
        USER, "get", "pods", "-n", "team-a", "-l", "job-name=hello",
        "-o", "jsonpath={.items[0].metadata.name}",
    ).stdout  # fmt: skip
    tail = cluster.kubectl(USER, "logs", "-n", "team-a", pod, "--tail", "1").stdout
    assert tail == "world\n"
    followed = cluster.kubectl(USER, "logs", "-n", "team-a", "-f", pod, "-c", "main").stdout
    assert followed == "hello\nworld\n"  # the pod has ended: -f returns at once
    wrong = cluster.kubectl(USER, "logs", "-n", "team-a", pod, "-c", "nope", ok=False)
    assert wrong.returncode == 1  # kubectl checks the container name itself; the server too:
    raw = f"/api/v1/namespaces/team-a/pods/{pod}/log?container=nope"
    wrong = cluster.kubectl(USER, "get", "--raw", raw, ok=False)
    assert (
        f'Error from server (BadRequest): container "nope" is not valid for pod "{pod}"'
        in wrong.stderr
    )
    missing = cluster.kubectl(USER, "logs", "-n", "team-a", "nope", ok=False)
    assert 'pods "nope" not found' in missing.stderr


def test_auth_can_i_and_whoami(cluster: Cluster) -> None:
    setup = cluster.root / "setup.yaml"
    setup.write_text(SETUP)
    cluster.kubectl("", "apply", "--validate=false", "-f", str(setup))
    yes = cluster.kubectl(USER, "auth", "can-i", "create", "jobs", "-n", "team-a")
    assert yes.stdout.strip() == "yes"
    no = cluster.kubectl(USER, "auth", "can-i", "get", "pods/log", "-n", "default", ok=False)
    assert no.returncode == 1 and no.stdout.strip() == "no"
    me = cluster.kubectl(USER, "auth", "whoami", "-o", "jsonpath={.status.userInfo.username}")
    assert me.stdout == USER
