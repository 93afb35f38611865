"""Rows of a trace file: opening it, splitting it into rows, and reading typed fields.

Every reader goes through here so that a bad file always ends as a ``TraceError`` naming the
file, the 1-based line and the field, never as a raw ``ValueError`` or ``KeyError``.
"""

from __future__ import annotations

import csv
import gzip
import json
import math
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import TextIO

from phalanx.domain.time import SECOND, Duration
from phalanx.errors import TraceError

__all__ = [
    "MAX_COUNT",
    "MAX_SECONDS",
    "Cells",
    "csv_records",
    "csv_rows",
    "jsonl_records",
    "open_trace",
    "seconds_to_ms",
    "text_lines",
]


MAX_COUNT = 2**53
"""The largest count (GPUs, CPUs, nodes, MB) a trace may give: beyond it a float, which the
simulator sums GPUs in, no longer holds every whole number (and past 10^308 none at all)."""


MAX_SECONDS = 1e12
"""The largest time (submit, run time, limit) a trace may give, in seconds: about 31,700
years. Beyond it the milliseconds no longer fit the int64 columns the policies keep them in
(a finite 1e300 s ended the replay in an OverflowError)."""


def seconds_to_ms(seconds: float) -> Duration:
    """Seconds (possibly fractional) to integer milliseconds, rounded to the nearest."""
    return round(seconds * SECOND)


@contextmanager
def open_trace(path: str) -> Iterator[TextIO]:
    """Open a trace as text; ``.gz`` files are decompressed (archives ship SWF logs that way).

    Decoding and CSV-level failures while the file is read are turned into ``TraceError`` too.
    A leading UTF-8 byte order mark (spreadsheets save CSV with one) is dropped, so that it does
    not become part of the first column's name.
    """
    # Opened outside ``with`` so that a missing file is told apart from a failure mid-read; the
    # ``with handle`` below closes it either way.
    try:
        if path.endswith(".gz"):
            handle: TextIO = gzip.open(path, "rt", encoding="utf-8-sig", newline="")  # noqa: SIM115
        else:
            handle = open(path, encoding="utf-8-sig", newline="")  # noqa: SIM115
    except FileNotFoundError as exc:
        raise TraceError("no such trace file", source=path) from exc
    except OSError as exc:
        raise TraceError(f"cannot open trace: {exc.strerror or exc}", source=path) from exc
    try:
        with handle:
            yield handle
    except (UnicodeDecodeError, csv.Error, OSError, EOFError) as exc:
        raise TraceError(f"cannot read trace: {exc}", source=path) from exc


class Cells:
    """The fields of one row by name, with the file and line to blame when one is bad.

    Empty strings and JSON ``null`` count as absent, so optional fields may be left blank.
    """

    __slots__ = ("line", "source", "values")

    def __init__(self, values: Mapping[str, object], *, source: str, line: int) -> None:
        self.values = values
        self.source = source
        self.line = line

    def error(self, message: str, field: str | None = None) -> TraceError:
        return TraceError(message, source=self.source, line=self.line, field=field)

    def raw(self, field: str) -> object | None:
        value = self.values.get(field)
        if value is None or (isinstance(value, str) and not value.strip()):
            return None
        return value

    def text(self, field: str, default: str | None = None) -> str:
        value = self.opt_text(field)
        if value is None:
            if default is None:
                raise self.error("missing value", field)
            return default
        return value

    def opt_text(self, field: str) -> str | None:
        value = self.raw(field)
        if value is None:
            return None
        # A JSON number is taken as its text (a numeric user id); a list or an object is no
        # name at all (str() of it made an account called "['a']").
        if isinstance(value, list | dict):
            raise self.error(f"not a string: {json.dumps(value)[:80]}", field)
        return str(value).strip()

    def number(self, field: str) -> float:
        value = self.opt_number(field)
        if value is None:
            raise self.error("missing value", field)
        return value

    def opt_number(self, field: str) -> float | None:
        value = self.raw(field)
        if value is None:
            return None
        if isinstance(value, bool):  # JSON true/false are ints to Python, not numbers here
            raise self.error(f"not a number: {value!r}", field)
        if isinstance(value, int | float):
            try:
                number = float(value)
            except OverflowError:  # a JSON integer beyond any float
                raise self.error("not a finite number: too large", field) from None
        else:
            try:
                number = float(str(value))
            except ValueError:
                raise self.error(f"not a number: {value!r}", field) from None
        if not math.isfinite(number):
            raise self.error(f"not a finite number: {value!r}", field)
        return number

    def seconds(self, field: str) -> float:
        """A time in seconds: a number within ``MAX_SECONDS`` either side of zero."""
        value = self.opt_seconds(field)
        if value is None:
            raise self.error("missing value", field)
        return value

    def opt_seconds(self, field: str) -> float | None:
        value = self.opt_number(field)
        if value is not None and abs(value) > MAX_SECONDS:
            raise self.error(f"beyond 10^12 seconds (31,700 years): {value:g}", field)
        return value

    def integer(self, field: str) -> int:
        value = self.opt_integer(field)
        if value is None:
            raise self.error("missing value", field)
        return value

    def opt_integer(self, field: str) -> int | None:
        number = self.opt_number(field)
        if number is None:
            return None
        if not number.is_integer():
            raise self.error(f"not a whole number: {number:g}", field)
        return int(number)

    def flag(self, field: str, default: bool = False) -> bool:
        """A yes/no field: JSON ``true``/``false``, or ``true``/``false``/``yes``/``no``/``1``/``0``
        in any case; ``default`` if absent."""
        value = self.raw(field)
        if value is None:
            return default
        if isinstance(value, bool):
            return value
        text = str(value).strip().lower()
        if text in ("true", "yes", "1"):
            return True
        if text in ("false", "no", "0"):
            return False
        raise self.error(f"not true or false: {value!r}", field)

    def count(self, field: str, default: int | None = None) -> int:
        """A whole number that may not be negative (GPUs, CPUs, memory); ``default`` if absent."""
        value = self.opt_integer(field)
        if value is None:
            if default is None:
                raise self.error("missing value", field)
            return default
        if value < 0:
            raise self.error(f"cannot be negative: {value}", field)
        if value > MAX_COUNT:
            raise self.error(f"too large: {value:.3g} (at most 2^53)", field)
        return value


def csv_rows(path: str, required: Sequence[str]) -> Iterator[tuple[int, dict[str, str]]]:
    """``(line, cells by column)`` for each row of a CSV file with a header line.

    Blank lines are skipped. Every header column is a key of every row (a short row's missing
    cells are empty, hence absent to ``Cells``), so a reader can tell a column the file lacks
    from a value a row lacks. A header without a ``required`` column fails at line 1.
    """
    with open_trace(path) as handle:
        reader = csv.reader(handle)
        header = [name.strip() for name in next(reader, [])]
        for name in required:
            if name not in header:
                raise TraceError("missing column", source=path, line=1, field=name)
        for position, name in enumerate(header):
            # Two columns of one name: every row would silently keep the later one only.
            if name and name in header[:position]:
                raise TraceError("column given twice", source=path, line=1, field=name)
        width = len(header)
        for row in reader:
            if not row:
                continue
            if len(row) < width:
                row += [""] * (width - len(row))
            yield reader.line_num, dict(zip(header, row, strict=False))


def csv_records(path: str, required: Sequence[str]) -> Iterator[Cells]:
    """``csv_rows`` as ``Cells``."""
    for line, values in csv_rows(path, required):
        yield Cells(values, source=path, line=line)


def jsonl_records(path: str) -> Iterator[Cells]:
    """Objects of a JSON-lines file, one per non-blank line."""
    for line, text in text_lines(path):
        try:
            value = json.loads(text)
        except json.JSONDecodeError as exc:
            raise TraceError(f"invalid JSON: {exc.msg}", source=path, line=line) from None
        except ValueError:  # Python's limit on the digits of an integer it parses
            raise TraceError(
                "invalid JSON: an integer of over 4,300 digits", source=path, line=line
            ) from None
        except RecursionError:
            raise TraceError("invalid JSON: nested too deeply", source=path, line=line) from None
        if not isinstance(value, dict):
            raise TraceError("each line must be a JSON object", source=path, line=line)
        yield Cells(value, source=path, line=line)


def text_lines(path: str) -> Iterator[tuple[int, str]]:
    """Non-blank lines with their 1-based numbers, stripped."""
    with open_trace(path) as handle:
        for number, text in enumerate(handle, start=1):
            stripped = text.strip()
            if stripped:
                yield number, stripped
