"""The plugin registry: ``<major>/<minor>`` ids, and out-of-tree plugins found through the
``phalanx.plugins`` entry-point group of an installed distribution."""

from __future__ import annotations

import dataclasses
import textwrap
from pathlib import Path

import pytest

from phalanx.domain.state import JobState
from phalanx.errors import ConfigError
from phalanx.policies import catalog
from phalanx.sched.registry import Registry
from phalanx.testing import EngineDriver, make_job, small_cluster


def fake_distribution(root: Path, entry_points: str, module: str) -> None:
    """A tiny installed distribution, as ``pip install`` leaves it on sys.path."""
    (root / "fakeplugins.py").write_text(textwrap.dedent(module))
    info = root / "fakeplugins-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: fakeplugins\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(textwrap.dedent(entry_points))


LAST_NODE = """
    from phalanx.domain.state import Reason
    from phalanx.sched.status import OK, Status

    class LastNode:
        '''select/last: the highest-numbered nodes that pass the filter.'''
        def __init__(self, params):
            self.params = dict(params)
        def place(self, state, cap, shape, mask, nodes, max_leaves):
            idx = [int(i) for i in mask.nonzero()[0]]
            return idx[-nodes:] if len(idx) >= nodes else None

    class NoAccount:
        '''admit/no-account: refuses the account named in its parameters.'''
        def __init__(self, params):
            self.account = params["account"]
        def pre_filter(self, job, ctx):
            if job.account == self.account:
                return Status.wait(Reason.QOS_QUOTA, "admit/no-account")
            return OK
"""

ENTRY_POINTS = """
    [phalanx.plugins]
    select/last = fakeplugins:LastNode
    admit/no-account = fakeplugins:NoAccount
"""


@pytest.fixture
def installed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    fake_distribution(tmp_path, ENTRY_POINTS, LAST_NODE)
    monkeypatch.syspath_prepend(str(tmp_path))
    return tmp_path


def test_an_entry_point_plugin_is_created_by_its_id_with_its_params(installed: Path) -> None:
    registry = Registry()
    plugin = registry.create("select/last", {"k": 1})
    assert type(plugin).__name__ == "LastNode" and plugin.params == {"k": 1}
    assert {"select/last", "admit/no-account"} <= set(registry.ids())


def test_an_unknown_id_names_the_known_ones() -> None:
    registry = Registry(group="phalanx.no-such-group")
    registry.register("select/one", lambda params: object())
    with pytest.raises(ConfigError, match=r"unknown plugin 'select/two'; known: select/one"):
        registry.create("select/two", {})


def test_ids_must_be_major_minor_and_unique() -> None:
    registry = Registry()
    for bad in ("select", "/x", "select/", "a/b/c"):
        with pytest.raises(ValueError, match="<major>/<minor>"):
            registry.register(bad, lambda params: object())
    registry.register("select/x", lambda params: object())
    with pytest.raises(ValueError, match="registered twice"):
        registry.register("select/x", lambda params: object())


def test_a_bad_entry_point_is_a_configuration_error_naming_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake_distribution(tmp_path, "[phalanx.plugins]\nnoslash = fakeplugins:X\n", "X = 1\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(ConfigError, match=r"'noslash'.*fakeplugins"):
        Registry().create("select/anything", {})


def test_an_entry_point_may_not_take_a_built_in_id(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake_distribution(tmp_path, "[phalanx.plugins]\nselect/spread = fakeplugins:X\n", "X = 1\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    registry = Registry()
    registry.register("select/spread", lambda params: object())
    with pytest.raises(ConfigError, match="already registered"):
        registry.load_entry_points()


def fresh_catalog(monkeypatch: pytest.MonkeyPatch) -> None:
    """The engine's registry as a new process has it: built-ins only, entry points unread."""
    reg = catalog.REGISTRY
    monkeypatch.setattr(reg, "_factories", dict(reg._factories))
    monkeypatch.setattr(reg, "_loaded", False)


def test_a_profile_runs_out_of_tree_plugins_at_their_points(
    installed: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fresh_catalog(monkeypatch)
    profile = dataclasses.replace(
        catalog.POLICIES["fifo"],
        name="custom",
        score="select/last",
        pre_filter=("admit/no-account",),
        params={"admit/no-account": {"account": "blocked"}},
    )
    d = EngineDriver(small_cluster(nodes=4, gpus=8, per_leaf=2), profile)
    [refused] = d.submit(make_job(gpus=8, account="blocked"))
    [placed] = d.submit(make_job(gpus=8, account="free"))
    d.settle()
    assert d.state(refused) is JobState.PENDING
    assert d.job(refused).reason_plugin == "admit/no-account"
    assert d.state(placed) is JobState.RUNNING
    alloc = d.job(placed).alloc
    assert alloc is not None and alloc.nodes == (3,)  # the last node, not topology's best fit
