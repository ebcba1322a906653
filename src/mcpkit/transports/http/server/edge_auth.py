"""Authorization at the HTTP edge (docs/auth.md): the checks the app makes with its
``ResourceServer`` before a message reaches the dispatcher — on the MCP endpoint and on
the deprecated HTTP+SSE transport's alike.

:class:`EdgeAuth` serves the Protected Resource Metadata, verifies each request's bearer
token (401 without a valid, unexpired one — :meth:`ResourceServer.authenticate
<mcpkit.auth.server.ResourceServer.authenticate>` checks ``exp``, with the verifier's
leeway, for every verifier; 403 for missing scopes or a legacy session
another identity opened; 503 when tokens cannot be verified), and checks the scopes of
the tool, prompt or resource a request names once it is parsed.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import msgspec

from ....auth.identity import CURRENT, AccessToken
from ....auth.server import AuthRefusal, ResourceServer
from ....protocol.engine import Engine
from ....protocol.events import RequestReceived
from ...base import RequestHandler
from .asgi import Headers, Reject, Scope, Send, send_json
from .sessions import HttpSession

__all__ = ["EdgeAuth"]

#: The live Streamable HTTP session an ``Mcp-Session-Id`` names (None for none).
FindSession = Callable[[str | None], Awaitable[HttpSession | None]]


class EdgeAuth:
    """The app's authorization checks with ``auth`` for ``server``'s scopes."""

    def __init__(self, auth: ResourceServer, server: RequestHandler) -> None:
        self.auth = auth
        self._server = server

    async def metadata(self, scope: Scope, send: Send) -> bool:
        """Serve the Protected Resource Metadata if this is a GET for one of its paths;
        returns whether it was."""
        path: str = scope.get("path", "")
        if scope["method"] not in ("GET", "HEAD") or path.rstrip("/") not in self.auth.metadata_paths():
            return False
        body = msgspec.json.encode(self.auth.metadata(self._server.all_scopes()))
        await send_json(send, 200, body, [(b"cache-control", b"max-age=3600"), (b"access-control-allow-origin", b"*")])
        return True

    async def authenticate(self, headers: Headers, method: str, find: FindSession) -> AccessToken:
        """The request's verified identity. Raises :class:`Reject`: 401 (with
        ``WWW-Authenticate``) without a valid token or with an expired one (past the
        verifier's leeway, checked by the ``ResourceServer``), 403 for missing scopes (a
        POST's are checked by :meth:`check_scopes` once its request is known) or when
        ``Mcp-Session-Id`` names a session another subject opened, 503 when tokens
        cannot be verified now."""
        try:
            # a POST's scopes are checked once its request is known: the refusal names all it needs
            identity = await self.auth.authenticate(headers.get("authorization"), check_scopes=method != "POST")
        except AuthRefusal as refusal:
            raise Reject(refusal.status, refusal.text, refusal.headers()) from None
        session = await find(headers.get("mcp-session-id"))
        if session is not None and session.subject != identity.principal:
            raise Reject(403, "Forbidden: this session belongs to another identity")
        return identity

    def check_scopes(self, engine: Engine | None, request: RequestReceived | None) -> None:
        """Raises :class:`Reject` (403 insufficient_scope, naming every scope needed) if
        the caller's token lacks the server's scopes or those of the tool, prompt or
        resource ``request`` names (the request is then forgotten by ``engine``)."""
        identity = CURRENT.get()
        if identity is None:
            return
        needed = self._server.scopes_for(request.method, request.params) if request is not None else ()
        try:
            self.auth.check_scopes(identity, needed)
        except AuthRefusal as refusal:
            if engine is not None and request is not None:
                engine.abandon(request.id)
            raise Reject(refusal.status, refusal.text, refusal.headers()) from None
