"""A real Phalanx (controller and agents as processes) for the tests of this folder."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from phalanx.server.localcluster import LocalCluster, cluster_yaml


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    state = tmp_path_factory.mktemp("phalanx")
    tokens = state / "tokens"
    tokens.write_text("tok-nobody nobody\n")
    local = LocalCluster(state, cluster_yaml(2, 8), extra_args=("--tokens", str(tokens)))
    with local:
        yield local
    for name in ("controller", *local.agents):
        log = local.log_tail(name if name == "controller" else f"agent-{name}", 200)
        assert "Traceback" not in log, log


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    tmp_path.chmod(0o755)
    return tmp_path
