"""How errors are answered: every ``PhalanxError`` a route raises becomes a 4xx (or 507) with
``ErrorBody`` (the field named); an agent refused by the fencing rules gets a ``Refusal``."""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse

from phalanx.api.routes.access import Unauthorized
from phalanx.api.wire import ErrorBody, Refusal
from phalanx.errors import (
    Conflict,
    Fenced,
    InputError,
    NotAllowed,
    NotFound,
    NotLeader,
    StateStoreError,
)

__all__ = ["AGENT_ERRORS", "ERRORS", "install", "jsonable_errors", "not_leader"]

ERRORS: dict[int | str, dict[str, Any]] = {code: {"model": ErrorBody} for code in (403, 404, 422)}
"""The error answers of a user route, for OpenAPI."""
AGENT_ERRORS: dict[int | str, dict[str, Any]] = {
    **ERRORS,
    409: {"model": Refusal, "description": "an agent incarnation that does not hold the node"},
    507: {"model": ErrorBody, "description": "the state database cannot take the new epoch"},
}
"""The error answers of an agent route, for OpenAPI."""


def _error(status: int, message: str, field: str | None = None) -> JSONResponse:
    return JSONResponse({"error": message, "field": field}, status_code=status)


async def _invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
    first = exc.errors()[0] if exc.errors() else {}
    loc = [str(p) for p in first.get("loc", ()) if p not in ("body", "query", "path")]
    field = ".".join(loc) or None
    message = str(first.get("msg", "invalid request"))
    return JSONResponse(
        {
            "error": f"{field}: {message}" if field else message,
            "field": field,
            "detail": jsonable_errors(exc),
        },
        status_code=422,
    )


async def _bad(request: Request, exc: InputError) -> JSONResponse:
    return _error(422, str(exc), exc.field)


async def _missing(request: Request, exc: NotFound) -> JSONResponse:
    return _error(404, str(exc))


async def _conflict(request: Request, exc: Conflict) -> JSONResponse:
    if isinstance(exc, Fenced):  # an agent's call: the reason tells it what to do
        body = Refusal(error=str(exc), reason=exc.reason, epoch=exc.epoch)  # type: ignore[arg-type]
        return JSONResponse(body.model_dump(), status_code=409)
    return _error(409, str(exc))


async def _forbidden(request: Request, exc: NotAllowed) -> JSONResponse:
    return _error(403, str(exc))


async def _unauthorized(request: Request, exc: Unauthorized) -> JSONResponse:
    return _error(401, "a valid API token is needed over TCP (Authorization: Bearer ...)")


async def _full(request: Request, exc: StateStoreError) -> JSONResponse:
    return _error(507, f"submissions refused: {exc}")


async def _not_leader(request: Request, exc: NotLeader) -> JSONResponse:
    return not_leader(str(exc), exc.leader)


def not_leader(message: str, leader: str | None) -> JSONResponse:
    """503 with where the leader is: clients and agents given several controllers go
    there (``Retry-After``: a takeover takes seconds)."""
    return JSONResponse(
        {"error": message, "field": None, "leader": leader},
        status_code=503,
        headers={"Retry-After": "1"},
    )


def install(app: FastAPI) -> None:
    """Answer ``app``'s errors as this module says."""
    app.add_exception_handler(RequestValidationError, _invalid)  # type: ignore[arg-type]
    app.add_exception_handler(InputError, _bad)  # type: ignore[arg-type]
    app.add_exception_handler(NotFound, _missing)  # type: ignore[arg-type]
    app.add_exception_handler(Conflict, _conflict)  # type: ignore[arg-type]
    app.add_exception_handler(NotAllowed, _forbidden)  # type: ignore[arg-type]
    app.add_exception_handler(Unauthorized, _unauthorized)  # type: ignore[arg-type]
    app.add_exception_handler(StateStoreError, _full)  # type: ignore[arg-type]
    app.add_exception_handler(NotLeader, _not_leader)  # type: ignore[arg-type]


def jsonable_errors(exc: RequestValidationError) -> list[dict[str, Any]]:
    """Pydantic's errors as ``{loc, msg}`` (the input itself left out)."""
    return [
        {"loc": [str(p) for p in e.get("loc", ())], "msg": str(e.get("msg", ""))}
        for e in exc.errors()
    ]
