"""Kubernetes resource quantities (``8``, ``500m``, ``64Gi``, ``1.5``, ``2e3``) as exact integers.

A quantity is kept in thousandths of its unit (Kubernetes' ``MilliValue``), so ``500m`` CPUs is
500, ``8`` GPUs is 8000 and ``64Gi`` of memory is 64 * 2**30 * 1000. Sums and comparisons are
exact; a quantity finer than a thousandth (``1n``) rounds up, as ``MilliValue`` does.
"""

from __future__ import annotations

import re
from fractions import Fraction

from phalanx.errors import InputError

__all__ = ["GPU", "MILLI_UNITS", "format_quantity", "parse_quantity"]

MILLI_UNITS = 1000
"""One whole unit (a CPU, a GPU, a byte) in the thousandths quantities are kept in."""

GPU = "nvidia.com/gpu"
"""The GPU resource name (NVIDIA's device plugin)."""

_BINARY = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
_DECIMAL = {
    "n": Fraction(1, 10**9),
    "u": Fraction(1, 10**6),
    "m": Fraction(1, 10**3),
    "": Fraction(1),
    "k": Fraction(10**3),
    "M": Fraction(10**6),
    "G": Fraction(10**9),
    "T": Fraction(10**12),
    "P": Fraction(10**15),
    "E": Fraction(10**18),
}
# Kubernetes' grammar: sign, digits with an optional fraction, then a binary suffix, a decimal
# suffix or a decimal exponent (``resource.ParseQuantity``).
_QUANTITY = re.compile(
    r"^([+-]?)(\d+(?:\.\d*)?|\.\d+)(Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE]|[eE][+-]?\d+)?$"
)


def parse_quantity(text: str, *, field: str | None = None) -> int:
    """``text`` as thousandths of its unit. Raises ``InputError`` (naming ``field``) for
    anything Kubernetes would not parse."""
    match = _QUANTITY.match(text.strip())
    if match is None:
        raise InputError(f"not a quantity: {text!r}", field=field)
    sign, number, suffix = match.groups()
    value = Fraction(number)
    if suffix is None:
        pass
    elif suffix in _BINARY:
        value *= _BINARY[suffix]
    elif suffix in _DECIMAL:
        value *= _DECIMAL[suffix]
    else:
        value *= Fraction(10) ** int(suffix[1:])
    milli = value * MILLI_UNITS
    whole = -((-milli.numerator) // milli.denominator)  # round up, as MilliValue does
    return -whole if sign == "-" else whole


def format_quantity(milli: int, resource: str = "") -> str:
    """A quantity as users write it: ``64Gi`` for memory in whole GiB, ``500m`` for a part of
    a unit, else the plain number."""
    if milli % MILLI_UNITS:
        return f"{milli}m"
    units = milli // MILLI_UNITS
    if resource == "memory" and units:
        for suffix in ("Ti", "Gi", "Mi", "Ki"):
            size = _BINARY[suffix]
            if units % size == 0:
                return f"{units // size}{suffix}"
    return str(units)
