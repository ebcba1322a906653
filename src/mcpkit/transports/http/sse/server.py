"""The server's side of the deprecated HTTP+SSE transport of 2024-11-05, beside
Streamable HTTP (off by default: ``asgi_app(sse_transport=True)``; docs/http.md, "The
deprecated HTTP+SSE transport").

``GET /sse`` opens a session: its first event is ``event: endpoint`` whose data is the
URI to POST to (``/messages?session_id=<hex>``); every message the server sends —
responses, notifications, its own requests — follows as an ``event: message`` on that
stream. Each message the client POSTs there is answered 202 Accepted with no body. The
session ends when the stream closes: its handlers are cancelled, its questions to the
client fail, and a later POST gets 404. Only the legacy era is served (``initialize``,
a session): a request whose ``_meta`` names a protocol version is answered with an error.

The session is an :class:`~.session.SseSession` (an ``HttpSession``: its engine,
server state, owner and change notifications, as on the Streamable HTTP endpoint) kept
by a :class:`~mcpkit.transports.http.server.sessions.SessionManager` of its own, with
the app's ``max_sessions`` and no idle timeout: the open stream is the session.

:class:`SseEndpoint` is a middleware in front of the MCP endpoint: it serves its two
paths and passes every other request on, so the app's checks in front of both — the
path, ``Host`` and ``Origin``, the bearer token — apply to it alike, and it reuses the
Streamable HTTP server's ASGI helpers, sessions and shutdown answer
(``transports/http/server/``), which never import it.
"""

from __future__ import annotations

import asyncio
from urllib.parse import parse_qs, quote

import msgspec

from ....auth.identity import CURRENT
from ....protocol.engine import Engine
from ....protocol.errors import INTERNAL_ERROR, INVALID_REQUEST, PARSE_ERROR, McpError, flatten_text
from ....protocol.events import CancelReceived, Event, NotificationReceived, Reply, RequestReceived, ResponseReceived
from ....protocol.sse import KEEPALIVE, encode_event
from ....runtime.outbound import Notifier
from ....runtime.outcome import deliver, run_request
from ....stores.events import EventStore
from ...base import RequestHandler
from ..server.asgi import (
    ASGIApp,
    ClientDisconnected,
    Headers,
    Receive,
    Reject,
    Scope,
    Send,
    accepts,
    end_body,
    json_error,
    local_path,
    read_body,
    request_headers,
    send_empty,
    send_frame,
    send_json,
    start_sse,
    wait_disconnect,
)
from ..server.edge_auth import CheckScopes
from ..server.sessions import SessionManager
from ..server.shutdown import SHUTDOWN_MESSAGE, last_words
from .session import WAKE, SseSession, ask

__all__ = ["SseEndpoint", "SseSession"]


class SseEndpoint:
    """Middleware that serves ``GET sse_path`` (a session's stream) and ``POST
    messages_path`` (its messages), and passes every other request to ``app``.
    ``check_scopes`` is the app's scope check (403 insufficient_scope); the other
    options are the app's, with the same meaning (docs/limits.md). Raises
    ``ValueError`` for paths that are not paths, or that collide (``mcp_path`` is the
    MCP endpoint's). A :class:`~mcpkit.transports.http.server.lifespan.Part` of the
    app's lifespan."""

    def __init__(
        self,
        app: ASGIApp,
        handler: RequestHandler,
        store: EventStore,
        *,
        sse_path: str,
        messages_path: str,
        max_sessions: int,
        keepalive_interval: float,
        max_session_requests: int,
        max_body_size: int,
        body_timeout: float | None,
        check_scopes: CheckScopes,
        mcp_path: str | None = None,
    ) -> None:
        for name, value in (("sse_path", sse_path), ("messages_path", messages_path)):
            if not value.startswith("/") or "?" in value or "#" in value:
                raise ValueError(f"{name} must be a path starting with '/', not {value!r}")
        self.sse_path = sse_path.rstrip("/") or "/"
        self.messages_path = messages_path.rstrip("/") or "/"
        if len({self.sse_path, self.messages_path, mcp_path}) < 3:
            raise ValueError(f"sse_path and messages_path must differ from each other and from the MCP path {mcp_path!r}")
        self.app = app
        self._handler = handler
        self._store = store
        self.sessions = SessionManager(idle_timeout=float("inf"), max_sessions=max_sessions)
        self._keepalive_interval = keepalive_interval
        self._max_session_requests = max_session_requests
        self._max_body_size = max_body_size
        self._body_timeout = body_timeout
        self._check_scopes = check_scopes
        self.draining = False

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        endpoint = self.route(scope)
        if endpoint is None:
            await self.app(scope, receive, send)
        else:
            await self.serve(endpoint, scope, receive, send, request_headers(scope))

    def route(self, scope: Scope) -> str | None:
        """Which of the two endpoints the request is for (``"sse"``, ``"messages"``),
        below any ``root_path`` (a trailing slash does not matter); None for neither."""
        path = local_path(scope)
        return "sse" if path == self.sse_path else "messages" if path == self.messages_path else None

    async def serve(self, endpoint: str, scope: Scope, receive: Receive, send: Send, headers: Headers) -> None:
        """Serve a request :meth:`route` named ``endpoint``. Raises :class:`Reject` as
        :meth:`open` and :meth:`post` say, and 405 for another method."""
        method = scope["method"]
        if endpoint == "sse":
            if method != "GET":
                raise Reject(405, "Method Not Allowed", [(b"allow", b"GET")])
            await self.open(scope, receive, send, headers)
        elif method != "POST":
            raise Reject(405, "Method Not Allowed", [(b"allow", b"POST")])
        else:
            await self.post(scope, receive, send, headers)

    async def start(self) -> None:
        """Nothing to start: the sessions live while their streams are open."""
        return None

    def begin_shutdown(self) -> None:
        """Refuse new streams (503); end each open one once its requests are answered."""
        self.draining = True
        self.sessions.close_streams()

    def close(self) -> None:
        """End every session now (its handlers are cancelled)."""
        self.sessions.close_all()

    async def stop(self) -> None:
        """Nothing to stop once the sessions are closed."""
        return None

    # --- GET: the session's stream -------------------------------------------------------------

    async def open(self, scope: Scope, receive: Receive, send: Send, headers: Headers) -> None:
        """Start a session and write its stream until the client goes away (or the
        server shuts down); then end the session. Raises :class:`Reject`: 406 if
        ``Accept`` excludes SSE, 503 when shutting down or ``max_sessions`` are open.
        Cancellation ends the session too."""
        accept = headers.get("accept")
        if accept is not None and not accepts(accept, "text/event-stream"):
            raise Reject(406, "Not Acceptable: Accept must allow text/event-stream")
        if self.draining:
            raise Reject(503, "Service Unavailable: shutting down", [(b"retry-after", b"5")])
        import secrets  # not at import time: it pulls in hashlib and random

        handler = self._handler
        session = SseSession(secrets.token_hex(16), handler.new_session(), self._store, handler.max_error_text)
        if not self.sessions.add(session):
            raise Reject(503, "Service Unavailable: too many sessions", [(b"retry-after", b"5")])
        try:
            session.disconnect = handler.connect(session.server_session, Notifier(session.notify, drain=session.drain))
            root: str = scope.get("root_path", "")
            uri = f"{quote(root.rstrip('/') + self.messages_path)}?session_id={session.id}"
            await self._stream(receive, send, session, encode_event(uri.encode(), event="endpoint"))
        finally:
            self.sessions.remove(session.id)

    async def _stream(self, receive: Receive, send: Send, session: SseSession, first: bytes) -> None:
        """Write ``first``, then the session's frames, a keep-alive comment every
        ``keepalive_interval`` seconds of silence, until the client goes away, the
        session ends, or (draining) no request is left in progress.

        Cancelled while draining (the ASGI server's shutdown grace ran out): the
        requests in progress are cancelled and answered with -32603, what is queued and
        those answers are written and the stream ended (for at most a second), and it
        returns, so that the client sees an answer to each request and a complete
        stream. Cancelled otherwise, ``CancelledError`` propagates."""
        watcher = asyncio.get_running_loop().create_task(wait_disconnect(receive))
        try:
            await self._write(send, session, first, watcher)
        except asyncio.CancelledError:
            if not session.draining:
                raise
            last = session.last_words(McpError(INTERNAL_ERROR, SHUTDOWN_MESSAGE))  # as on the MCP endpoint
            await last_words(end_body(send, last))
        finally:
            watcher.cancel()

    async def _write(self, send: Send, session: SseSession, first: bytes, watcher: asyncio.Task[None]) -> None:
        """The loop of :meth:`_stream`. Cancellation propagates."""
        getter: asyncio.Future[bytes | None] | None = None
        try:
            await start_sse(send)
            await send_frame(send, first)
            while not watcher.done():
                if session.draining and not session.engine.incoming:
                    break
                getter = asyncio.ensure_future(session.next_frame())
                done, _ = await asyncio.wait(
                    {getter, watcher}, timeout=self._keepalive_interval, return_when=asyncio.FIRST_COMPLETED
                )
                if getter not in done:
                    getter.cancel()
                    if not watcher.done():
                        await send_frame(send, KEEPALIVE)
                    continue
                frame = getter.result()
                if frame is None:
                    break
                if frame:
                    await send_frame(send, frame)
            await end_body(send)
        finally:
            if getter is not None:
                getter.cancel()

    # --- POST: one message of a session ----------------------------------------------------------

    async def post(self, scope: Scope, receive: Receive, send: Send, headers: Headers) -> None:
        """Take one message of a session: 202 Accepted, its answer (if any) on the
        session's stream. A message that cannot be parsed is answered 400 with its
        JSON-RPC error (also sent on the stream when it names a request id that no
        request in progress has). A JSON-RPC batch is such a message: -32600.

        Raises :class:`Reject`: 415 unless the body is JSON; 400 without ``session_id``;
        404 for an unknown or ended session; 403 for another identity's session or
        (``auth``) missing scopes; 413, 408 for the body as on the MCP endpoint; 429 past
        ``max_session_requests`` or while the client leaves its stream unread. Returns
        without answering if the client goes away while sending the body.
        """
        ctype = headers.get("content-type", "").split(";")[0].strip().lower()
        if ctype != "application/json":
            raise Reject(415, "Unsupported Media Type: use Content-Type: application/json")
        session = self._session_of(scope)
        try:
            body = await read_body(receive, headers, self._max_body_size, self._body_timeout)
        except ClientDisconnected:
            return
        engine = session.engine
        ev = _parse(engine, body, self._handler.max_error_text)
        if isinstance(ev, RequestReceived):
            self._check_request(session, ev)
        else:  # a notification, a response, or input refused: the server's scopes only
            self._check_scopes(None, None)
            if isinstance(ev, Reply):
                self._reply(session, ev)
                await send_json(send, 400, ev.data)
                return
            if isinstance(ev, CancelReceived) and isinstance(ev.handle, asyncio.Task):
                ev.handle.cancel()
            elif isinstance(ev, ResponseReceived):
                deliver(ev)
            elif isinstance(ev, NotificationReceived):
                self._handler.notified(session.server_session, ev.method)
        await send_empty(send, 202)
        if isinstance(ev, RequestReceived):
            self._start(session, ev)

    def _session_of(self, scope: Scope) -> SseSession:
        """The live session the query's ``session_id`` (or ``sessionId``) names. Raises
        :class:`Reject`: 400 without one, 404 for an unknown one, 403 when it was opened
        by another identity."""
        query = parse_qs(scope.get("query_string", b"").decode("latin-1"))
        ids = query.get("session_id") or query.get("sessionId")
        if not ids or not ids[0]:
            raise Reject(400, "Bad Request: missing session_id")
        session = self.sessions.get(ids[0])
        if not isinstance(session, SseSession) or session.closed:
            raise Reject(404, "Not Found: unknown or ended session")
        identity = CURRENT.get()
        if session.subject != (identity.principal if identity is not None else None):
            raise Reject(403, "Forbidden: this session belongs to another identity")
        return session

    def _check_request(self, session: SseSession, request: RequestReceived) -> None:
        """Raises :class:`Reject` after forgetting the request: 403 for missing scopes,
        429 past ``max_session_requests`` in progress or while more than
        :data:`~.session.MAX_BACKLOG` messages or
        :data:`~.session.MAX_BACKLOG_BYTES` bytes wait for a client that does not
        read its stream."""
        engine = session.engine
        self._check_scopes(engine, request)
        limit = self._max_session_requests
        if len(engine.incoming) > limit:
            text = f"Too many requests in progress: the limit is {limit} per session"
        elif session.congested:
            text = "Too many requests in progress: their answers wait for the client to read its stream"
        else:
            return
        engine.abandon(request.id)
        err = McpError(INTERNAL_ERROR, text, status=429)
        raise Reject(429, str(err), [(b"retry-after", b"1")], body=json_error(request.id, err))

    def _reply(self, session: SseSession, reply: Reply) -> None:
        """Send an error answer on the stream too when it names a request id (its
        client waits for it there) — unless a request in progress has that id (the
        message reused it): on the stream, the answer would be taken for that
        request's, whose own answer would then be lost."""
        try:
            rid = msgspec.json.decode(reply.data).get("id")
        except (msgspec.DecodeError, AttributeError):
            rid = None
        if rid is not None and rid not in session.engine.incoming:
            session.send(reply.data)

    def _start(self, session: SseSession, request: RequestReceived) -> None:
        """Run ``request`` in ``session`` on a task of its own; its response goes to the
        stream. The task is the request's handle: a cancellation from the client or the
        session's end cancels it. A modern request (a protocol version in ``_meta``) is
        answered with -32600, not served."""
        engine = session.engine
        if session.closed or request.id not in engine.incoming:  # ended, or cancelled meanwhile
            engine.abandon(request.id)
            return
        if request.head.version is not None:
            text = "Invalid Request: the HTTP+SSE transport serves the legacy era only (initialize, no protocol version in _meta)"
            message = engine.respond_error(request.id, McpError(INVALID_REQUEST, text))
            if message is not None:
                session.send(message)
            return
        task = asyncio.get_running_loop().create_task(self._run(session, request))
        engine.attach(request.id, task)

    async def _run(self, session: SseSession, request: RequestReceived) -> None:
        """Run the handler and queue its response (none if the request was cancelled).
        On cancellation the request is abandoned and ``CancelledError`` propagates."""

        async def ask_client(method: str, params: object, *, timeout: float) -> msgspec.Raw:
            return await ask(session, method, params, timeout=timeout)

        outbound = Notifier(session.notify, ask_client, session.drain)
        try:
            message, _ = await run_request(
                session.engine,
                request.id,
                request.method,
                self._handler.serve_request(request, session=session.server_session, outbound=outbound),
            )
            if message is not None:
                session.send(message)
        finally:
            if session.draining:
                session.frames.put_nowait(WAKE)


def _parse(engine: Engine, body: bytes, max_error_text: int) -> Event | None:
    """``engine.receive(body)``; input the engine could not even parse (nested too
    deeply, say) is answered as a parse error instead of escaping."""
    try:
        return engine.receive(body)
    except (RecursionError, ValueError, msgspec.MsgspecError) as exc:
        text = flatten_text(str(exc), max_error_text)
        return Reply(json_error(None, McpError(PARSE_ERROR, f"Parse error: {text}")))
