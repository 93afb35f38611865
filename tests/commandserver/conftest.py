"""A live Phalanx for the command server's tests: the cluster the Slurm commands' tests use."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from phalanx.server.localcluster import LocalCluster, cluster_yaml


@pytest.fixture(scope="module")
def phalanx(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    """Two nodes of 8 GPUs and 32 CPUs in one partition ``gpu``."""
    state = tmp_path_factory.mktemp("phalanx")
    config = cluster_yaml(2, 8, 32).replace("- name: main", "- name: gpu")
    with LocalCluster(state, config) as local:
        yield local
    log = local.log_tail("controller", 200)
    assert "Traceback" not in log, log
