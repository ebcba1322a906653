"""Streamable HTTP server: a plain ASGI application serving both protocol eras.

One endpoint. Requests whose ``params._meta`` carries a modern protocol version are
served statelessly (2026-07-28): validated against the mirrored headers, answered with
JSON or an SSE stream scoped to the request, cancelled when the client disconnects.
Everything else is the legacy era (2025-11-25 and earlier): ``initialize`` mints an
``Mcp-Session-Id``, later requests must carry it, ``GET`` opens the session's stream
for server-initiated messages, ``DELETE`` ends the session, and SSE streams resume
with ``Last-Event-ID``.

HTTP-level problems are refused before any JSON-RPC parsing with a plain status and a
short text body: 403 (Host/Origin), 405, 406, 408, 413, 415, and 400/404 for sessions
(docs/http.md, "HTTP status codes"). No exception escapes to the ASGI server: one that
nothing expected is logged and answered 500 with a JSON-RPC -32603 body.

This module is the entry: it checks the path and the ``Host``/``Origin`` headers,
reads a POST, and routes each message once to its era — :mod:`.modern` or
:mod:`.legacy` — which serve it from there. With a shared session store (several
nodes, docs/deploy.md) :mod:`.cluster` keeps this node's replicas of the sessions and
routes what the client sends for another node; :mod:`.health` answers probes;
:mod:`.edge_auth` checks bearer tokens and scopes when ``auth`` is set. With
``sse_transport=True``, :mod:`.sse_transport` serves the deprecated HTTP+SSE transport
(``GET /sse``, ``POST /messages``) beside it, behind the same checks.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator, Sequence
from contextlib import AbstractAsyncContextManager
from typing import Any

import msgspec

from ....auth.identity import CURRENT
from ....auth.server import ResourceServer
from ....protocol.engine import Engine
from ....protocol.errors import INTERNAL_ERROR, PARSE_ERROR, McpError, flatten_text
from ....protocol.events import Event, Reply, RequestReceived
from ....stores.events import EventStore, InMemoryEventStore
from ....stores.sessions import InMemorySessionStore, SessionStore, StoreUnavailable
from ...base import RequestHandler
from .asgi import (
    ClientDisconnected,
    Headers,
    Receive,
    Reject,
    Scope,
    Send,
    accepts,
    json_error,
    read_body,
    send_json,
    send_reject,
)
from .cluster import Cluster, unavailable
from .edge_auth import EdgeAuth
from .health import Health
from .legacy import LegacyEndpoint
from .modern import ErrorStatus, ModernEndpoint, meta_protocol_version
from .security import HostOriginGuard
from .sessions import HttpSession, SessionManager
from .sse_transport import SseEndpoint

__all__ = ["StreamableHTTPApp"]

_log = logging.getLogger("mcpkit.http")


def _retry_ms(seconds: float | None) -> int | None:
    """``retry_interval`` in whole milliseconds, as SSE's ``retry`` field takes it.
    Raises ``ValueError`` unless it is None or a finite number of seconds >= 0."""
    if seconds is None:
        return None
    if not (isinstance(seconds, (int, float)) and 0 <= seconds < float("inf")):
        raise ValueError(f"retry_interval must be None or seconds >= 0, not {seconds!r}")
    return round(seconds * 1000)


class StreamableHTTPApp:
    """The ASGI application returned by :meth:`Server.asgi_app`. See the module docs."""

    def __init__(
        self,
        server: RequestHandler,
        *,
        path: str | None = "/mcp",
        json_response: bool | None = None,
        allowed_hosts: Sequence[str] | None = None,
        allowed_origins: Sequence[str] | None = None,
        dns_rebinding_protection: bool | None = None,
        max_body_size: int = 4 * 1024 * 1024,
        event_store: EventStore | None = None,
        session_idle_timeout: float = 1800.0,
        max_sessions: int = 10_000,
        keepalive_interval: float = 20.0,
        max_session_requests: int = 100,
        body_timeout: float | None = None,
        auth: ResourceServer | None = None,
        error_status: ErrorStatus = "spec",
        retry_interval: float | None = 1.0,
        session_store: SessionStore | None = None,
        health_path: str | None = None,
        sse_transport: bool = False,
        sse_path: str = "/sse",
        messages_path: str = "/messages",
    ) -> None:
        self.server = server
        self._running: AbstractAsyncContextManager[Any] | None = None
        self._lazy_started = False
        self._start_failed: str | None = None
        #: Authorization (docs/auth.md): None serves everyone.
        self.auth = auth
        self._auth = EdgeAuth(auth, server) if auth is not None else None
        self.path = path.rstrip("/") or "/" if path is not None else None
        self.json_response = json_response
        self._guard = HostOriginGuard(allowed_hosts, allowed_origins, dns_rebinding_protection)
        self.allowed_hosts = self._guard.allowed_hosts
        self.allowed_origins = self._guard.allowed_origins
        self.dns_rebinding_protection = dns_rebinding_protection
        self.max_body_size = max_body_size
        self.body_timeout = body_timeout
        self.draining = False
        self.event_store: EventStore = event_store if event_store is not None else InMemoryEventStore()
        #: Where legacy sessions are kept: this process (the default), or shared by several nodes.
        self.session_store: SessionStore = session_store if session_store is not None else InMemorySessionStore()
        self.sessions = SessionManager(idle_timeout=session_idle_timeout, max_sessions=max_sessions, store=self.session_store)
        self._cluster = Cluster(server, self.sessions, self.session_store, self.event_store, keepalive=keepalive_interval)
        self._health = Health(health_path, self._readiness) if health_path is not None else None
        self.keepalive_interval = keepalive_interval
        self._modern = ModernEndpoint(server, json_response=json_response, error_status=error_status)
        self.error_status = error_status
        self.retry_interval = retry_interval
        self._legacy = LegacyEndpoint(
            server,
            self.sessions,
            self.event_store,
            json_response=json_response,
            keepalive_interval=keepalive_interval,
            max_session_requests=max_session_requests,
            retry_ms=_retry_ms(retry_interval),
            cluster=self._cluster,
        )
        #: The deprecated HTTP+SSE transport (2024-11-05) beside this endpoint, if enabled.
        self.sse: SseEndpoint | None = None
        if sse_transport:
            self.sse = SseEndpoint(
                server,
                self.event_store,
                sse_path=sse_path,
                messages_path=messages_path,
                max_sessions=max_sessions,
                keepalive_interval=keepalive_interval,
                max_session_requests=max_session_requests,
                max_body_size=max_body_size,
                body_timeout=body_timeout,
                check_scopes=self._check_scopes,
                mcp_path=self.path,
            )

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        kind = scope["type"]
        if kind == "lifespan":
            await self._lifespan(receive, send)
            return
        if kind != "http":
            return
        if self._health is not None and await self._health.serve(scope, send):
            return
        # Values without their surrounding whitespace (RFC 9110 5.5): h11 strips it,
        # httptools does not, and other ASGI servers differ.
        headers = {k.decode("latin-1").lower(): v.decode("latin-1").strip(" \t") for k, v in scope.get("headers", ())}
        try:
            if self._running is None:
                await self._ensure_started()
            if self._auth is not None and await self._auth.metadata(scope, send):
                return
            sse = self.sse.route(scope) if self.sse is not None else None
            if sse is None:
                self._check_path(scope)
            self._guard.check(scope, headers)
            method = scope["method"]
            if self._auth is not None:  # the identity is set for this request's task only
                CURRENT.set(await self._auth.authenticate(headers, method, self._find))
            if sse is not None and self.sse is not None:
                await self.sse.serve(sse, scope, receive, send, headers)
            elif method == "POST":
                await self._post(receive, send, headers)
            elif method == "GET":
                if self.draining:
                    raise Reject(503, "Service Unavailable: shutting down", [(b"retry-after", b"5")])
                await self._legacy.get(receive, send, headers)
            elif method == "DELETE":
                await self._legacy.delete(send, headers)
            else:
                raise Reject(405, "Method Not Allowed", [(b"allow", b"GET, POST, DELETE")])
        except Reject as rej:
            await send_reject(send, rej)
        except Exception:  # the last resort: never uvicorn's plain-text 500 and traceback
            _log.exception("unexpected error serving %s %s", scope.get("method"), scope.get("path"))
            # If the response has started, the ASGI server refuses this (safe_send ignores that).
            await send_json(send, 500, json_error(None, McpError(INTERNAL_ERROR, "Internal error")))

    def _check_scopes(self, engine: Engine | None, request: RequestReceived | None) -> None:
        """:meth:`EdgeAuth.check_scopes` with authorization configured; nothing without."""
        if self._auth is not None:
            self._auth.check_scopes(engine, request)

    def begin_shutdown(self) -> None:
        """Start a graceful shutdown: end every GET stream and refuse new ones (503).
        Requests in progress go on; the lifespan shutdown (or :meth:`close`) ends them."""
        self.draining = True
        self._modern.draining = self._legacy.draining = True  # those cut after the grace get -32603
        self.server.shutdown()  # open modern subscriptions are answered and end
        self.sessions.close_streams()
        if self.sse is not None:
            self.sse.begin_shutdown()

    def close(self) -> None:
        """End every legacy session (cancel its handlers, end its streams) and every
        open modern subscription."""
        self.server.shutdown()
        self.sessions.close_all()
        if self.sse is not None:
            self.sse.close()

    async def _lifespan(self, receive: Receive, send: Send) -> None:
        """Serve the ASGI lifespan protocol: startup enters the server's lifespan (a
        failure is reported, and the ASGI server exits); shutdown ends every legacy
        session and open subscription, then exits the lifespan."""
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                try:
                    await self._start()
                except Exception as exc:
                    _log.error("%s", exc)
                    await send({"type": "lifespan.startup.failed", "message": str(exc)})
                    return
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                await self._stop()
                await send({"type": "lifespan.shutdown.complete"})
                return

    async def _start(self) -> None:
        await self._cluster.start()
        self._running = self.server.running()
        try:
            await self._running.__aenter__()
        except BaseException:
            self._running = None
            raise

    async def _stop(self) -> None:
        self.close()
        running, self._running = self._running, None
        try:
            if running is not None:
                await running.__aexit__(None, None, None)
        finally:
            await self._cluster.close()

    @contextlib.asynccontextmanager
    async def lifespan(self, app: object = None) -> AsyncIterator[None]:
        """The app's lifespan as a context manager, for a host application that does
        not forward ASGI lifespan events to mounted apps (Starlette, FastAPI):
        ``Starlette(routes=[Mount("/mcp", app=mcp)], lifespan=mcp.lifespan)``."""
        await self._start()
        try:
            yield
        finally:
            await self._stop()

    async def _ensure_started(self) -> None:
        """A request before any lifespan startup (mounted where lifespan events do not
        arrive): start the server's lifespan now, once, and keep it up. Raises
        :class:`Reject` (503) if it failed to start (then and for every later request)."""
        if self._start_failed is not None:
            raise Reject(503, f"Service Unavailable: {self._start_failed}")
        if self._lazy_started:
            return
        self._lazy_started = True
        _log.debug("no ASGI lifespan startup was received: the server's lifespan starts with the first request")
        try:
            await self._start()
        except Exception as exc:
            self._start_failed = flatten_text(str(exc), 256)
            _log.error("%s", exc)
            raise Reject(503, f"Service Unavailable: {self._start_failed}") from None

    def _check_path(self, scope: Scope) -> None:
        """Raises :class:`Reject` (404) unless the request is for our path (below any
        ``root_path`` it is mounted at; a trailing slash does not matter)."""
        if self.path is None:
            return
        path: str = scope.get("path", "")
        root: str = scope.get("root_path", "")
        if root and path.startswith(root):
            path = path[len(root) :]
        if (path.rstrip("/") or "/") != self.path:
            raise Reject(404, "Not Found")

    async def _post(self, receive: Receive, send: Send, headers: Headers) -> None:
        """Read one JSON-RPC message and route it: a modern request (one whose ``_meta``
        names a version, if the server speaks the modern era) to :mod:`.modern`,
        anything else to :mod:`.legacy`; a message that cannot be parsed is answered
        400 with its JSON-RPC error.

        Raises :class:`Reject`: 415 unless the body is JSON, 406 if ``Accept`` excludes
        JSON or SSE, 413 for a body over ``max_body_size``, 408 for one not received
        within ``body_timeout`` seconds, and what the eras raise. Returns without
        answering if the client goes away while sending the body.
        """
        ctype = headers.get("content-type", "").split(";")[0].strip().lower()
        if ctype != "application/json":
            raise Reject(415, "Unsupported Media Type: use Content-Type: application/json")
        accept = headers.get("accept")
        if accept is not None and not (accepts(accept, "application/json") and accepts(accept, "text/event-stream")):
            raise Reject(406, "Not Acceptable: Accept must allow application/json and text/event-stream")
        try:
            body = await read_body(receive, headers, self.max_body_size, self.body_timeout)
        except ClientDisconnected:
            return
        session_id = headers.get("mcp-session-id")
        session = await self._find(session_id)
        engine = session.engine if session is not None else Engine(max_error_text=self.server.max_error_text)
        ev = self._parse(engine, body)
        if not isinstance(ev, RequestReceived):  # a notification or a response: the server's scopes only
            self._check_scopes(None, None)
        if ev is None and session is not None and self.sessions.shared:
            await self._cluster.route(session, body)  # for another node: a response, a cancellation
        if isinstance(ev, Reply):
            await send_json(send, 400, ev.data)
            return
        if isinstance(ev, RequestReceived):
            self._check_scopes(engine, ev)
            version = meta_protocol_version(ev)
            if version is not None and self.server.speaks("modern"):
                engine = self._outside_session(engine, session, ev)
                await self._modern.request(receive, send, headers, engine, ev, version)
                return
        await self._legacy.post(receive, send, headers, session_id, session, engine, ev)

    async def _find(self, session_id: str | None) -> HttpSession | None:
        """The live session ``session_id`` names (None for none). Raises :class:`Reject`
        (503) when a shared session store must be asked and cannot be reached."""
        if not session_id:
            return None
        try:
            return await self.sessions.find(session_id)
        except StoreUnavailable as exc:
            raise unavailable(exc) from None

    async def _readiness(self) -> tuple[bool, str]:
        """Whether this node should get traffic, and a word on its state. A shared store
        that cannot be reached is reported but does not make the node unready: every node
        shares it, and taking them all out would stop the modern era too, which does not
        need it."""
        if self.draining:
            return False, "draining"
        if self._start_failed is not None:
            return False, self._start_failed
        try:
            await self.session_store.check()
        except StoreUnavailable as exc:
            return True, f"degraded: {flatten_text(str(exc), 200)}"
        return True, "ready"

    def _parse(self, engine: Engine, body: bytes) -> Event | None:
        """``engine.receive(body)``; input the engine could not even parse (nested too
        deeply, say) is answered as a parse error instead of escaping."""
        try:
            return engine.receive(body)
        except (RecursionError, ValueError, msgspec.MsgspecError) as exc:
            text = flatten_text(str(exc), self.server.max_error_text)
            return Reply(json_error(None, McpError(PARSE_ERROR, f"Parse error: {text}")))

    def _outside_session(self, engine: Engine, session: HttpSession | None, request: RequestReceived) -> Engine:
        """The engine to run a modern request on: modern requests ignore
        ``Mcp-Session-Id``, so one parsed by a session's engine moves to a fresh one."""
        if session is not None:
            engine.abandon(request.id)
            engine = Engine(max_error_text=self.server.max_error_text)
            engine.track(request.id)
        return engine
