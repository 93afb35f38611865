"""resource.Quantity's text as Go writes it: `canonical("1.5") == "1500m"`.

Go parses every Quantity it reads (from JSON or protobuf) with `ParseQuantity` and writes it with
`String()`, so a served object never holds "1.5", "1e3" or "1024Mi" but "1500m", "1e3" and
"1Gi". This follows apimachinery v0.32.4's pkg/api/resource/quantity.go: the parser's loops, the
"already canonical" fast path that keeps the text as written, rounding up to 1n, the BinarySI cap
at 2^63-1, and CanonicalizeBytes' choice of format and suffix.
"""

from __future__ import annotations

from fractions import Fraction

_DECIMAL_SUFFIXES = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12,
                     "P": 15, "E": 18}
_BINARY_SUFFIXES = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}
_DECIMAL_NAMES = {e: s for s, e in _DECIMAL_SUFFIXES.items()}
_BINARY_NAMES = {e: s for s, e in _BINARY_SUFFIXES.items()}
_INT64_MAX = 2**63 - 1
_SUFFIX_CHARS = set("eEinumkKMGTP")


def canonical(text: str) -> str:
    """Go's `ParseQuantity(text).String()`; ValueError where ParseQuantity fails."""
    if not text:
        raise ValueError("quantities must match the regular expression "
                         "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'")
    positive, num, denom, suffix = _split(text)
    base, exponent, decimal_format = _interpret(suffix, text)
    cached = _fast_path(text, positive, num, denom, base, exponent, decimal_format)
    if cached is not None:
        return cached
    sign = 1 if positive else -1
    digits = int(num + denom)
    if base == 10:
        # Kept as digits and a power of ten: "1e2000000000" is cheap in Go and must be here.
        mantissa, exp10 = _round_up_to_nanos(digits, exponent - len(denom))
        return _decimal(sign * mantissa, exp10, decimal_format)
    value = Fraction(digits, 10 ** len(denom)) * 2**exponent
    nanos = value * 10**9
    if nanos.denominator != 1:
        # ParseQuantity rounds a non-zero amount up (away from zero) to whole nanos.
        value = Fraction(-(-nanos.numerator // nanos.denominator), 10**9)
    return _binary(sign * min(value, Fraction(_INT64_MAX)))


def _round_up_to_nanos(mantissa: int, exp10: int) -> tuple[int, int]:
    if mantissa == 0 or exp10 >= -9:
        return mantissa, exp10
    shift = -9 - exp10
    if shift > len(str(mantissa)):
        return 1, -9
    whole, rest = divmod(mantissa, 10**shift)
    return whole + (1 if rest else 0), -9


def _split(text: str) -> tuple[bool, str, str, str]:
    """parseQuantityString: sign, integer digits, fraction digits, suffix."""
    pos, end, positive = 0, len(text), True
    if text[0] in "+-":
        positive, pos = text[0] == "+", 1
    while pos < end and text[pos] == "0":
        pos += 1
    if pos >= end:
        return positive, "0", "", ""
    start = pos
    while pos < end and text[pos].isascii() and text[pos].isdigit():
        pos += 1
    num = text[start:pos] or "0"
    denom = ""
    if pos < end and text[pos] == ".":
        pos += 1
        start = pos
        while pos < end and text[pos].isascii() and text[pos].isdigit():
            pos += 1
        denom = text[start:pos]
    suffix_start = pos
    while pos < end and text[pos] in _SUFFIX_CHARS:
        pos += 1
    if pos < end and text[pos] in "+-":
        pos += 1
    while pos < end and text[pos].isascii() and text[pos].isdigit():
        pos += 1
    if pos < end:
        raise ValueError("quantities must match the regular expression "
                         "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'")
    return positive, num, denom, text[suffix_start:]


def _interpret(suffix: str, text: str) -> tuple[int, int, bool | None]:
    """(base, exponent, format): True DecimalSI, False BinarySI, None DecimalExponent."""
    if suffix in _DECIMAL_SUFFIXES:
        return 10, _DECIMAL_SUFFIXES[suffix], True
    if suffix in _BINARY_SUFFIXES:
        return 2, _BINARY_SUFFIXES[suffix], False
    if len(suffix) > 1 and suffix[0] in "eE":
        digits = suffix[1:]
        body = digits[1:] if digits[:1] in "+-" else digits
        if body.isascii() and body.isdigit():
            exponent = int(digits)
            if -(2**63) <= exponent < 2**63:
                # Go keeps int32(parsed): the exponent wraps as Go's conversion does.
                return 10, (exponent + 2**31) % 2**32 - 2**31, None
    raise ValueError(f"unable to parse quantity's suffix in {text!r}")


def _fast_path(text: str, positive: bool, num: str, denom: str, base: int, exponent: int,
               decimal_format: bool | None) -> str | None:
    """ParseQuantity keeps the text as written when it is already canonical."""
    if base == 10:
        scale, precision = exponent, 18 - (len(num) + len(denom))
        mantissa = 1
    elif exponent >= 0 and not denom:
        scale, mantissa = 0, 1 << exponent
        precision = 15 - len(num) - int(exponent * 3 / 10) - 1
    else:
        return None
    if precision < 0:
        return None
    scale -= len(denom)
    if scale < -9:
        return None
    shifted = num + denom
    value = int(shifted)
    if abs(value * mantissa) > _INT64_MAX:
        return None
    if decimal_format is False:
        if exponent % 10 == 0 and value & 0x07 != 0:
            return text
    elif scale % 3 == 0 and not shifted.endswith("000") and shifted[0] != "0":
        return text
    signed = value * mantissa if positive else -value * mantissa
    if decimal_format is False:
        return _binary(Fraction(signed))
    return _decimal(signed, scale, decimal_format)


def _binary(value: Fraction) -> str:
    """CanonicalizeBytes for a BinarySI quantity: small or fractional ones print as DecimalSI."""
    if -1024 < value < 1024 or value.denominator != 1:
        return _decimal(int(value * 10**9), -9, True)
    amount, times = int(value), 0
    while abs(amount) >= 1024 and abs(amount) % 1024 == 0:
        amount, times = amount // 1024, times + 1
    return f"{amount}{_BINARY_NAMES.get(times * 10, '')}"


def _decimal(mantissa: int, exp10: int, decimal_format: bool | None) -> str:
    """CanonicalizeBytes for mantissa * 10**exp10: no trailing zeros, exponent a multiple of 3."""
    if mantissa == 0:
        return "0"
    text = str(abs(mantissa))
    stripped = text.rstrip("0")
    exp10 += len(text) - len(stripped)
    amount = int(stripped)
    while exp10 % 3:
        amount, exp10 = amount * 10, exp10 - 1
    number = f"-{amount}" if mantissa < 0 else str(amount)
    if decimal_format is None:
        return f"{number}e{exp10}" if exp10 else number
    # Go finds no DecimalSI suffix past E (or below n) and writes the digits alone.
    return number + _DECIMAL_NAMES.get(exp10, "")
