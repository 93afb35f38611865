"""The Kubernetes-compatible API as an ASGI app: discovery, OpenAPI, and every resource's verbs
under ``/api/v1`` and ``/apis/GROUP/VERSION``, behind bearer-token authentication and an RBAC
hook. ``create_app`` builds it; the controller serves it on its own TLS port."""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from starlette.responses import Response, StreamingResponse

from phalanx.kube import discovery, kinds, openapi, reviews
from phalanx.kube.calls import Call, ClientGone
from phalanx.kube.errors import (
    BadRequest,
    Forbidden,
    KubeError,
    MethodNotAllowed,
    Unauthorized,
    Unavailable,
)
from phalanx.kube.logs import open_log
from phalanx.kube.resources import Request, Resources, Validator
from phalanx.kube.store import ObjectStore
from phalanx.kube.watch import open_watch
from phalanx.kube.wire import (
    JSON,
    PROTOBUF,
    decode_body,
    dumps,
    error_response,
    json_response,
    media,
    wants_table,
    warning_header,
)

__all__ = ["Authorizer", "Durable", "KubeApp", "User", "allow_all", "create_app"]

log = logging.getLogger("phalanx.kube")

Durable = Callable[[int], Awaitable[None]]
"""durable(rv): returns once every write up to ``rv`` is on disk (``GroupCommit.until``)."""
User = tuple[str, tuple[str, ...]]
"""(user name, groups)."""
Authorizer = Callable[[str, tuple[str, ...], str, str, str, str | None, str | None], bool]
"""authorize(user, groups, verb, group, resource, namespace, name) -> allowed."""


def allow_all(
    user: str,
    groups: tuple[str, ...],
    verb: str,
    group: str,
    resource: str,
    namespace: str | None,
    name: str | None,
) -> bool:
    """The authorizer until RBAC is evaluated: every authenticated user may do everything."""
    return True


_POD_LOG = ("pods", "log")
_OPEN_PATHS = frozenset(("/version", "/healthz", "/livez", "/readyz"))


class _NoRoute(KubeError):
    code = 404
    reason = "NotFound"

    def __init__(self) -> None:
        super().__init__("the server could not find the requested resource", details={"causes": []})


def _forbidden_why(user: str, verb: str, group: str, resource: str, namespace: str | None) -> str:
    why = f'User "{user}" cannot {verb} resource "{resource}" in API group "{group}"'
    if namespace:
        why += f' in the namespace "{namespace}"'
    else:
        why += " at the cluster scope"
    return why


class KubeApp:
    """The ASGI app. ``tokens``: bearer token -> (user, groups); ``is_open``: False while
    this controller does not lead (every call is then 503); ``durable``: with a store whose
    commits are deferred (``phalanx.kube.groupcommit``), every answer waits for it, so that
    nothing is acknowledged or shown before it is on disk."""

    def __init__(
        self,
        store: ObjectStore,
        tokens: Mapping[str, User],
        *,
        authorize: Authorizer = allow_all,
        validate: Validator | None = None,
        is_open: Callable[[], bool] = lambda: True,
        clock: Callable[[], float] = time.time,
        durable: Durable | None = None,
        on_request: Callable[[], None] | None = None,
    ) -> None:
        self.store = store
        self.durable = durable
        self.on_request = on_request
        """Called as each request arrives (``phalanx.kube.pace``: controllers wait for a
        pause in them)."""
        self.tokens = tokens
        self.authorize = authorize
        self.is_open = is_open
        self.clock = clock
        self.api = Resources(store, clock=clock, validate=validate)

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            while True:  # nothing to start or stop: acknowledge both
                message = await receive()
                if message["type"] == "lifespan.startup":
                    await send({"type": "lifespan.startup.complete"})
                elif message["type"] == "lifespan.shutdown":
                    await send({"type": "lifespan.shutdown.complete"})
                    return
        if scope["type"] != "http":
            return
        if self.on_request is not None:
            self.on_request()
        http = Call(scope, receive)
        try:
            response = await self._handle(http)
        except KubeError as exc:
            response = error_response(exc)
        except ClientGone:
            return  # no one to answer
        except Exception as exc:  # a bug must not take the server down: 500, logged
            log.exception("kube API: %s %s", http.method, http.path)
            response = json_response(
                {
                    "kind": "Status",
                    "apiVersion": "v1",
                    "metadata": {},
                    "status": "Failure",
                    "message": f"Internal error occurred: {exc}",
                    "reason": "InternalError",
                    "details": {"causes": [{"message": str(exc)}]},
                    "code": 500,
                },
                500,
            )
        if (
            self.durable is not None
            and http.shows_store
            and not isinstance(response, StreamingResponse)
        ):
            try:
                await self.durable(self.store.resource_version)
            except KubeError as exc:
                response = error_response(exc)
        await response(scope, receive, send)

    def _user(self, http: Call) -> User:
        scheme, _, token = http.headers.get("authorization", "").partition(" ")
        user = self.tokens.get(token.strip()) if scheme.lower() == "bearer" else None
        if user is None:
            raise Unauthorized()
        return user

    async def _handle(self, http: Call) -> Response:
        path = http.path.rstrip("/") or "/"
        if not self.is_open():
            raise Unavailable("this controller does not lead: the Kubernetes API is on the leader")
        if path in _OPEN_PATHS:
            if path == "/version":
                return json_response(discovery.version())
            return Response(b"ok", media_type="text/plain")
        user = self._user(http)
        accept = http.headers.get("accept", "")
        if path in ("/api", "/apis"):
            if discovery.AGGREGATED.split(";as=")[0] in accept.replace(" ", ""):
                return Response(
                    dumps(discovery.aggregated(path == "/api")), media_type=discovery.AGGREGATED
                )
            return json_response(
                discovery.api_versions() if path == "/api" else discovery.api_group_list()
            )
        if path.startswith("/openapi/"):
            return self._openapi(http, path)
        if path in reviews.REVIEW_PATHS:
            if http.method != "POST":
                raise MethodNotAllowed(("", path.rpartition("/")[2]), http.method.lower())
            if path == reviews.WHOAMI:
                return json_response(reviews.self_review(*user), 201)
            content_type = http.headers.get("content-type")
            raw = await http.body()
            # kubectl sends this one as protobuf, which the codec has no schema for: read here
            body = (
                reviews.decode_access_review(raw)
                if media(content_type) == PROTOBUF
                else decode_body(content_type, raw)
            )
            return json_response(reviews.access_review(body, *user, self.authorize), 201)
        parts = path.strip("/").split("/")
        if parts[0] == "api" and len(parts) >= 2:
            group, version, rest = "", parts[1], parts[2:]
        elif parts[0] == "apis" and len(parts) >= 3:
            group, version, rest = parts[1], parts[2], parts[3:]
        elif parts[0] == "apis" and len(parts) == 2:
            found = [g for g in discovery.api_group_list()["groups"] if g["name"] == parts[1]]
            if not found:
                raise _NoRoute()
            return json_response({"kind": "APIGroup", "apiVersion": "v1", **found[0]})
        else:
            raise _NoRoute()
        if not rest:
            listing = discovery.resource_list(group, version)
            if listing is None:
                raise _NoRoute()
            return json_response(listing)
        return await self._resource(http, user, group, version, rest)

    def _openapi(self, http: Call, path: str) -> Response:
        # Without built documents: an empty v3 index, which kubectl reads as "no schemas" (it
        # then needs --validate=false).
        if not openapi.available():
            if path == "/openapi/v3":
                return json_response({"paths": {}})
            raise _NoRoute()
        if path == "/openapi/v3":
            return json_response(openapi.openapi_v3_index())
        if path.startswith("/openapi/v3/"):
            gv = path.removeprefix("/openapi/v3/")
            body = openapi.openapi_v3(gv)
            if body is None:
                raise _NoRoute()
            # The index's ?hash= is the document's ETag; a client that has it gets 304.
            etag = f'"{openapi.openapi_v3_hash(gv)}"'
            headers = {"ETag": etag, "Cache-Control": "public, immutable"}
            if http.headers.get("if-none-match") == etag:
                return Response(status_code=304, headers=headers)
            return Response(body, media_type="application/json", headers=headers)
        if path == "/openapi/v2":
            accept = http.headers.get("accept", "")
            if accept and "json" not in accept and "*/*" not in accept:
                # kubectl asks for protobuf; only JSON is served (kubectl reads v3 instead).
                return Response(status_code=406)
            return Response(openapi.openapi_v2(), media_type="application/json")
        raise _NoRoute()

    def _parse(
        self, group: str, version: str, rest: list[str]
    ) -> tuple[kinds.Kind, str | None, str | None, str | None]:
        """(kind, namespace, name, subresource) of a resource path."""
        ns: str | None = None
        if rest[0] == "namespaces" and len(rest) >= 3 and rest[2] not in ("status", "finalize"):
            ns, rest = rest[1], rest[2:]
        if len(rest) > 3:
            raise _NoRoute()
        kind = kinds.lookup(group, version, rest[0])
        if kind is None or (ns is not None and not kind.namespaced):
            raise _NoRoute()
        name = rest[1] if len(rest) >= 2 else None
        sub = rest[2] if len(rest) == 3 else None
        if sub is not None and sub not in kind.subresources and (kind.plural, sub) != _POD_LOG:
            raise _NoRoute()
        return kind, ns, name, sub

    async def _resource(
        self, http: Call, user: User, group: str, version: str, rest: list[str]
    ) -> Response:
        # Whatever this answers (an object, a list, AlreadyExists...) shows the store: it
        # waits until that is on disk (``durable``); discovery and the like do not.
        http.shows_store = True
        kind, ns, name, sub = self._parse(group, version, rest)
        resource = f"{kind.plural}/{sub}" if sub else kind.plural
        query = http.query
        req = Request(
            kind,
            ns,
            name,
            sub,
            query,
            table=wants_table(http.headers.get("accept")),
            user=user[0],
            version=version,
        )
        method = http.method
        watch = query.get("watch", "").lower() in ("1", "true")
        verb = {
            "GET": "watch" if watch else ("get" if name else "list"),
            "POST": "create",
            "PUT": "update",
            "PATCH": "patch",
            "DELETE": "delete" if name else "deletecollection",
        }.get(method)
        if verb is None:
            raise MethodNotAllowed(kind.resource, method.lower())
        if verb not in kind.verbs or (verb == "create" and name is not None):
            raise MethodNotAllowed(kind.resource, verb)
        if not self.authorize(user[0], user[1], verb, kind.group, resource, ns, name):
            raise Forbidden(
                kind.resource, name or "", _forbidden_why(user[0], verb, kind.group, resource, ns)
            )
        api = self.api
        if (kind.plural, sub) == _POD_LOG:
            if verb != "get" or ns is None or name is None:
                raise MethodNotAllowed(kind.resource, verb)
            pod_log = open_log(self.store, ns, name, query, self.clock)
            return StreamingResponse(pod_log.chunks(), media_type="text/plain")
        if verb == "watch":
            stream = open_watch(api, req, self.durable)
            return StreamingResponse(stream, media_type="application/json")
        if verb == "get":
            return json_response(api.get(req))
        if verb == "list":
            return Response(api.list_json(req), media_type=JSON)
        body = await http.body()
        content_type = http.headers.get("content-type")
        status = 200
        if verb == "create":
            result = api.create(req, decode_body(content_type, body))
            status = 201
        elif verb == "update":
            result = api.update(req, decode_body(content_type, body))
        elif verb == "patch":
            result, status = api.patch(req, media(content_type), decode_body(content_type, body))
        else:
            options = decode_body(content_type, body) if body.strip() else {}
            if not isinstance(options, dict):
                raise BadRequest("DeleteOptions must be an object")
            result = (
                api.delete(req, options)
                if verb == "delete"
                else api.delete_collection(req, options)
            )
        warning = warning_header(req.warnings)
        headers = {"Warning": warning} if warning is not None else None
        if isinstance(result, dict) and result.get("kind") == "Status":
            return json_response(result, 200, headers)
        return Response(
            self._encoded(req, result), status_code=status, media_type=JSON, headers=headers
        )

    def _encoded(self, req: Request, result: Any) -> bytes:
        """``result`` in JSON, as the request's version serves it. The object store's own
        object (what a create, update or patch stored) is encoded once per version of it
        (``ObjectStore.json_of``): lists, watches and the group commit's row use the same
        bytes. Anything else (a dry run's object, which has the stored one's
        resourceVersion) is encoded afresh."""
        if not isinstance(result, dict) or result.get("kind") != req.kind.kind:
            return dumps(result)
        meta = result.get("metadata") or {}
        own = self.store.peek(req.kind.resource, meta.get("namespace"), str(meta.get("name")))
        served = req.as_served(result)
        if own is not result:
            return dumps(served)
        return self.store.json_of(served)


def create_app(
    store: ObjectStore,
    tokens: Mapping[str, User],
    *,
    authorize: Authorizer | None = None,
    validate: Validator | None = None,
    is_open: Callable[[], bool] = lambda: True,
    durable: Durable | None = None,
) -> KubeApp:
    """The Kubernetes API over ``store``; see ``KubeApp``. ``authorize`` defaults to RBAC
    over the store's roles and bindings (its bootstrap roles made if missing)."""
    if authorize is None:
        from phalanx.kube.rbac import Rbac, bootstrap

        bootstrap(store)
        authorize = Rbac(store).authorize
    if validate is None and openapi.available():
        validate = openapi.validate
    return KubeApp(
        store, tokens, authorize=authorize, validate=validate, is_open=is_open, durable=durable
    )
