"""Kubernetes quantities: the suffixes, exponents and rounding of ``resource.ParseQuantity``."""

from __future__ import annotations

import pytest

from phalanx.domain.quantity import format_quantity, parse_quantity
from phalanx.errors import InputError


@pytest.mark.parametrize(
    ("text", "milli"),
    [
        ("8", 8_000),
        ("500m", 500),
        ("0.5", 500),
        (".5", 500),
        ("1.5", 1_500),
        ("64Gi", 64 * 2**30 * 1_000),
        ("36Gi", 36 * 2**30 * 1_000),
        ("1Ki", 1_024_000),
        ("2k", 2_000_000),
        ("1M", 10**9),
        ("2e3", 2_000_000),
        ("1E2", 100_000),  # an exponent, not exa: Kubernetes reads "1E2" as 100
        ("-1", -1_000),
        ("1n", 1),  # finer than a thousandth rounds up, as MilliValue does
        ("100u", 1),
    ],
)
def test_parses_as_kubernetes_does(text: str, milli: int) -> None:
    assert parse_quantity(text) == milli


@pytest.mark.parametrize("text", ["x", "", "8 Gi", "1.2.3", "Gi", "1GB", "1e", "0x10"])
def test_refuses_what_kubernetes_refuses(text: str) -> None:
    with pytest.raises(InputError, match="not a quantity"):
        parse_quantity(text, field="spec.x")


def test_formats_back() -> None:
    assert format_quantity(64 * 2**30 * 1000, "memory") == "64Gi"
    assert format_quantity(500, "cpu") == "500m"
    assert format_quantity(8000, "nvidia.com/gpu") == "8"
