"""Reading a configuration file as text: bytes that are not UTF-8 (a binary file given by
mistake, a Latin-1 file) are a ``ConfigError`` naming the file, not a ``UnicodeDecodeError``
traceback, which the commands' handlers for ``OSError`` and ``PhalanxError`` let through."""

from __future__ import annotations

from pathlib import Path

from phalanx.errors import ConfigError

__all__ = ["read_text"]


def read_text(path: str | Path) -> str:
    """The text of ``path``; ``OSError`` when it cannot be read, ``ConfigError`` when it is not
    UTF-8 (with the offset of the first bad byte)."""
    try:
        return Path(path).read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError(
            f"not UTF-8 text (byte {exc.object[exc.start]:#04x} at offset {exc.start})",
            source=str(path),
        ) from None
