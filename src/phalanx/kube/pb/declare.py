"""The notation our Kubernetes message declarations (meta.py, core.py, apps.py, ...) are written in.

A declaration states, per message, what the wire and Go's JSON need: each field's number, its
JSON name (also its name here), its type, whether it repeats or is a map<string, V>, and the Go
struct tag facts that decide the JSON form: `o` omitempty, `p` a Go pointer (absent unless set),
`i` inlined (the field's own fields appear in the parent's JSON object). Fields are listed in Go
declaration order, the order Go writes JSON keys in.

A message may be declared in part (PodSpec, Container, ...), but only by leaving out fields Go
does not write when unset: pointers, slices and maps. Go writes every non-pointer scalar and
struct even when zero, so leaving one out would change the bytes encode writes.

Types are the scalars below or a message's full name, `package.Name` ("meta.ObjectMeta"); the
package is ours (one per API group version we declare), not upstream's, since protobuf's wire
format carries numbers only.
"""

from __future__ import annotations

from typing import NamedTuple

STR, I32, I64, BOOL, BYTES, DBL = "string", "int32", "int64", "bool", "bytes", "double"
SCALARS = frozenset({STR, I32, I64, BOOL, BYTES, DBL})

__all__ = ["BOOL", "BYTES", "DBL", "I32", "I64", "SCALARS", "STR", "F", "Field", "L", "M",
           "Message", "message"]


class Field(NamedTuple):
    """One field of a message (see the module docstring for the flags)."""

    number: int
    name: str
    type: str
    flags: str = ""
    repeated: bool = False
    map: bool = False  # map<string, type>

    @property
    def omitempty(self) -> bool:
        return "o" in self.flags

    @property
    def pointer(self) -> bool:
        return "p" in self.flags

    @property
    def inline(self) -> bool:
        return "i" in self.flags


class Message(NamedTuple):
    """A message: its full name ("core.Pod") and its fields in Go declaration order."""

    name: str
    fields: tuple[Field, ...]

    @property
    def package(self) -> str:
        return self.name.partition(".")[0]


def F(number: int, name: str, type_: str, flags: str = "") -> Field:
    """A singular field."""
    return Field(number, name, type_, flags)


def L(number: int, name: str, type_: str, flags: str = "") -> Field:
    """A repeated field (a Go slice)."""
    return Field(number, name, type_, flags, repeated=True)


def M(number: int, name: str, type_: str, flags: str = "") -> Field:
    """A map<string, type_> field (a Go map keyed by string)."""
    return Field(number, name, type_, flags, map=True)


def message(name: str, *fields: Field) -> Message:
    """A message declaration; `name` is "package.Name"."""
    return Message(name, fields)
