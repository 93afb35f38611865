"""Label (equality- and set-based) and field selectors."""

from __future__ import annotations

from typing import Any

import pytest

from phalanx.kube.errors import BadRequest
from phalanx.kube.selectors import field_selector, label_selector


def obj(labels: dict[str, str], phase: str = "Running") -> dict[str, Any]:
    return {
        "metadata": {"name": "p", "namespace": "ns", "labels": labels},
        "status": {"phase": phase},
    }


@pytest.mark.parametrize(
    ("selector", "labels", "hit"),
    [
        ("app=a", {"app": "a"}, True),
        ("app==a", {"app": "b"}, False),
        ("app!=a", {}, True),
        ("app in (a, b),tier", {"app": "b", "tier": "x"}, True),
        ("app in (a,b),tier", {"app": "b"}, False),
        ("app notin (a,b)", {"app": "c"}, True),
        ("!canary", {"canary": "1"}, False),
        ("gpus>4", {"gpus": "8"}, True),
        ("gpus<4", {"gpus": "8"}, False),
        ("example.com/team=x", {"example.com/team": "x"}, True),
    ],
)
def test_label_selectors(selector: str, labels: dict[str, str], hit: bool) -> None:
    pred = label_selector(selector)
    assert pred is not None and pred(obj(labels)) is hit


@pytest.mark.parametrize("bad", ["app=a b", "-x=1", "gpus>four"])
def test_bad_label_selectors_are_bad_requests(bad: str) -> None:
    with pytest.raises(BadRequest):
        label_selector(bad)


def test_field_selectors() -> None:
    running = field_selector("status.phase=Running,metadata.namespace=ns", "pods")
    assert running is not None and running(obj({})) and not running(obj({}, "Pending"))
    not_p = field_selector("metadata.name!=p", "jobs")
    assert not_p is not None and not not_p(obj({}))
    with pytest.raises(BadRequest, match="not a known field selector"):
        field_selector("status.phase=Running", "jobs")
