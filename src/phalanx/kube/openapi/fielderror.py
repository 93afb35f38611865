"""One problem found in an object, worded as kube-apiserver words it.

Two families, answered differently by kube-apiserver:

- ``UnknownField`` and ``DuplicateField`` are *strict decoding* errors: with
  ``fieldValidation=Strict`` the request fails with 400 BadRequest whose message is
  ``<Kind> in version "<v>" cannot be handled as a <Kind>: strict decoding error: <m1>, <m2>``
  (:func:`strict_decoding_message` gives the part after the colon); with ``Warn`` each message is
  one ``Warning`` header; with ``Ignore`` nothing.
- ``DecodeError``: a built-in kind's value of the wrong JSON type, which Go's decoder refuses
  in every mode: 400 BadRequest, ``<Kind> in version "<v>" cannot be handled as a <Kind>:
  json: cannot unmarshal string into Go struct field JobSpec.spec.parallelism of type int32``.
  Only the first is reported (Go stops there) and it wins over strict decoding errors.
- every other reason is a ``field.ErrorType`` of k8s.io/apimachinery (``FieldValueRequired``,
  ``FieldValueInvalid``, ``FieldValueTypeInvalid``, ``FieldValueNotSupported``,
  ``FieldValueTooLong``): the request fails with 422 Invalid, message
  ``<Kind>.<group> "<name>" is invalid: <m1>`` (or ``[<m1>, <m2>]``; :func:`invalid_message`),
  and each error is one ``details.causes`` entry ``{reason, message, field: path}``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

UNKNOWN = "UnknownField"
DUPLICATE = "DuplicateField"
DECODE = "DecodeError"
REQUIRED = "FieldValueRequired"
INVALID = "FieldValueInvalid"
TYPE_INVALID = "FieldValueTypeInvalid"
NOT_SUPPORTED = "FieldValueNotSupported"
TOO_LONG = "FieldValueTooLong"

STRICT_REASONS = frozenset({UNKNOWN, DUPLICATE})
BAD_REQUEST_REASONS = STRICT_REASONS | {DECODE}

# field.ErrorType.String() in k8s.io/apimachinery/pkg/util/validation/field/errors.go.
_TYPE_WORDS = {
    REQUIRED: "Required value",
    INVALID: "Invalid value",
    TYPE_INVALID: "Invalid value",
    NOT_SUPPORTED: "Unsupported value",
    TOO_LONG: "Too long",
}


@dataclass(frozen=True)
class FieldError:
    """``path`` as kube-apiserver writes it (``spec.template.spec.containers[0].imagee``);
    ``reason`` one of the constants above; ``message`` the whole text kube-apiserver shows for
    this one error (``unknown field "spec.foo"``, or ``spec.parallelism: Invalid value: -1:
    must be greater than or equal to 0``)."""

    path: str
    reason: str
    message: str

    @property
    def strict(self) -> bool:
        """A strict decoding error (400 in Strict, a warning in Warn, nothing in Ignore)."""
        return self.reason in STRICT_REASONS

    @property
    def bad_request(self) -> bool:
        """Answered 400 BadRequest (a decoding error), not 422 Invalid."""
        return self.reason in BAD_REQUEST_REASONS


def go_value(value: Any) -> str:
    """A bad value as field.Error prints it: numbers and booleans bare, strings Go-quoted,
    anything else as JSON."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    return json.dumps(value, separators=(",", ":"), sort_keys=True, default=str)


def field_error(path: str, reason: str, value: Any = None, detail: str = "") -> FieldError:
    """A validation (422) error with field.Error's wording: ``path: Type: value: detail``."""
    body = _TYPE_WORDS[reason]
    if reason not in (REQUIRED, TOO_LONG):
        body += ": " + go_value(value)
    if detail:
        body += ": " + detail
    return FieldError(path, reason, f"{path}: {body}")


_GO_ESCAPES = {"\a": "\\a", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r",
               "\t": "\\t", "\v": "\\v", '"': '\\"', "\\": "\\\\"}


def go_quote(text: str) -> str:
    """Go's ``strconv.Quote``: double quotes; ``"`` and ``\\`` escaped; printable runes (Go's
    ``unicode.IsPrint``: letters, marks, numbers, punctuation, symbols and the ASCII space,
    the set ``str.isprintable`` keeps too) as they are; every other rune as ``\\a`` ..
    ``\\v``, ``\\xHH`` (below U+0080), ``\\uHHHH`` or ``\\UHHHHHHHH``; a lone surrogate (not
    UTF-8 at all) byte by byte as ``\\xHH``."""
    out = ['"']
    for ch in text:
        code = ord(ch)
        if ch in _GO_ESCAPES:
            out.append(_GO_ESCAPES[ch])
        elif ch.isprintable():
            out.append(ch)
        elif 0xD800 <= code <= 0xDFFF:
            out.extend(f"\\x{b:02x}" for b in ch.encode("utf-8", "surrogatepass"))
        elif code < 0x80:
            out.append(f"\\x{code:02x}")
        elif code < 0x10000:
            out.append(f"\\u{code:04x}")
        else:
            out.append(f"\\U{code:08x}")
    out.append('"')
    return "".join(out)


def unknown_field(path: str, crd: bool = False) -> FieldError:
    """A built-in kind's unknown field as sigs.k8s.io/json words it (``strconv.Quote`` of the
    path); a CRD's as apiextensions-apiserver's pruning does (``unknown field "%s"``: the
    path as it is, which may hold a control character: ``Warning`` then drops it)."""
    quoted = f'"{path}"' if crd else go_quote(path)
    return FieldError(path, UNKNOWN, f"unknown field {quoted}")


def duplicate_field(path: str) -> FieldError:
    # Both kinds of object are decoded by sigs.k8s.io/json first, which finds duplicates.
    return FieldError(path, DUPLICATE, f"duplicate field {go_quote(path)}")


def decode_error(path: str, json_kind: str, owner: str, dotted: str, go_type: str) -> FieldError:
    """encoding/json's UnmarshalTypeError text for a built-in kind's field."""
    field = f"{owner}.{dotted}"
    return FieldError(
        path,
        DECODE,
        f"json: cannot unmarshal {json_kind} into Go struct field {field} of type {go_type}",
    )


def bad_request_message(errors: list[FieldError]) -> str:
    """What follows ``<Kind> in version "<v>" cannot be handled as a <Kind>: `` in the 400:
    the decoding error if there is one, else the strict decoding errors."""
    for e in errors:
        if e.reason == DECODE:
            return e.message
    return strict_decoding_message(errors)


def strict_decoding_message(errors: list[FieldError]) -> str:
    """runtime.strictDecodingError's text for the strict errors among ``errors``."""
    return "strict decoding error: " + ", ".join(e.message for e in errors if e.strict)


def invalid_message(kind: str, group: str, name: str, errors: list[FieldError]) -> str:
    """apierrors.NewInvalid's message for the validation (422) errors among ``errors``."""
    msgs = [e.message for e in errors if not e.bad_request]
    qualified = f"{kind}.{group}" if group else kind
    body = msgs[0] if len(msgs) == 1 else "[" + ", ".join(msgs) + "]"
    return f'{qualified} "{name}" is invalid: {body}'
