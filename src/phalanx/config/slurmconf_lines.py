"""The lines of a Slurm configuration file (slurm.conf, topology.conf, gres.conf) as key/values.

Contracts, as Slurm's own parser reads them:

* ``#`` starts a comment (``\\#`` is a literal ``#``); a line ending in ``\\`` continues on the
  next one; a line is reported under the number of its first physical line.
* A line is ``Key=Value`` pairs separated by blanks; a value may be double-quoted to hold blanks.
  Keys are case-insensitive: ``ConfLine.pairs`` keys are lower case, ``ConfValue.key`` keeps
  the spelling of the file for messages.
* ``Include PATH`` (case-insensitive) is replaced by the lines of the file(s) it names. Reading
  them is the caller's ``IncludeReader``; nothing here does I/O.

Every error is a ``ConfigError`` naming the source, the line and (where one is at fault) the key.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from phalanx.errors import ConfigError

__all__ = ["MAX_INCLUDE_DEPTH", "ConfLine", "ConfValue", "IncludeReader", "conf_lines"]

MAX_INCLUDE_DEPTH = 16
"""Deepest nesting of ``Include``: deeper is taken for a file that includes itself."""

IncludeReader = Callable[[str, str], Sequence[tuple[str, str]]]
"""``reader(path_as_written, including_source)`` -> ``[(text, source), ...]`` of the files it
names (several for a glob). Raises ``ConfigError`` (message only) when they cannot be read."""

_INCLUDE = re.compile(r"^include\s+(.+)$", re.IGNORECASE)


@dataclass(frozen=True, slots=True)
class ConfValue:
    """One ``Key=Value`` and where it was written."""

    key: str
    text: str
    source: str
    line: int

    def error(self, message: str) -> ConfigError:
        return ConfigError(message, source=self.source, line=self.line, field=self.key)


@dataclass(frozen=True, slots=True)
class ConfLine:
    """One logical line: its pairs by lower-case key, in the order written."""

    source: str
    number: int
    pairs: dict[str, ConfValue]

    @property
    def kind(self) -> str:
        """The lower-case first key (``nodename``, ``partitionname``, ...)."""
        return next(iter(self.pairs))

    @property
    def head(self) -> ConfValue:
        return self.pairs[self.kind]

    def error(self, message: str, key: str | None = None) -> ConfigError:
        return ConfigError(message, source=self.source, line=self.number, field=key)


def _logical(text: str) -> list[tuple[int, str]]:
    """(first line number, text) of each non-blank logical line, comments removed."""
    out: list[tuple[int, str]] = []
    pending = ""
    start = 0
    for number, raw in enumerate(text.splitlines(), start=1):
        line = re.sub(r"(?<!\\)#.*", "", raw).replace("\\#", "#")
        if not pending:
            start = number
        stripped = line.rstrip()
        if stripped.endswith("\\"):
            pending += stripped[:-1] + " "
            continue
        whole = (pending + line).strip()
        pending = ""
        if whole:
            out.append((start, whole))
    if pending.strip():
        out.append((start, pending.strip()))
    return out


def _words(text: str, source: str, number: int) -> list[str]:
    """Blank-separated words; double quotes group and are removed."""
    words: list[str] = []
    current: list[str] = []
    quoted = False
    for ch in text:
        if ch == '"':
            quoted = not quoted
        elif ch.isspace() and not quoted:
            if current:
                words.append("".join(current))
                current = []
        else:
            current.append(ch)
    if quoted:
        raise ConfigError("unbalanced double quote", source=source, line=number)
    if current:
        words.append("".join(current))
    return words


def _pairs(text: str, source: str, number: int) -> dict[str, ConfValue]:
    pairs: dict[str, ConfValue] = {}
    for word in _words(text, source, number):
        key, eq, value = word.partition("=")
        if not eq or not key:
            raise ConfigError(f"expected Key=Value, got {word!r}", source=source, line=number)
        if key.lower() in pairs:
            raise ConfigError("key given twice on one line", source=source, line=number, field=key)
        pairs[key.lower()] = ConfValue(key, value, source, number)
    return pairs


def conf_lines(
    text: str, source: str, include: IncludeReader | None = None, *, _depth: int = 0
) -> list[ConfLine]:
    """The logical lines of ``text`` with every ``Include`` replaced by the included lines.

    ``include`` None: an ``Include`` line is an error (the caller cannot read files).
    """
    out: list[ConfLine] = []
    for number, logical in _logical(text):
        m = _INCLUDE.match(logical)
        if m is None:
            out.append(ConfLine(source, number, _pairs(logical, source, number)))
            continue
        if include is None:
            raise ConfigError("Include cannot be read here", source=source, line=number)
        if _depth >= MAX_INCLUDE_DEPTH:
            raise ConfigError(
                f"Include nested over {MAX_INCLUDE_DEPTH} deep (does a file include itself?)",
                source=source,
                line=number,
                field="Include",
            )
        try:
            files = include(m.group(1).strip().strip('"'), source)
        except ConfigError as exc:
            raise ConfigError(exc.message, source=source, line=number, field="Include") from None
        for inc_text, inc_source in files:
            out.extend(conf_lines(inc_text, inc_source, include, _depth=_depth + 1))
    return out
