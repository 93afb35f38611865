"""The public surface of ``phalanx`` is what ``__all__`` says, pinned here (as httpx does): a
name added or removed is a decision, made in this list too."""

from __future__ import annotations

import subprocess
import sys

import phalanx

PUBLIC = {
    "DAY",
    "HOUR",
    "MINUTE",
    "POLICIES",
    "SECOND",
    "Client",
    "Cluster",
    "ConfigError",
    "Conflict",
    "Duration",
    "Engine",
    "Fenced",
    "InputError",
    "Instant",
    "JobSpec",
    "JobState",
    "LocalCluster",
    "NotAllowed",
    "NotFound",
    "PhalanxError",
    "Profile",
    "Reason",
    "Simulator",
    "SpecError",
    "StateStoreError",
    "Status",
    "TraceError",
    "__version__",
    "cluster_from_yaml",
    "profile",
    "read_trace",
    "regular_cluster",
}


def test_all_is_the_pinned_public_surface() -> None:
    assert set(phalanx.__all__) == PUBLIC
    assert len(phalanx.__all__) == len(PUBLIC)  # no name twice


def test_every_public_name_resolves_to_its_defining_object() -> None:
    for name in phalanx.__all__:
        value = getattr(phalanx, name)
        assert value is not None, name
    from phalanx.engine.engine import Engine
    from phalanx.errors import PhalanxError

    assert phalanx.Engine is Engine
    assert phalanx.PhalanxError is PhalanxError
    assert issubclass(phalanx.TraceError, phalanx.InputError)


def test_an_unknown_name_is_an_attribute_error() -> None:
    try:
        phalanx.not_a_name  # noqa: B018
    except AttributeError as err:
        assert "not_a_name" in str(err)
    else:
        raise AssertionError("phalanx.not_a_name resolved")


def test_importing_the_package_imports_nothing_heavy() -> None:
    # The Slurm commands and the agent import ``phalanx`` first: it must stay cheap.
    code = (
        "import sys, phalanx; "
        "print(sorted(m for m in sys.modules if m.startswith('phalanx.') "
        "or m in ('numpy', 'pydantic', 'httpx', 'yaml', 'typing')))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    assert done.stdout.strip() == "[]", done.stdout
