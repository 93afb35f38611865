"""A Kubernetes protobuf message <-> its JSON form, as Go's encoding/json writes the Go struct.

The wire is parsed and written by the `protobuf` runtime (classes built by registry.py); this
module only maps a parsed message to the JSON kube-apiserver would print for the same Go value,
and back. `google.protobuf.json_format` cannot do that: Go decides per field, from struct tags
(our declarations carry them: declare.py), whether a zero value is written (`omitempty`),
whether an absent field is `null` or omitted (pointers), and whether a struct is inlined; and the
apimachinery types (Time, MicroTime, Duration, Quantity, IntOrString, RawExtension, FieldsV1)
have JSON forms of their own.

Contracts:
- `to_json(message)` returns what Go's `json.Marshal` gives for the Go value that Go's protobuf
  `Unmarshal` makes of the message's bytes; map keys sorted, as Go sorts them.
- `into_message(message, value, path)` fills the message as Go's `json.Unmarshal` followed by its
  protobuf `Marshal` would: non-pointer fields are set even when zero (Go writes them), pointer
  fields only when present and not null. Anything Go would reject raises `ValueError` naming the
  JSON path (`Pod.spec.containers[0].ports[0].containerPort: ...`). Unknown JSON keys are
  ignored, as Go's (non-strict) decoder ignores them.

Known differences from Go, none reachable from kubectl's generators: a Quantity given as a JSON
float is read from Python's repr of it, not the document's digits; RawExtension and FieldsV1
bytes are Python's compact JSON, where Go keeps the bytes it was sent; float fields print as
Python writes floats.
"""

from __future__ import annotations

import base64
import binascii
import json
import math
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from functools import partial
from typing import Any, NamedTuple

from phalanx.kube.pb.quantity import canonical
from phalanx.kube.pb.registry import DECLARED

TIME = "meta.Time"
MICRO_TIME = "meta.MicroTime"
DURATION = "meta.Duration"
FIELDS_V1 = "meta.FieldsV1"
QUANTITY = "resource.Quantity"
INT_OR_STRING = "intstr.IntOrString"
RAW_EXTENSION = "runtime.RawExtension"

# Go's zero time.Time (0001-01-01T00:00:00Z) in Unix seconds; its JSON is null.
_GO_ZERO_SECONDS = -62135596800
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_INT_RANGES = {"int32": (-(2**31), 2**31 - 1), "int64": (-(2**63), 2**63 - 1)}


# --- message -> JSON ---------------------------------------------------------------------------


def to_json(message: Any) -> Any:
    """The JSON value Go writes for this message (see the module docstring)."""
    name = message.DESCRIPTOR.full_name
    special = _SPECIAL_TO_JSON.get(name)
    if special is not None:
        return special(message)
    out: dict[str, Any] = {}
    _fields_to_json(message, out)
    return out


_INLINE, _MAP, _LIST, _MESSAGE, _SCALAR = range(5)


class _Field(NamedTuple):
    """One field of a message, with what Go's tags and the descriptor say, looked up once."""

    proto_name: str
    json_name: str
    shape: int  # _INLINE, _MAP, _LIST, _MESSAGE or _SCALAR
    omitempty: bool
    pointer: bool
    descriptor: Any  # the field; for a map, its value field
    holds_messages: bool  # a message field, or a list or map of messages


_PLANS: dict[str, tuple[_Field, ...]] = {}


def _plan(descriptor: Any) -> tuple[_Field, ...]:
    plan = _PLANS.get(descriptor.full_name)
    if plan is None:
        plan = _PLANS[descriptor.full_name] = tuple(
            _planned(descriptor.fields_by_name[proto], json_name, flags)
            for proto, json_name, flags in _fields_of(descriptor)
        )
    return plan


def _planned(field: Any, json_name: str, flags: str) -> _Field:
    target = field
    if "i" in flags:
        shape = _INLINE
    elif _is_map(field):
        shape, target = _MAP, field.message_type.fields_by_name["value"]
    elif field.is_repeated:
        shape = _LIST
    else:
        shape = _MESSAGE if field.message_type is not None else _SCALAR
    return _Field(field.name, json_name, shape, "o" in flags, "p" in flags, target,
                  target.message_type is not None)


def _fields_to_json(message: Any, out: dict[str, Any]) -> None:
    for f in _plan(message.DESCRIPTOR):
        shape = f.shape
        if shape == _SCALAR:
            value = getattr(message, f.proto_name)
            if f.pointer:
                if message.HasField(f.proto_name):
                    out[f.json_name] = _scalar_json(f.descriptor, value)
                elif not f.omitempty:
                    out[f.json_name] = None
            elif value or not f.omitempty:
                out[f.json_name] = _scalar_json(f.descriptor, value)
        elif shape == _MESSAGE:
            if message.HasField(f.proto_name):
                out[f.json_name] = to_json(getattr(message, f.proto_name))
            elif f.pointer:
                if not f.omitempty:
                    out[f.json_name] = None
            else:
                # A non-pointer struct is always written; omitempty never omits a Go struct.
                out[f.json_name] = _zero_json(getattr(message, f.proto_name))
        elif shape == _INLINE:
            _fields_to_json(getattr(message, f.proto_name), out)
        else:
            items = getattr(message, f.proto_name)
            if len(items) == 0:
                # Go's protobuf decoding leaves an empty list or map nil: omitted or null.
                if not f.omitempty:
                    out[f.json_name] = None
            elif shape == _MAP:
                if f.holds_messages:
                    out[f.json_name] = {k: to_json(items[k]) for k in sorted(items)}
                else:
                    out[f.json_name] = {k: _scalar_json(f.descriptor, items[k])
                                        for k in sorted(items)}
            elif f.holds_messages:
                out[f.json_name] = [to_json(v) for v in items]
            else:
                out[f.json_name] = [_scalar_json(f.descriptor, v) for v in items]


def _fields_of(descriptor: Any) -> tuple[tuple[str, str, str], ...]:
    # A declared field's name is its JSON name (an inlined one has none of its own).
    return tuple((f.name, f.name, f.flags) for f in DECLARED[descriptor.full_name].fields)


def _is_map(field: Any) -> bool:
    return field.message_type is not None and field.message_type.GetOptions().map_entry


def _scalar_json(field: Any, value: Any) -> Any:
    if field.type == field.TYPE_BYTES:
        return base64.b64encode(value).decode("ascii")
    if field.type in (field.TYPE_DOUBLE, field.TYPE_FLOAT) and not math.isfinite(value):
        raise ValueError(f"{field.full_name}: {value} has no JSON form")
    return value


def _zero_json(message: Any) -> Any:
    """The JSON of a Go zero value of this message's type (the field was not on the wire)."""
    zero = _SPECIAL_ZERO.get(message.DESCRIPTOR.full_name, _NOT_SPECIAL)
    return to_json(message) if zero is _NOT_SPECIAL else zero


_NOT_SPECIAL = object()
_SPECIAL_ZERO: dict[str, Any] = {
    TIME: None,
    MICRO_TIME: None,
    DURATION: "0s",
    FIELDS_V1: None,
    QUANTITY: "0",
    INT_OR_STRING: 0,
    RAW_EXTENSION: None,
}


def _time_json(message: Any, micro: bool) -> Any:
    # Go writes a zero time as an empty message and reads an empty message as the zero time.
    if not message.HasField("seconds") and not message.HasField("nanos"):
        return None
    seconds = message.seconds
    if seconds == _GO_ZERO_SECONDS and (not micro or message.nanos // 1000 == 0):
        return None
    try:
        moment = datetime.fromtimestamp(seconds, UTC)
    except (OverflowError, OSError, ValueError) as e:
        raise ValueError(f"time {seconds}s is out of range") from e
    if not micro:
        # metav1.Time keeps whole seconds only (its Unmarshal drops nanos).
        return moment.strftime("%Y-%m-%dT%H:%M:%SZ")
    if not 0 <= message.nanos < 1_000_000_000:
        raise ValueError(f"nanos {message.nanos} out of range")
    return moment.strftime("%Y-%m-%dT%H:%M:%S") + f".{message.nanos // 1000:06d}Z"


def _quantity_json(message: Any) -> str:
    # An empty message is Go's zero Quantity; a string is parsed, as Go's Unmarshal does.
    return canonical(message.string) if message.HasField("string") else "0"


def _int_or_string_json(message: Any) -> Any:
    if message.type == 0:
        return message.intVal
    if message.type == 1:
        return message.strVal
    raise ValueError(f"IntOrString type {message.type} is neither 0 (int) nor 1 (string)")


def _raw_json(raw: bytes, what: str) -> Any:
    if not raw:
        return None
    try:
        return json.loads(raw)
    except ValueError as e:
        raise ValueError(f"{what} holds no JSON: {e}") from e


_SPECIAL_TO_JSON: dict[str, Callable[[Any], Any]] = {
    TIME: lambda m: _time_json(m, micro=False),
    MICRO_TIME: lambda m: _time_json(m, micro=True),
    DURATION: lambda m: go_duration(m.duration),
    FIELDS_V1: lambda m: _raw_json(m.raw, "fieldsV1"),
    QUANTITY: _quantity_json,
    INT_OR_STRING: _int_or_string_json,
    RAW_EXTENSION: lambda m: _raw_json(m.raw, "RawExtension"),
}


def go_duration(ns: int) -> str:
    """Go's `time.Duration.String()`: "1h2m3.5s", "1.5ms", "0s"."""
    if ns == 0:
        return "0s"
    sign, ns = ("-", -ns) if ns < 0 else ("", ns)
    if ns < 1_000_000_000:
        for unit, size in (("ms", 1_000_000), ("µs", 1_000), ("ns", 1)):
            if ns >= size:
                return sign + _decimal(ns, size) + unit
    hours, rest = divmod(ns, 3_600_000_000_000)
    minutes, rest = divmod(rest, 60_000_000_000)
    text = _decimal(rest, 1_000_000_000) + "s"
    if hours:
        return f"{sign}{hours}h{minutes}m{text}"
    if minutes:
        return f"{sign}{minutes}m{text}"
    return sign + text


def _decimal(value: int, unit: int) -> str:
    whole, frac = divmod(value, unit)
    if not frac:
        return str(whole)
    digits = len(str(unit)) - 1
    return f"{whole}." + f"{frac:0{digits}d}".rstrip("0")


# --- JSON -> message ---------------------------------------------------------------------------


def into_message(message: Any, value: Any, path: str) -> None:
    """Fill `message` from its JSON `value` as Go would (see the module docstring)."""
    name = message.DESCRIPTOR.full_name
    special = _SPECIAL_FROM_JSON.get(name)
    if special is not None:
        special(message, value, path)
        return
    if value is None:
        value = {}
    if not isinstance(value, dict):
        raise ValueError(f"{path}: expected an object, got {_kind(value)}")
    _fields_from_json(message, value, path)


def _fields_from_json(message: Any, obj: dict[str, Any], path: str) -> None:
    for f in _plan(message.DESCRIPTOR):
        shape = f.shape
        if shape == _INLINE:
            inline = getattr(message, f.proto_name)
            inline.SetInParent()
            _fields_from_json(inline, obj, path)
            continue
        value = obj.get(f.json_name)
        if value is None:
            if shape == _SCALAR and not f.pointer:
                # Go writes every non-pointer field, its zero value included.
                setattr(message, f.proto_name, _scalar(f.descriptor, None, ""))
            elif shape == _MESSAGE and not f.pointer:
                sub = getattr(message, f.proto_name)
                sub.SetInParent()
                into_message(sub, None, "")
            continue
        where = f"{path}.{f.json_name}"
        if shape == _SCALAR:
            setattr(message, f.proto_name, _scalar(f.descriptor, value, where))
        elif shape == _MESSAGE:
            sub = getattr(message, f.proto_name)
            sub.SetInParent()
            into_message(sub, value, where)
        elif shape == _MAP:
            _map_from_json(getattr(message, f.proto_name), f, value, where)
        elif f.holds_messages:
            container = getattr(message, f.proto_name)
            for i, item in enumerate(_checked_list(value, where, lambda v, p: v)):
                into_message(container.add(), item, f"{where}[{i}]")
        else:
            getattr(message, f.proto_name).extend(
                _checked_list(value, where, partial(_scalar, f.descriptor))
            )


def _map_from_json(container: Any, f: _Field, value: Any, path: str) -> None:
    if not isinstance(value, dict):
        raise ValueError(f"{path}: expected an object, got {_kind(value)}")
    for key, item in value.items():
        if f.holds_messages:
            into_message(container[key], item, f"{path}[{key!r}]")
        else:
            container[key] = _scalar(f.descriptor, item, f"{path}[{key!r}]")


def _checked_list(value: Any, path: str, each: Callable[[Any, str], Any]) -> list[Any]:
    if not isinstance(value, list):
        raise ValueError(f"{path}: expected a list, got {_kind(value)}")
    return [each(v, f"{path}[{i}]") for i, v in enumerate(value)]


def _scalar(field: Any, value: Any, path: str) -> Any:
    """A JSON scalar checked as Go's json.Unmarshal checks it; null is the Go zero value."""
    kind = field.type
    if kind == field.TYPE_STRING:
        return "" if value is None else _string(value, path)
    if kind == field.TYPE_BOOL:
        if value is None:
            return False
        if not isinstance(value, bool):
            raise ValueError(f"{path}: expected a boolean, got {_kind(value)}")
        return value
    if kind == field.TYPE_BYTES:
        if value is None:
            return b""
        try:
            return base64.b64decode(_string(value, path), validate=True)
        except binascii.Error as e:
            raise ValueError(f"{path}: not base64: {e}") from e
    if kind in (field.TYPE_DOUBLE, field.TYPE_FLOAT):
        if value is None:
            return 0.0
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise ValueError(f"{path}: expected a number, got {_kind(value)}")
        return float(value)
    bits = "int32" if kind == field.TYPE_INT32 else "int64"
    if value is None:
        return 0
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"{path}: expected an integer, got {_kind(value)}")
    low, high = _INT_RANGES[bits]
    if not low <= value <= high:
        raise ValueError(f"{path}: {value} does not fit in {bits}")
    return value


def _string(value: Any, path: str) -> str:
    if not isinstance(value, str):
        raise ValueError(f"{path}: expected a string, got {_kind(value)}")
    return value


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    return {dict: "an object", list: "a list", str: "a string", bool: "a boolean"}.get(
        type(value), "a number"
    )


def _time_from_json(message: Any, value: Any, path: str) -> None:
    if value is None:
        return  # Go's zero time: written as an empty message.
    text = _string(value, path)
    try:
        moment = datetime.fromisoformat(text.replace("z", "Z"))
    except ValueError as e:
        raise ValueError(f"{path}: {text!r} is not an RFC 3339 time") from e
    if moment.tzinfo is None or "T" not in text.upper():
        raise ValueError(f"{path}: {text!r} is not an RFC 3339 time (no time zone)")
    # Exact integer seconds: a float timestamp rounds .999999 up in far years.
    seconds = (moment - _EPOCH) // timedelta(seconds=1)
    if seconds == _GO_ZERO_SECONDS and moment.microsecond == 0:
        return
    message.seconds = seconds
    message.nanos = moment.microsecond * 1000


def _duration_from_json(message: Any, value: Any, path: str) -> None:
    message.duration = parse_go_duration(_string(value, path), path) if value is not None else 0


_DURATION_UNITS = {"ns": 1, "us": 1_000, "µs": 1_000, "μs": 1_000, "ms": 1_000_000,
                   "s": 1_000_000_000, "m": 60_000_000_000, "h": 3_600_000_000_000}


def parse_go_duration(text: str, path: str) -> int:
    """Go's `time.ParseDuration`, in nanoseconds ("1h30m", "-1.5s", "0")."""
    rest, sign = text, 1
    if rest[:1] in "+-" and rest:
        sign, rest = (-1 if rest[0] == "-" else 1), rest[1:]
    if rest == "0":
        return 0
    total, ok = 0, bool(rest)
    while rest and ok:
        number = ""
        while rest and (rest[0].isdecimal() or rest[0] == "."):
            number, rest = number + rest[0], rest[1:]
        unit = next((u for u in sorted(_DURATION_UNITS, key=len, reverse=True)
                     if rest.startswith(u)), None)
        ok = bool(number.strip(".")) and number.count(".") <= 1 and unit is not None
        if ok and unit is not None:
            whole, _, frac = number.partition(".")
            size = _DURATION_UNITS[unit]
            total += int(whole or "0") * size + (int(frac) * size // 10 ** len(frac) if frac else 0)
            rest = rest[len(unit):]
    if not ok or total >= 2**63:
        raise ValueError(f"{path}: {text!r} is not a Go duration")
    return sign * total


def _quantity_from_json(message: Any, value: Any, path: str) -> None:
    # Go parses the text (a JSON number's own digits) and writes it back canonical.
    if isinstance(value, bool) or not isinstance(value, str | int | float | type(None)):
        raise ValueError(f"{path}: a quantity is a string or a number, got {_kind(value)}")
    try:
        message.string = "0" if value is None else canonical(str(value).strip())
    except ValueError as e:
        raise ValueError(f"{path}: {value!r} is not a quantity: {e}") from e


def _int_or_string_from_json(message: Any, value: Any, path: str) -> None:
    message.type = 0
    message.intVal = 0
    message.strVal = ""
    if isinstance(value, str):
        message.type = 1
        message.strVal = value
    elif value is not None:
        bits = message.DESCRIPTOR.fields_by_name["intVal"]
        message.intVal = _scalar(bits, value, path)


def _raw_from_json(attribute: str) -> Callable[[Any, Any, str], None]:
    def fill(message: Any, value: Any, path: str) -> None:
        if value is not None:
            # Go keeps the bytes it was given; compact JSON is what its encoder gives.
            setattr(message, attribute,
                    json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode())
    return fill


_SPECIAL_FROM_JSON: dict[str, Callable[[Any, Any, str], None]] = {
    TIME: _time_from_json,
    MICRO_TIME: _time_from_json,
    DURATION: _duration_from_json,
    FIELDS_V1: _raw_from_json("raw"),
    QUANTITY: _quantity_from_json,
    INT_OR_STRING: _int_or_string_from_json,
    RAW_EXTENSION: _raw_from_json("raw"),
}
