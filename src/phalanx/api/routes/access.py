"""Who is asking: Unix-socket peers by uid, TCP callers by bearer token."""

from __future__ import annotations

import pwd
from collections.abc import Mapping

from fastapi import Request

from phalanx.domain.caller import Caller
from phalanx.errors import PhalanxError

__all__ = ["Access", "Unauthorized"]


class Unauthorized(PhalanxError):
    """A TCP caller without a known token (answered 401)."""


class Access:
    """Who may do what: peers by uid, TCP callers by token. An administrator is uid 0, the
    controller's owner, or a name in ``admins``; an agent's token names its node."""

    def __init__(
        self,
        *,
        tokens: Mapping[str, str] | None = None,
        admins: frozenset[str] = frozenset(),
        owner_uid: int = 0,
        agent_tokens: Mapping[str, str] | None = None,
    ) -> None:
        self.tokens = dict(tokens or {})
        """token -> user name."""
        self.agent_tokens = dict(agent_tokens or {})
        """token -> the node whose agent holds it."""
        self.admins = admins
        self.owner_uid = owner_uid

    def caller(self, request: Request) -> Caller:
        """The caller of ``request``; ``Unauthorized`` over TCP without a known token."""
        peer = request.scope.get("phalanx.peer")
        if peer is not None:
            uid = int(peer[1])
            try:
                name = pwd.getpwuid(uid).pw_name
            except KeyError:
                name = str(uid)
            return Caller(uid, name, uid in (0, self.owner_uid) or name in self.admins)
        auth = request.headers.get("authorization", "")
        scheme, _, token = auth.partition(" ")
        if scheme.lower() != "bearer":
            raise Unauthorized()
        node = self.agent_tokens.get(token)
        if node is not None:
            return Caller(-1, f"agent:{node}", False, node=node)
        return self.by_token(token)

    def by_token(self, token: str) -> Caller:
        """The user whose API token is ``token`` (the dashboard's session holds one);
        ``Unauthorized`` for an unknown token. Agents' tokens name no user."""
        user = self.tokens.get(token)
        if user is None:
            raise Unauthorized()
        try:
            uid = pwd.getpwnam(user).pw_uid
        except KeyError:
            uid = -1
        return Caller(uid, user, uid in (0, self.owner_uid) or user in self.admins)
