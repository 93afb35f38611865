"""JSON values as the Kubernetes object store handles them: deep copies (faster than
``copy.deepcopy`` for plain JSON), ``metav1.Time`` timestamps, object uids, and the random
suffix of a ``generateName``."""

from __future__ import annotations

import math
import os
import threading
from datetime import UTC, datetime
from typing import Any

__all__ = ["copy_json", "copy_obj", "new_uid", "suffix", "timestamp"]

_GENERATE_CHARS = "bcdfghjklmnpqrstvwxz2456789"
"""What kube-apiserver appends to a generateName (k8s.io/apimachinery util/rand)."""
_SUFFIXES = len(_GENERATE_CHARS) ** 5
_SUFFIX_BYTES = 4
_SUFFIX_LIMIT = (1 << (8 * _SUFFIX_BYTES)) // _SUFFIXES * _SUFFIXES
"""Draws at or above this are drawn again, so that every suffix is equally likely."""
_POOL_BYTES = 4096


class _Entropy:
    """Bytes of the system's randomness (``os.urandom``), fetched a page at a time: each
    fetch is a system call, which cost more than the rest of a uid or a name when made
    for every one (several per created object)."""

    def __init__(self) -> None:
        self._pool = b""
        self._at = 0
        self._lock = threading.Lock()  # no two threads are ever handed the same bytes

    def drop(self) -> None:
        """Forget the bytes fetched (a forked child must not hand out its parent's)."""
        self._pool = b""
        self._at = 0
        self._lock = threading.Lock()

    def take(self, n: int) -> bytes:
        with self._lock:
            if self._at + n > len(self._pool):
                self._pool = os.urandom(max(_POOL_BYTES, n))
                self._at = 0
            out = self._pool[self._at : self._at + n]
            self._at += n
            return out


_entropy = _Entropy()
os.register_at_fork(after_in_child=_entropy.drop)


def suffix() -> str:
    """Five characters of ``_GENERATE_CHARS`` drawn uniformly from the system's randomness."""
    while True:
        n = int.from_bytes(_entropy.take(_SUFFIX_BYTES), "big")
        if n < _SUFFIX_LIMIT:
            break
    n %= _SUFFIXES
    out = []
    for _ in range(5):
        n, i = divmod(n, len(_GENERATE_CHARS))
        out.append(_GENERATE_CHARS[i])
    return "".join(out)


def new_uid() -> str:
    """A random (version 4) UUID, as kube-apiserver gives every object: what
    ``str(uuid.UUID(bytes=..., version=4))`` writes, without building the UUID object (a few
    percent of the API's CPU in a burst of creations)."""
    raw = bytearray(_entropy.take(16))
    raw[6] = (raw[6] & 0x0F) | 0x40  # version 4
    raw[8] = (raw[8] & 0x3F) | 0x80  # RFC 4122 variant
    h = raw.hex()
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


def copy_json(value: Any) -> Any:
    """A deep copy of a JSON value (much faster than ``copy.deepcopy``)."""
    if isinstance(value, dict):
        return {k: copy_json(v) for k, v in value.items()}
    if isinstance(value, list):
        return [copy_json(v) for v in value]
    return value


def copy_obj(obj: dict[str, Any]) -> dict[str, Any]:
    """A deep copy of a JSON object."""
    return {k: copy_json(v) for k, v in obj.items()}


_last_stamp: tuple[int, str] = (0, "1970-01-01T00:00:00Z")


def timestamp(at: float) -> str:
    """RFC 3339 in UTC, seconds, as ``metav1.Time`` is written. The last second's text is
    kept: a burst of writes stamps many objects within one second, and ``strftime`` costs
    more than the rest of a stamp."""
    global _last_stamp
    second = math.floor(at)
    if _last_stamp[0] != second:
        _last_stamp = (second, datetime.fromtimestamp(second, UTC).strftime("%Y-%m-%dT%H:%M:%SZ"))
    return _last_stamp[1]
