"""Shared by the kube.openapi tests: where the example manifests are, and a skip when the
built-in schemas' package (kubernetes-validate, a runtime dependency) is not installed."""

from __future__ import annotations

from pathlib import Path

import pytest

from phalanx.kube.openapi import available

EXAMPLES = Path("/work/shared/k8s-examples")


def built() -> bool:
    return available()


needs_data = pytest.mark.skipif(
    not built(), reason="the kubernetes-validate package (a runtime dependency) is not installed"
)
needs_examples = pytest.mark.skipif(not EXAMPLES.is_dir(), reason=f"{EXAMPLES} is absent")
