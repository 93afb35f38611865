"""State-store URLs, checked without loading a store: ``sqlite:///PATH`` (SQLAlchemy's form:
``sqlite:///state.db`` is relative, ``sqlite:////var/lib/phalanx/state.db`` absolute) or
``postgresql://...`` (also ``postgres://``; any libpq URL psycopg accepts)."""

from __future__ import annotations

from pathlib import Path

from phalanx.errors import InputError

__all__ = ["SCHEMES", "check_url", "sqlite_path", "sqlite_url"]

SCHEMES = ("sqlite", "postgresql", "postgres")


def sqlite_url(path: Path | str) -> str:
    """The URL of the SQLite database at ``path``."""
    return f"sqlite:///{path}"


def sqlite_path(url: str) -> str | None:
    """The file a ``sqlite:///PATH`` URL names; None for another kind of URL."""
    scheme, _, rest = url.partition("://")
    return rest[1:] if scheme == "sqlite" else None  # the third slash ends the empty host


def check_url(url: str, field: str = "--db") -> str:
    """``url`` if its scheme is one Phalanx stores in; ``InputError`` naming ``field``
    otherwise (a bad ``--db`` or ``PHALANX_DB`` is the user's input, not a crash)."""
    scheme, sep, rest = url.partition("://")
    if not sep or scheme not in SCHEMES:
        raise InputError(
            f"unsupported database URL {url!r}: use sqlite:///PATH or postgresql://...",
            field=field,
        )
    if scheme == "sqlite" and (not rest.startswith("/") or rest == "/"):
        raise InputError(f"a SQLite URL is sqlite:///PATH, not {url!r}", field=field)
    return url
