"""The Streamable HTTP server as a plain ASGI application, serving both protocol eras:
:class:`StreamableHTTPApp`, which :meth:`Server.asgi_app <mcpkit.Server.asgi_app>`
returns, and :func:`streamable_http_app`, which builds it.

The app is a stack of small ASGI middleware — each checks one thing and answers, refuses
(:class:`~.server.asgi.Reject`), or calls the app it wraps — around the MCP endpoint.
From the outside in:

1. :class:`~.server.asgi.Refusals`: a refusal from any layer below becomes its plain
   response (403, 404, 405, 406, 408, 413, 415, 503, and 400/404 for sessions:
   docs/http.md, "HTTP status codes"), an unexpected exception a logged 500 with a
   JSON-RPC -32603 body and a reference id;
2. :class:`~.server.health.Health` (``health_path``): liveness and readiness probes,
   answered once the guard below allows their ``Host`` and ``Origin`` (with
   ``probe_hosts`` besides), without starting the server;
3. :class:`~.server.security.HostOriginGuard`: DNS-rebinding protection, 403, for
   everything the app serves;
4. :class:`~.server.lifespan.StartOnFirstRequest`: the server's lifespan, started by the
   first request when no ASGI lifespan startup came (mounted apps), or 503 if it failed;
5. :class:`~.server.edge_auth.ProtectedResourceMetadata` (``auth``): the OAuth
   protected-resource metadata, to any client;
6. :class:`~.server.asgi.Paths`: 404 for a path that is neither the MCP endpoint's
   (``path``; None: any) nor, with ``sse_transport``, one of the HTTP+SSE endpoints';
7. :class:`~.server.edge_auth.BearerAuth` (``auth``): the bearer token, 401/403/503,
   and the request's identity;
8. :class:`~.sse.server.SseEndpoint` (``sse_transport``): ``GET sse_path`` and ``POST
   messages_path`` of the deprecated HTTP+SSE transport, behind the same checks;
9. :class:`~.server.endpoint.McpEndpoint`: POST, GET and DELETE of the MCP endpoint,
   routed once to each message's era.

:class:`StreamableHTTPApp` is what the ASGI server (or a host application) talks to: it
answers the ASGI lifespan protocol and keeps the app's :class:`~.server.lifespan.Lifespan`
— the server's lifespan, the endpoints' start and stop, the shutdown (``begin_shutdown``,
which ``server.run("http")`` calls on SIGTERM, and ``close``) — and hands every HTTP
request to the stack. It knows the server only as a
:class:`~mcpkit.transports.base.RequestHandler`. This module sits above ``server/`` and
``sse/`` because it composes both; they never import it.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import AsyncIterator, Sequence

from ...auth.server import ResourceServer
from ...stores.events import EventStore, InMemoryEventStore
from ...stores.sessions import InMemorySessionStore, SessionStore
from ..base import RequestHandler
from .server.asgi import ASGIApp, Paths, Receive, Refusals, Scope, Send
from .server.cluster import Cluster
from .server.edge_auth import BearerAuth, CheckScopes, ProtectedResourceMetadata, ScopeCheck, no_scopes
from .server.endpoint import McpEndpoint
from .server.health import Health
from .server.legacy import LegacyEndpoint
from .server.lifespan import Lifespan, Part, StartOnFirstRequest
from .server.modern import ErrorStatus, ModernEndpoint
from .server.security import HostList, HostOriginGuard
from .server.sessions import SessionManager
from .sse.server import SseEndpoint

__all__ = ["StreamableHTTPApp", "streamable_http_app"]


class StreamableHTTPApp:
    """The ASGI application returned by :meth:`Server.asgi_app`. See the module docs."""

    def __init__(
        self,
        app: ASGIApp,
        lifespan: Lifespan,
        endpoint: McpEndpoint,
        *,
        event_store: EventStore,
        session_store: SessionStore,
        sse: SseEndpoint | None = None,
        auth: ResourceServer | None = None,
    ) -> None:
        #: The stack of middleware every HTTP request goes through, down to ``endpoint``.
        self.app = app
        self._lifespan = lifespan
        self.server = lifespan.handler
        #: Authorization (docs/auth.md): None serves everyone.
        self.auth = auth
        self.endpoint = endpoint
        #: The legacy sessions of this node (with a shared store: its replicas).
        self.sessions = endpoint.sessions
        self.event_store = event_store
        #: Where legacy sessions are kept: this process (the default), or shared by several nodes.
        self.session_store = session_store
        #: The deprecated HTTP+SSE transport (2024-11-05) beside this endpoint, if enabled.
        self.sse = sse

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Serve one ASGI connection: the lifespan protocol, or an HTTP request through the
        stack (other scopes, websockets, are ignored). Nothing escapes from a request but
        cancellation, and a failing probe's exception (:class:`~.server.health.Health`
        is outside :class:`~.server.asgi.Refusals`)."""
        kind = scope["type"]
        if kind == "lifespan":
            await self._lifespan.serve(receive, send)
        elif kind == "http":
            await self.app(scope, receive, send)

    @property
    def draining(self) -> bool:
        """Whether the shutdown has begun (:meth:`begin_shutdown`)."""
        return self._lifespan.draining

    def begin_shutdown(self) -> None:
        """Start a graceful shutdown: end every GET stream and refuse new ones (503).
        Requests in progress go on; the lifespan shutdown (or :meth:`close`) ends them.
        Never raises."""
        self._lifespan.begin_shutdown()

    def close(self) -> None:
        """End every legacy session (cancel its handlers, end its streams) and every
        open modern subscription. Never raises."""
        self._lifespan.close()

    @contextlib.asynccontextmanager
    async def lifespan(self, app: object = None) -> AsyncIterator[None]:
        """The app's lifespan as a context manager, for a host application that does
        not forward ASGI lifespan events to mounted apps (Starlette, FastAPI):
        ``Starlette(routes=[Mount("/mcp", app=mcp)], lifespan=mcp.lifespan)``. Entering
        raises what the server's lifespan raises at startup; exiting stops it even when
        the body raised or was cancelled."""
        await self._lifespan.start()
        try:
            yield
        finally:
            await self._lifespan.stop()


def streamable_http_app(
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
    probe_hosts: Sequence[str] | None = None,
    sse_transport: bool = False,
    sse_path: str = "/sse",
    messages_path: str = "/messages",
) -> StreamableHTTPApp:
    """The app serving ``server``: the stack of the module docs, each layer given its
    options (their meaning: :meth:`Server.asgi_app <mcpkit.Server.asgi_app>`,
    docs/http.md, docs/limits.md). Raises ``ValueError`` for an option out of range: an
    ``error_status`` or ``retry_interval`` it does not know, a ``health_path``, ``sse_path``
    or ``messages_path`` that is not a path (or paths that collide), a malformed
    ``probe_hosts`` entry (or ``probe_hosts`` without ``health_path``), a shared
    ``session_store`` without a shared ``event_store``."""
    # Longer than a function should be: the one place the stack is put together, from the
    # endpoint outwards, one layer per step, in the order the module docs list them.
    path = path.rstrip("/") or "/" if path is not None else None
    events = event_store if event_store is not None else InMemoryEventStore()
    store = session_store if session_store is not None else InMemorySessionStore()
    sessions = SessionManager(idle_timeout=session_idle_timeout, max_sessions=max_sessions, store=store)
    cluster = Cluster(server, sessions, store, events, keepalive=keepalive_interval)
    check_scopes: CheckScopes = ScopeCheck(auth, server) if auth is not None else no_scopes
    modern = ModernEndpoint(server, json_response=json_response, error_status=error_status)
    legacy = LegacyEndpoint(
        server,
        sessions,
        events,
        json_response=json_response,
        keepalive_interval=keepalive_interval,
        max_session_requests=max_session_requests,
        retry_ms=_retry_ms(retry_interval),
        cluster=cluster,
    )
    endpoint = McpEndpoint(
        server, sessions, cluster, modern, legacy,
        max_body_size=max_body_size, body_timeout=body_timeout, check_scopes=check_scopes,
    )
    app: ASGIApp = endpoint
    parts: list[Part] = [endpoint]
    paths = {path} if path is not None else None
    sse: SseEndpoint | None = None
    if sse_transport:
        sse = SseEndpoint(
            endpoint,
            server,
            events,
            sse_path=sse_path,
            messages_path=messages_path,
            max_sessions=max_sessions,
            keepalive_interval=keepalive_interval,
            max_session_requests=max_session_requests,
            max_body_size=max_body_size,
            body_timeout=body_timeout,
            check_scopes=check_scopes,
            mcp_path=path,
        )
        app = sse
        parts.append(sse)
        if paths is not None:
            paths |= {sse.sse_path, sse.messages_path}
    if auth is not None:
        app = BearerAuth(app, auth, endpoint.find)
    app = Paths(app, paths)
    if auth is not None:
        app = ProtectedResourceMetadata(app, auth, server)
    lifespan = Lifespan(server, parts)
    guard = HostOriginGuard(StartOnFirstRequest(app, lifespan), allowed_hosts, allowed_origins, dns_rebinding_protection)
    app = guard
    if health_path is not None:
        probes = HostList(probe_hosts) if probe_hosts is not None else None
        app = Health(guard, health_path, lifespan=lifespan, store=store, probe_hosts=probes)
    elif probe_hosts is not None:
        raise ValueError("probe_hosts needs health_path: they are the hosts its probes may name")
    app = Refusals(app)
    return StreamableHTTPApp(app, lifespan, endpoint, event_store=events, session_store=store, sse=sse, auth=auth)


def _retry_ms(seconds: float | None) -> int | None:
    """``retry_interval`` in whole milliseconds, as SSE's ``retry`` field takes it.
    Raises ``ValueError`` unless it is None or a finite number of seconds >= 0."""
    if seconds is None:
        return None
    if not (isinstance(seconds, (int, float)) and 0 <= seconds < math.inf):
        raise ValueError(f"retry_interval must be None or seconds >= 0, not {seconds!r}")
    return round(seconds * 1000)
