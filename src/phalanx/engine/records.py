"""The base of the engine's small records (timer keys, commands, decisions): written out by
hand, not by ``dataclasses``.

The engine makes several per event, in its hottest paths. A dataclass's ``__init__`` is code
that ``dataclasses`` generates at run time, so mypyc does not compile it (a frozen one even
sets each field through ``object.__setattr__``): about 4 % of a compiled simulation went
there. A record here sets its fields in an ``__init__`` of its own, compiled with its module
(``tools/native.py``), and behaves as the frozen dataclass it was: its fields are named in
``__match_args__`` (and its ``__slots__``), its ``repr`` is the dataclass's (decision logs
are compared, and hashed, by their ``repr``), two records are equal when they are of the same
type with equal fields, and hash as the tuple of their fields. It pickles as a call of its
class with its fields (``__reduce__``). Records are not frozen at run time: nothing assigns
a field after ``__init__`` (``mypy`` sees them as ordinary attributes; keep it so).
"""

from __future__ import annotations

from typing import Any, ClassVar, TypeVar

from mypy_extensions import mypyc_attr

__all__ = ["Record"]

R = TypeVar("R", bound="Record")


@mypyc_attr(allow_interpreted_subclasses=True)
class Record:
    __slots__ = ()
    __match_args__: ClassVar[tuple[str, ...]] = ()

    def fields(self) -> tuple[Any, ...]:
        """The values of the fields, in order."""
        return tuple([getattr(self, name) for name in self.__match_args__])

    def replace(self: R, **changes: Any) -> R:
        """A copy with ``changes`` to some fields (what ``dataclasses.replace`` did)."""
        values = {name: getattr(self, name) for name in self.__match_args__}
        unknown = changes.keys() - values.keys()
        if unknown:
            raise TypeError(f"{type(self).__name__} has no field {sorted(unknown)[0]!r}")
        values.update(changes)
        cls: Any = type(self)
        copy: R = cls(**values)
        return copy

    def __repr__(self) -> str:
        inner = ", ".join([f"{name}={getattr(self, name)!r}" for name in self.__match_args__])
        return f"{type(self).__qualname__}({inner})"

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        assert isinstance(other, Record)
        return self.fields() == other.fields()

    def __hash__(self) -> int:
        return hash(self.fields())

    def __reduce__(self) -> tuple[type[Record], tuple[Any, ...]]:
        return type(self), self.fields()
