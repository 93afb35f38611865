"""A real Phalanx (controller and agents as processes) for the tests of this folder."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from phalanx.server.localcluster import LocalCluster, cluster_yaml
from phalanx.testing.postgres import TempPostgres


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def cluster(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[LocalCluster]:
    """A controller and two agents, on each state store in turn (the module's tests run
    once per store)."""
    state = tmp_path_factory.mktemp("phalanx")
    tokens = state / "tokens"
    tokens.write_text("tok-nobody nobody\n")
    env = dict(os.environ)
    if request.param == "postgresql":
        server: TempPostgres = request.getfixturevalue("postgres")
        env["PHALANX_DB"] = server.new_database()
    else:
        env.pop("PHALANX_DB", None)  # the state directory's SQLite file
    local = LocalCluster(state, cluster_yaml(2, 8), extra_args=("--tokens", str(tokens)), env=env)
    with local:
        yield local
    for name in ("controller", *local.agents):
        log = local.log_tail(name if name == "controller" else f"agent-{name}", 200)
        assert "Traceback" not in log, log


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    tmp_path.chmod(0o755)
    return tmp_path
