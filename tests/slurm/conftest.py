"""A real Phalanx (16 nodes of 8 GPUs, partition ``gpu``, as the reference Slurm) with the
Slurm shims on PATH, and the reference captures of Slurm 22.05 to compare with."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from slurm_shell import Shell, activate_shims

from phalanx.server.localcluster import LocalCluster, cluster_yaml
from phalanx.slurm.shims import write_shims


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    state = tmp_path_factory.mktemp("phalanx")
    config = cluster_yaml(16, 8, prefix="n").replace("- name: main", "- name: gpu")
    with LocalCluster(state, config) as local:
        yield local
    log = local.log_tail("controller", 200)
    assert "Traceback" not in log, log


@pytest.fixture(scope="module")
def shell(cluster: LocalCluster, tmp_path_factory: pytest.TempPathFactory) -> Shell:
    bin_dir = tmp_path_factory.mktemp("bin")
    write_shims(bin_dir)
    workdir = tmp_path_factory.mktemp("work")
    workdir.chmod(0o755)
    return Shell(cluster, bin_dir, workdir)


# ------------------------------------------------------------------ the clients' cluster
@pytest.fixture(scope="module")
def phalanx(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    """Two nodes of 8 GPUs and 32 CPUs in one default partition ``gpu``, as the reference;
    one per test module, for the tests that run real clients (srun, salloc, submitit, ...)."""
    state = tmp_path_factory.mktemp("phalanx")
    config = cluster_yaml(2, 8, 32).replace("- name: main", "- name: gpu")
    with LocalCluster(state, config) as local:
        yield local
    log = local.log_tail("controller", 200)
    assert "Traceback" not in log, log


@pytest.fixture
def slurm_env(phalanx: LocalCluster, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    return activate_shims(phalanx, tmp_path, monkeypatch)
