"""Authorization at the HTTP edge (docs/auth.md): the checks the app makes with its
``ResourceServer`` before a message reaches the dispatcher — on the MCP endpoint and on
the deprecated HTTP+SSE transport's alike.

Three pieces, at three depths of the app:

* :class:`ProtectedResourceMetadata`, a middleware in front of the path and ``Host``
  checks: it serves the Protected Resource Metadata (RFC 9728) at its well-known paths,
  to anyone;
* :class:`BearerAuth`, a middleware behind them: it verifies each request's bearer token
  (401 without a valid, unexpired one — :meth:`ResourceServer.authenticate
  <mcpkit.auth.server.ResourceServer.authenticate>` checks ``exp``, with the verifier's
  leeway, for every verifier; 403 for missing scopes or a legacy session another
  principal opened; 503 when tokens cannot be verified — the verifier is unavailable, or
  raised something unforeseen, which is logged and never shown) and puts the verified
  identity in the request's context (``auth/identity.py``), which the handler's task
  inherits;
* :class:`ScopeCheck`, which the endpoints call once a POST's message is parsed: the
  scopes of the tool, prompt or resource it names (403 ``insufficient_scope``). Without
  authorization the endpoints are given :func:`no_scopes` instead.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import msgspec

from ....auth.identity import CURRENT, AccessToken
from ....auth.server import AuthRefusal, ResourceServer
from ....protocol.engine import Engine
from ....protocol.events import RequestReceived
from ...base import RequestHandler
from .asgi import ASGIApp, Headers, Receive, Reject, Scope, Send, request_headers, send_json
from .sessions import HttpSession

__all__ = ["ProtectedResourceMetadata", "BearerAuth", "ScopeCheck", "CheckScopes", "no_scopes"]

#: The live Streamable HTTP session an ``Mcp-Session-Id`` names (None for none).
FindSession = Callable[[str | None], Awaitable[HttpSession | None]]
#: The scope check of a parsed message: ``(engine, request)``, both None for a message
#: that is not a request (then only the server's own scopes are needed).
CheckScopes = Callable[[Engine | None, RequestReceived | None], None]


class ProtectedResourceMetadata:
    """Middleware that serves ``auth``'s Protected Resource Metadata (with the scopes
    ``server`` declares) on a GET or HEAD of one of its paths, hands the paths of its
    ``endpoints`` (an authorization server of the app's own: the OAuth proxy) to them, and
    passes every other request to ``app``."""

    def __init__(self, app: ASGIApp, auth: ResourceServer, server: RequestHandler) -> None:
        self.app = app
        self.auth = auth
        self._server = server

    def __call__(self, scope: Scope, receive: Receive, send: Send) -> Awaitable[None]:
        path: str = scope.get("path", "")
        if scope["method"] in ("GET", "HEAD") and path.rstrip("/") in self.auth.metadata_paths():
            body = msgspec.json.encode(self.auth.metadata(self._server.all_scopes()))
            return send_json(send, 200, body, [(b"cache-control", b"max-age=3600"), (b"access-control-allow-origin", b"*")])
        endpoints = self.auth.endpoints
        if endpoints is not None and endpoints.handles(path):
            return endpoints(scope, receive, send)
        return self.app(scope, receive, send)


class BearerAuth:
    """Middleware that lets a request through to ``app`` only with a verified identity
    (:meth:`authenticate`), which it sets as the request's for the rest of its task.
    ``find`` looks up the session an ``Mcp-Session-Id`` names."""

    def __init__(self, app: ASGIApp, auth: ResourceServer, find: FindSession) -> None:
        self.app = app
        self.auth = auth
        self._find = find

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        # the identity is set for this request's task only
        CURRENT.set(await self.authenticate(request_headers(scope), scope["method"], scope))
        await self.app(scope, receive, send)

    async def authenticate(self, headers: Headers, method: str, scope: Scope | None = None) -> AccessToken:
        """The request's verified identity. Raises :class:`Reject`: 401 (with
        ``WWW-Authenticate``) without a valid token or with an expired one (past the
        verifier's leeway, checked by the ``ResourceServer``), 403 for missing scopes (a
        POST's are checked by :class:`ScopeCheck` once its request is known) or when
        ``Mcp-Session-Id`` names a session another principal opened
        (:attr:`AccessToken.principal <mcpkit.auth.identity.AccessToken.principal>`), 503
        when tokens cannot be verified now — the verifier is unavailable or failed
        unexpectedly, with the ``Retry-After`` it suggests — (or the shared session store
        cannot be reached). ``scope`` gives a DPoP proof what it is checked against: every
        ``DPoP`` header (one is allowed) and the public path (``root_path`` included)."""
        proofs: list[str] = []
        path = None
        if scope is not None and self.auth.dpop is not None:
            proofs = [v.decode("latin-1").strip() for k, v in scope.get("headers", ()) if k.lower() == b"dpop"]
            root, path = scope.get("root_path", ""), scope.get("path", "")
            path = path if path.startswith(root) else root + path
        try:
            # a POST's scopes are checked once its request is known: the refusal names all it needs
            identity = await self.auth.authenticate(
                headers.get("authorization"), check_scopes=method != "POST", dpop_proofs=proofs, method=method, path=path
            )
        except AuthRefusal as refusal:
            raise Reject(refusal.status, refusal.text, refusal.headers()) from None
        session = await self._find(headers.get("mcp-session-id"))
        if session is not None and session.subject != identity.principal:
            raise Reject(403, "Forbidden: this session belongs to another identity")
        return identity


class ScopeCheck:
    """The scope check of a parsed message with ``auth``, for ``server``'s scopes: a
    :data:`CheckScopes`."""

    def __init__(self, auth: ResourceServer, server: RequestHandler) -> None:
        self.auth = auth
        self._server = server

    def __call__(self, engine: Engine | None, request: RequestReceived | None) -> None:
        """Raises :class:`Reject` (403 insufficient_scope, naming every scope needed) if
        the caller's token lacks the server's scopes or those of the tool, prompt or
        resource ``request`` names (the request is then forgotten by ``engine``)."""
        identity = CURRENT.get()
        if identity is None:
            return
        needed = self._server.request_scopes(request) if request is not None else ()
        try:
            self.auth.check_scopes(identity, needed)
        except AuthRefusal as refusal:
            if engine is not None and request is not None:
                engine.abandon(request.id)
            raise Reject(refusal.status, refusal.text, refusal.headers()) from None


def no_scopes(engine: Engine | None, request: RequestReceived | None) -> None:
    """The scope check without authorization: nothing is needed. Never raises."""
    return None
