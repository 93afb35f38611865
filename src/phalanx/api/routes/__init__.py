"""The REST API (FastAPI, ``/v1``) over the service port, with who-is-asking and errors.

One router per resource: ``jobs`` (submit, list, show, change), ``actions`` (hold,
release, requeue, signal), ``steps``, ``accounting`` (priority, fair share, finished jobs),
``cluster`` (nodes, partitions), ``agents`` (the agent protocol) and ``ops`` (ping,
metrics). ``create_app`` only composes them; what they need (the service, the caller) comes
from ``deps`` through ``Depends``.

The web dashboard (``phalanx.api.ui``) is served from the same app at ``/ui``.

Callers are known from the Unix socket's peer credentials (``phalanx.api.peer``) or, over
TCP, from a bearer token. Bad input is answered 4xx with ``ErrorBody`` (the field named);
nothing a user sends can crash the controller.
"""

from __future__ import annotations

from fastapi import FastAPI

from phalanx.api import ui
from phalanx.api.metrics import Metrics
from phalanx.api.routes import accounting, actions, agents, cluster, errors, jobs, ops, steps
from phalanx.api.routes.access import Access
from phalanx.api.service import Service

__all__ = ["Access", "create_app"]

# In the order they are matched: ``/v1/jobs/table`` before ``/v1/jobs/{job_id}``.
_ROUTERS = (jobs, actions, steps, accounting, cluster, ops, agents)


def create_app(service: Service, access: Access | None = None) -> FastAPI:
    """The API over ``service``, callers told apart by ``access`` (default: no tokens, the
    socket's peers only).

    Every handler is ``async def``: FastAPI would run a plain ``def`` in a thread pool, and
    the engine, the journal and the fleet must only be touched by the event loop's thread."""
    app = FastAPI(title="Phalanx", version="1", openapi_url="/openapi.json")
    app.state.service = service
    app.state.access = access or Access()
    app.state.metrics = Metrics(service)
    errors.install(app)
    for module in _ROUTERS:
        app.include_router(module.router)
    ui.install(app)  # the dashboard at /ui: its own routers and assets
    return app
