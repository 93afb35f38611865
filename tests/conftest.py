"""Test-wide settings: no stale compiled module; CI replays the same hypothesis examples on
every run; the state stores every store test runs on."""

from __future__ import annotations

import importlib.util
import os
import signal
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from hypothesis import settings

from phalanx.live.dburl import sqlite_url
from phalanx.live.store import Store, open_store
from phalanx.testing.postgres import TempPostgres, pg_bin_dir


def pytest_configure(config: pytest.Config) -> None:
    _terminal_signals()
    _refuse_stale_native()


def _terminal_signals() -> None:
    """Signals as a terminal gives them. A runner that starts the suite with SIGINT or
    SIGTERM ignored (a background job of a script, some CI runners) passes that on to every
    process a test starts, where an ignored disposition survives exec: a test that signals
    one would test the runner, not Phalanx."""
    if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    for number in (signal.SIGTERM, signal.SIGQUIT):  # not SIGHUP: nohup means it
        if signal.getsignal(number) == signal.SIG_IGN:
            signal.signal(number, signal.SIG_DFL)


def _refuse_stale_native() -> None:
    """Refuse to test stale compiled modules: Python imports a module's .so (tools/native.py)
    before its .py, so an edited .py beside an old .so would test the old code."""
    spec = importlib.util.spec_from_file_location(
        "native", Path(__file__).resolve().parents[1] / "tools" / "native.py"
    )
    assert spec is not None and spec.loader is not None
    native = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(native)
    reasons = native.stale()
    if reasons:
        raise pytest.UsageError(
            "stale compiled modules (mypyc):\n  "
            + "\n  ".join(reasons)
            + "\nrun `make native` (make test does) to rebuild them, or `make pure` to remove"
            " them"
        )


# Locally, each run explores new examples (and keeps failures in .hypothesis/ to replay);
# in CI (CI=true) the examples are derived from the test itself, so a run is repeatable.
settings.register_profile("ci", derandomize=True, database=None)
if os.environ.get("CI"):
    settings.load_profile("ci")


# ---------------------------------------------------------------------------- state stores
# Every test that takes ``db_url`` runs on both stores: the embedded SQLite file and a
# PostgreSQL server this session starts itself (nothing is assumed to be running).


@pytest.fixture(scope="session")
def postgres() -> Iterator[TempPostgres]:
    bin_dir = pg_bin_dir()
    if bin_dir is None:
        pytest.skip(
            "PostgreSQL's initdb and pg_ctl are not installed (apt-get install postgresql, "
            "or set PHALANX_PG_BIN): the PostgreSQL store is not tested"
        )
    # No fsync: these tests measure nothing, and a crash of a process (not of the
    # machine) loses no commit either way.
    server = TempPostgres(bin_dir, durable=False).start()
    yield server
    server.stop()


@pytest.fixture(params=["sqlite", "postgresql"])
def db_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """The URL of an empty state store of each kind."""
    if request.param == "sqlite":
        return sqlite_url(tmp_path / "state.db")
    server: TempPostgres = request.getfixturevalue("postgres")
    return server.new_database()


@pytest.fixture
def stores(db_url: str) -> Iterator[Callable[[], Store]]:
    """Opens the store at ``db_url`` (again and again: a restart), closing each at the end."""
    opened: list[Store] = []

    def open_one() -> Store:
        opened.append(open_store(db_url))
        return opened[-1]

    yield open_one
    for store in opened:
        store.close()
