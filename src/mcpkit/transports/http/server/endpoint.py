"""The MCP endpoint of the Streamable HTTP server: ``POST``, ``GET`` and ``DELETE`` at
one path, both protocol eras.

Requests whose ``params._meta`` carries a modern protocol version are served
statelessly (2026-07-28): validated against the mirrored headers, answered with JSON or
an SSE stream scoped to the request, cancelled when the client disconnects. Everything
else is the legacy era (2025-11-25 and earlier): ``initialize`` mints an
``Mcp-Session-Id``, later requests must carry it, ``GET`` opens the session's stream
for server-initiated messages, ``DELETE`` ends the session, and SSE streams resume
with ``Last-Event-ID``.

:class:`McpEndpoint` is the innermost layer of the app (``transports/http/app.py``
stacks the middleware in front of it: health, the lazy start, the authorization
metadata, the path, ``Host``/``Origin``, the bearer token). It reads a POST — refusing
415, 406, 413 and 408 before any JSON-RPC parsing — parses it once, and routes it once to
its era: a modern request (its head names a version) to :mod:`.modern` before any
session is looked up (modern requests ignore ``Mcp-Session-Id``), anything else to
:mod:`.legacy`, in the session its ``Mcp-Session-Id`` names, looked up only then. The
scopes of what a request names are checked on the way. With a shared session store
(several nodes, docs/deploy.md) :mod:`.cluster` keeps this node's replicas of the
sessions and routes what the client sends for another node. Every refusal is a
:class:`~.asgi.Reject`, which the app's :class:`~.asgi.Refusals` layer answers.
"""

from __future__ import annotations

from collections.abc import Awaitable

import msgspec

from ....protocol.engine import Engine
from ....protocol.errors import PARSE_ERROR, McpError, flatten_text
from ....protocol.events import Event, Reply, RequestReceived
from ....stores.sessions import StoreUnavailable
from ...base import RequestHandler
from .asgi import (
    ClientDisconnected,
    Headers,
    Receive,
    Reject,
    Scope,
    Send,
    accepts_json_and_sse,
    json_error,
    read_body,
    request_headers,
    send_json,
)
from .cluster import Cluster, unavailable
from .edge_auth import CheckScopes
from .legacy import LegacyEndpoint
from .modern import ModernEndpoint
from .sessions import HttpSession, SessionManager

__all__ = ["McpEndpoint"]


class McpEndpoint:
    """The MCP endpoint, an ASGI app: ``sessions`` are the legacy sessions (kept in step
    with other nodes by ``cluster``), ``modern`` and ``legacy`` serve each era,
    ``check_scopes`` checks what a parsed message names. A body is limited to
    ``max_body_size`` bytes and ``body_timeout`` seconds. A :class:`~.lifespan.Part` of
    the app's lifespan. See the module docs."""

    def __init__(
        self,
        handler: RequestHandler,
        sessions: SessionManager,
        cluster: Cluster,
        modern: ModernEndpoint,
        legacy: LegacyEndpoint,
        *,
        max_body_size: int,
        body_timeout: float | None,
        check_scopes: CheckScopes,
    ) -> None:
        self._handler = handler
        self.sessions = sessions
        self._cluster = cluster
        self._modern = modern
        self._legacy = legacy
        self.max_body_size = max_body_size
        self.body_timeout = body_timeout
        self._check_scopes = check_scopes
        self.draining = False
        #: Parses a POST that names a session before the session is looked up; it keeps
        #: nothing (a request it reads is handed on at once to the engine that serves it).
        self._probe = Engine(max_error_text=handler.max_error_text)

    def __call__(self, scope: Scope, receive: Receive, send: Send) -> Awaitable[None]:
        """Serve one request (what to await: the method's own coroutine). Raises
        :class:`~.asgi.Reject`: 405 (with ``Allow``) for another method, 503 for a GET
        once draining, and what :meth:`post` and the legacy era raise. Cancellation
        propagates, except where an exchange answers the requests the server's shutdown
        cuts (:mod:`.shutdown`)."""
        method = scope["method"]
        headers = request_headers(scope)
        if method == "POST":
            return self.post(receive, send, headers)
        if method == "GET":
            if self.draining:
                raise Reject(503, "Service Unavailable: shutting down", [(b"retry-after", b"5")])
            return self._legacy.get(receive, send, headers)
        if method == "DELETE":
            return self._legacy.delete(send, headers)
        raise Reject(405, "Method Not Allowed", [(b"allow", b"GET, POST, DELETE")])

    # --- the app's lifespan ------------------------------------------------------------------

    async def start(self) -> None:
        """Start the session store's background work (a shared one: this node joins)."""
        await self._cluster.start()

    def begin_shutdown(self) -> None:
        """End every GET stream and refuse new ones (503); the requests still running
        when the server cuts them are answered -32603 (:mod:`.shutdown`)."""
        self.draining = True
        self._modern.draining = self._legacy.draining = True
        self.sessions.close_streams()

    def close(self) -> None:
        """End every legacy session here (cancel its handlers, end its streams)."""
        self.sessions.close_all()

    async def stop(self) -> None:
        """This node leaves the session store (the others see it gone)."""
        await self._cluster.close()

    # --- POST ------------------------------------------------------------------------------

    async def post(self, receive: Receive, send: Send, headers: Headers) -> None:
        """Read one JSON-RPC message and route it: a modern request (one whose ``_meta``
        names a version, if the server speaks the modern era) to :mod:`.modern` without
        looking up any session, anything else to :mod:`.legacy` in the session
        ``Mcp-Session-Id`` names (looked up then); a message that cannot be parsed is
        answered 400 with its JSON-RPC error.

        Raises :class:`~.asgi.Reject`: 415 unless the body is JSON, 406 if ``Accept``
        excludes JSON or SSE, 413 for a body over ``max_body_size``, 408 for one not
        received within ``body_timeout`` seconds, 403 for missing scopes, and what the
        eras raise. Returns without answering if the client goes away while sending
        the body.
        """
        ctype = headers.get("content-type", "").split(";")[0].strip().lower()
        if ctype != "application/json":
            raise Reject(415, "Unsupported Media Type: use Content-Type: application/json")
        accept = headers.get("accept")
        if accept is not None and not accepts_json_and_sse(accept):
            raise Reject(406, "Not Acceptable: Accept must allow application/json and text/event-stream")
        try:
            body = await read_body(receive, headers, self.max_body_size, self.body_timeout)
        except ClientDisconnected:
            return
        session_id = headers.get("mcp-session-id")
        engine: Engine | None = None
        if session_id:  # parsed before the session is looked up: a modern request needs none
            ev = self._parse(self._probe, body)
            if isinstance(ev, RequestReceived):
                self._probe.abandon(ev.id)
        else:
            engine = Engine(max_error_text=self._handler.max_error_text)
            ev = self._parse(engine, body)
        if isinstance(ev, RequestReceived) and ev.head.version is not None and self._handler.speaks("modern"):
            if engine is None:
                engine = Engine(max_error_text=self._handler.max_error_text)
                engine.track(ev.id)
            self._check_scopes(engine, ev)
            await self._modern.request(receive, send, headers, engine, ev)
            return
        sessions = self.sessions
        # a session of this node alone is looked up without a coroutine (what find does then)
        session = sessions.get(session_id) if session_id and not sessions.shared else await self.find(session_id)
        if engine is None:  # the message names a session: it is served by the session's engine
            engine = session.engine if session is not None else Engine(max_error_text=self._handler.max_error_text)
            if isinstance(ev, RequestReceived):
                ev = engine.adopt(ev)  # or the engine's answer to an id in use there
            elif session is not None:  # a notification or a response: matched against the session's requests
                ev = self._parse(engine, body)
        if not isinstance(ev, RequestReceived):  # a notification or a response: the server's scopes only
            self._check_scopes(None, None)
        if ev is None and session is not None and sessions.shared:
            await self._cluster.route(session, body)  # for another node: a response, a cancellation
        if isinstance(ev, Reply):
            await send_json(send, 400, ev.data)
            return
        if isinstance(ev, RequestReceived):
            self._check_scopes(engine, ev)
        await self._legacy.post(receive, send, headers, session_id, session, engine, ev)

    async def find(self, session_id: str | None) -> HttpSession | None:
        """The live session ``session_id`` names (None for none). Raises
        :class:`~.asgi.Reject` (503) when a shared session store must be asked and
        cannot be reached."""
        if not session_id:
            return None
        try:
            return await self.sessions.find(session_id)
        except StoreUnavailable as exc:
            raise unavailable(exc) from None

    def _parse(self, engine: Engine, body: bytes) -> Event | None:
        """``engine.receive(body)``; input the engine could not even parse (nested too
        deeply, say) is answered as a parse error instead of escaping."""
        try:
            return engine.receive(body)
        except (RecursionError, ValueError, msgspec.MsgspecError) as exc:
            text = flatten_text(str(exc), self._handler.max_error_text)
            return Reply(json_error(None, McpError(PARSE_ERROR, f"Parse error: {text}")))
