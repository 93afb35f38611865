"""One JSON call to the controller over HTTP/1.1, on the standard library alone.

This is the fast path: the ``phalanx`` subcommands and the Slurm-compatible shims, which
scripts run thousands of times, import only this module, ``address`` and ``phalanx.errors``
(no httpx, no pydantic, no numpy), so a call costs little more than the interpreter's start.
``phalanx.client.client.Client`` is the typed client for library users.

Errors:

    PhalanxError
    +-- ControllerUnreachable    no connection, or no answer: names the socket or URL
    +-- ApiError                 the controller answered with an error status

A call opens one connection and closes it after the answer: each caller makes one or two
calls, and a fresh connection never meets a keep-alive the server has already dropped,
which would make a retried POST submit twice.
"""

from __future__ import annotations

import json

from phalanx.client.address import ControllerAddress, Tries, find_controller
from phalanx.errors import PhalanxError

# Every import here is paid by each run of a Slurm-compatible command: typing, http.client
# (for TCP only) and urllib are imported where they are needed, or not at all at run time.
TYPE_CHECKING = False
if TYPE_CHECKING:
    import http.client
    from collections.abc import Mapping
    from typing import Any

    Json = Any
    QueryValue = str | int | bool | None
else:
    Json = object
    QueryValue = object

__all__ = [
    "DEFAULT_TIMEOUT_S",
    "ApiError",
    "ControllerUnreachable",
    "Json",
    "QueryValue",
    "WireCaller",
    "api_error",
]

# Json: a decoded JSON document (what ``json.loads`` returns). QueryValue: None leaves the
# parameter out; a bool is sent as ``true``/``false``.

DEFAULT_TIMEOUT_S = 30.0
# FastAPI puts where a validation error was found first; the user only cares about the field.
_LOCATIONS = frozenset({"body", "query", "path", "header"})


class ControllerUnreachable(PhalanxError):
    """No connection to the controller, or it did not answer. ``str()`` names where it was
    looked for, so a user can tell a stopped controller from a wrong ``PHALANX_URL``."""

    def __init__(self, where: str, reason: str) -> None:
        self.where = where
        self.reason = reason
        super().__init__(f"cannot reach the controller at {where}: {reason}")


class ApiError(PhalanxError):
    """The controller refused a call: 4xx for the caller's mistakes, 5xx for its own
    (507: the state store is full and submissions are refused). ``field`` names the request
    field at fault where the controller said so."""

    def __init__(self, status: int, message: str, field: str | None = None) -> None:
        self.status = status
        self.message = message
        self.field = field
        # The controller's messages often name the field already ("time: ...", "field
        # 'time': ..."); naming it twice reads like a stutter.
        named = field is None or field in message
        super().__init__(message if named else f"{field}: {message}")


def api_error(status: int, body: Json) -> ApiError:
    """The error an answer with ``status`` and decoded ``body`` stands for: an ``ErrorBody``
    ``{error, field}``, FastAPI's ``{"detail": [...]}`` of validation errors, or anything else
    a proxy may have put there."""
    if isinstance(body, dict):
        if isinstance(body.get("error"), str):
            field = body.get("field")
            return ApiError(status, body["error"], field if isinstance(field, str) else None)
        detail = body.get("detail")
        if isinstance(detail, list) and detail:
            return _validation_error(status, detail)
        if isinstance(detail, str):
            return ApiError(status, detail)
    if isinstance(body, str) and body.strip():
        return ApiError(status, body.strip())
    from http import HTTPStatus  # the reason phrase; http.client is not needed for it

    try:
        phrase = HTTPStatus(status).phrase
    except ValueError:
        phrase = ""
    return ApiError(status, f"HTTP {status} {phrase}".strip())


def _validation_error(status: int, detail: list[Json]) -> ApiError:
    found = [(_field_of(item), _message_of(item)) for item in detail]
    field, message = found[0]
    rest = "".join(f"; {f}: {m}" if f else f"; {m}" for f, m in found[1:])
    return ApiError(status, message + rest, field)


def _field_of(item: Json) -> str | None:
    loc = item.get("loc") if isinstance(item, dict) else None
    if not isinstance(loc, list):
        return None
    parts = [str(p) for p in loc]
    if parts and parts[0] in _LOCATIONS and len(parts) > 1:
        parts = parts[1:]
    return ".".join(parts) or None


def _message_of(item: Json) -> str:
    if isinstance(item, dict) and isinstance(item.get("msg"), str):
        return str(item["msg"])
    return str(item)


class WireCaller:
    """Calls the controller at ``address`` (default: ``find_controller()``)."""

    def __init__(
        self, address: ControllerAddress | None = None, *, timeout: float = DEFAULT_TIMEOUT_S
    ) -> None:
        self.address = find_controller() if address is None else address
        self.timeout = timeout
        self._urls = self.address.urls
        for url in self._urls:
            _check_url(url)
        self.leader: str | None = self._urls[0] if self._urls else None
        """The URL that answered last (tried first by the next call)."""

    def call(
        self,
        method: str,
        path: str,
        *,
        query: Mapping[str, QueryValue] | None = None,
        body: Json = None,
        idempotency_key: str | None = None,
    ) -> tuple[int, Json]:
        """Send one request; return the status and the decoded JSON answer (its text when it
        is not JSON, None when empty). Raise ``ControllerUnreachable`` when there is no
        connection or no answer; an error status is returned, not raised. A submission
        sent again with the same ``idempotency_key`` is not submitted twice."""
        query_string = _query_string(query)
        headers = {"Accept": "application/json", "Connection": "close"}
        if idempotency_key is not None:
            headers["Idempotency-Key"] = idempotency_key
        payload: bytes | None = None
        if body is not None:
            payload = json.dumps(body, separators=(",", ":")).encode()
            headers["Content-Type"] = "application/json"
        if self.address.token is not None and self.address.url is not None:
            headers["Authorization"] = f"Bearer {self.address.token}"
        if self.address.socket_path is not None:
            from phalanx.client.unixhttp import Broken, exchange

            try:
                status, raw = exchange(
                    self.address.socket_path,
                    self.timeout,
                    method,
                    path + query_string,
                    headers,
                    payload,
                )
            except Broken as exc:
                raise ControllerUnreachable(self.address.describe(), str(exc)) from None
            answer = _decode(raw)
            serving = path == "/v1/ping"  # a ping's 503 says the role: an answer, kept
            if status == 503 and isinstance(answer, dict) and "leader" in answer and not serving:
                # Starting (recovering), or standing by: no controller serves here now.
                raise ControllerUnreachable(self.address.describe(), str(answer.get("error")))
            return status, answer
        # Sent again only where that cannot do it twice: nothing had gone out, or the call
        # changes nothing, or the controller knows it by its key.
        retry_sent = method in ("GET", "HEAD") or idempotency_key is not None
        return self._failover(method, path + query_string, headers, payload, retry_sent)

    def call_at(
        self, url: str, method: str, path: str, *, query: Mapping[str, QueryValue] | None = None
    ) -> tuple[int, Json]:
        """One request to the controller at ``url`` alone (one of several), whatever its
        role: ``scontrol ping`` asks each. ``ControllerUnreachable`` if it does not answer."""
        headers = {"Accept": "application/json", "Connection": "close"}
        if self.address.token is not None:
            headers["Authorization"] = f"Bearer {self.address.token}"
        try:
            return self._exchange(url, method, path + _query_string(query), headers, None)
        except _Unreached as exc:
            raise ControllerUnreachable(url, exc.reason) from None

    def _failover(
        self,
        method: str,
        target: str,
        headers: dict[str, str],
        payload: bytes | None,
        retry_sent: bool,
    ) -> tuple[int, Json]:
        """The call at the controller that leads: the last one that answered first, then
        the others, then where a standby says the leader is (503 with ``leader``). With
        several controllers, a takeover in progress (none leads yet) is waited for, up to
        the timeout."""
        import time

        several = len(self._urls) > 1
        deadline = time.monotonic() + self.timeout
        reasons: dict[str, str] = {}
        while True:
            tries = Tries(self.leader, self._urls)
            for url in tries:
                try:
                    status, answer = self._exchange(url, method, target, headers, payload)
                except _Unreached as exc:
                    if exc.sent and not retry_sent:
                        raise ControllerUnreachable(url, exc.reason) from None
                    reasons[url] = exc.reason
                    continue
                hint = answer.get("leader") if isinstance(answer, dict) else None
                if status == 503 and isinstance(hint, str) and "leader" in answer:
                    reasons[url] = f"not the leader (it names {hint})"
                    _check_url(hint)
                    tries.follow(hint)
                    continue
                if status == 503 and isinstance(answer, dict) and "leader" in answer:
                    reasons[url] = "a standby that knows no leader yet"
                    continue
                self.leader = url
                return status, answer
            if not several or time.monotonic() >= deadline:
                where = ", ".join(f"{u} ({r})" for u, r in reasons.items())
                raise ControllerUnreachable(
                    self.address.describe() if len(reasons) <= 1 else "any controller",
                    where if len(reasons) > 1 else next(iter(reasons.values()), "no answer"),
                )
            time.sleep(0.1)  # a takeover takes a second or two

    def _exchange(
        self, url: str, method: str, target: str, headers: dict[str, str], payload: bytes | None
    ) -> tuple[int, Json]:
        import http.client
        import urllib.parse

        parts = urllib.parse.urlsplit(url)
        connection = self._connection(parts.scheme, str(parts.hostname), parts.port)
        try:
            try:
                connection.connect()
            except TimeoutError:
                raise _Unreached(f"no connection within {self.timeout:g} s", sent=False) from None
            except OSError as exc:
                raise _Unreached(_reason(exc), sent=False) from None
            try:
                connection.request(
                    method, parts.path.rstrip("/") + target, body=payload, headers=headers
                )
                response = connection.getresponse()
                raw = response.read()
            except TimeoutError:
                raise _Unreached(f"no answer within {self.timeout:g} s", sent=True) from None
            except (OSError, http.client.HTTPException) as exc:
                raise _Unreached(_reason(exc), sent=True) from None
        finally:
            connection.close()
        return response.status, _decode(raw)

    def call_ok(
        self,
        method: str,
        path: str,
        *,
        query: Mapping[str, QueryValue] | None = None,
        body: Json = None,
    ) -> Json:
        """``call``, with any status but 2xx raised as ``ApiError``."""
        status, answer = self.call(method, path, query=query, body=body)
        if not 200 <= status < 300:
            raise api_error(status, answer)
        return answer

    def _connection(self, scheme: str, host: str, port: int | None) -> http.client.HTTPConnection:
        import http.client

        if scheme == "https":
            return http.client.HTTPSConnection(host, port, timeout=self.timeout)
        return http.client.HTTPConnection(host, port, timeout=self.timeout)


class _Unreached(Exception):
    """No answer from one controller; ``sent``: the request may have reached it."""

    def __init__(self, reason: str, *, sent: bool) -> None:
        super().__init__(reason)
        self.reason = reason
        self.sent = sent


def _check_url(url: str) -> None:
    import urllib.parse

    parts = urllib.parse.urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ControllerUnreachable(url, "not an http:// or https:// URL")


def _query_string(query: Mapping[str, QueryValue] | None) -> str:
    if not query:
        return ""
    pairs = [
        (key, ("true" if value else "false") if isinstance(value, bool) else str(value))
        for key, value in query.items()
        if value is not None
    ]
    if not pairs:
        return ""
    import urllib.parse

    return "?" + urllib.parse.urlencode(pairs)


def _decode(raw: bytes) -> Json:
    if not raw:
        return None
    text = raw.decode("utf-8", errors="replace")
    try:
        return json.loads(text)
    except ValueError:
        return text


def _reason(exc: BaseException) -> str:
    if type(exc).__name__ == "RemoteDisconnected":  # http.client's, not imported for this
        return "the connection was closed before an answer"
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror
    return str(exc) or type(exc).__name__
