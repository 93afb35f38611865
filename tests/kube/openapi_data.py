"""Shared by the kube.openapi tests: where the example manifests are, and a skip when the
vendored documents were not built (they are made from upstream mirrors, not committed)."""

from __future__ import annotations

from pathlib import Path

import pytest

from phalanx.kube.openapi import catalog

EXAMPLES = Path("/work/shared/k8s-examples")


def built() -> bool:
    return (catalog.data_dir() / "index.json").exists()


needs_data = pytest.mark.skipif(
    not built(),
    reason="OpenAPI data not built: python -m phalanx.kube.openapi.vendor --mirrors ... --out ...",
)
needs_examples = pytest.mark.skipif(not EXAMPLES.is_dir(), reason=f"{EXAMPLES} is absent")
