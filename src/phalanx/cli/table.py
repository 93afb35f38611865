"""Plain text tables, like ``column -t``: left-aligned columns as wide as their content.

No rich here: the query subcommands must answer faster than rich imports.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

__all__ = ["GAP", "format_count", "render_table"]

GAP = "  "


def render_table(header: Sequence[str], rows: Iterable[Sequence[str]]) -> str:
    """The table as text, one line per row after the header, without a final newline.
    Trailing blanks are cut so the last column may be as long as it likes."""
    lines = [list(header), *(list(row) for row in rows)]
    widths = [max(len(line[i]) for line in lines) for i in range(len(header))]
    return "\n".join(
        GAP.join(cell.ljust(width) for cell, width in zip(line, widths, strict=True)).rstrip()
        for line in lines
    )


def format_count(value: float) -> str:
    """A resource count: ``2`` rather than ``2.0``, and a fraction (a shared GPU) kept."""
    if value == int(value):
        return str(int(value))
    return f"{value:.2f}".rstrip("0")
