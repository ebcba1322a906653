"""Serving a :class:`~mcpkit.transports.http.app.StreamableHTTPApp` with uvicorn, with defaults that hold up
against hostile clients (docs/http.md, "Limits and shutdown").

uvicorn on its own waits forever for a request that has begun (headers or body half
sent) and accepts connections until the process runs out of descriptors; on SIGTERM it
waits for every response to finish, which an open SSE stream never does.
:func:`run_uvicorn` adds what is missing: deadlines for a request's headers and body, a
cap on open connections (refused at once with a raw 503), and a shutdown that ends the
GET streams first and gives the requests in progress a bounded grace. The guard wraps
uvicorn's httptools protocol when httptools is installed (the ``http`` extra brings it,
and uvloop, which uvicorn's ``loop="auto"`` then runs on), else its h11 protocol; both
answer alike (docs/http.md, "The HTTP stack"). Imported only when HTTP is served
(uvicorn is optional).
"""

from __future__ import annotations

import asyncio
import functools
import resource
import socket
from collections.abc import Callable
from typing import Any, Protocol

try:
    import h11
    import uvicorn
    from uvicorn.protocols.http.h11_impl import H11Protocol
except ModuleNotFoundError as exc:  # the "http" extra is not installed
    raise ModuleNotFoundError(
        f"serving MCP over HTTP needs uvicorn ({exc}); install it with: pip install 'mcpkit[http]'", name=exc.name
    ) from None

from .asgi import Receive, Scope, Send

__all__ = ["ShutdownAware", "run_uvicorn", "uvicorn_config", "guarded_protocol", "default_max_connections"]


class ShutdownAware(Protocol):
    """What :func:`run_uvicorn` serves: an ASGI app that is told when the server's
    shutdown begins (``StreamableHTTPApp``: its GET streams end then)."""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None: ...

    def begin_shutdown(self) -> None: ...

_BUSY = (
    b"HTTP/1.1 503 Service Unavailable\r\ncontent-type: text/plain; charset=utf-8\r\n"
    b"content-length: 38\r\nretry-after: 1\r\nconnection: close\r\n\r\n"
    b"Service Unavailable: too many clients\n"
)
_TIMEOUT = (
    b"HTTP/1.1 408 Request Timeout\r\ncontent-type: text/plain; charset=utf-8\r\n"
    b"content-length: 52\r\nconnection: close\r\n\r\n"
    b"Request Timeout: the request did not arrive in time\n"
)


def default_max_connections() -> int:
    """The default connection cap: 1,000, or fewer if the process's descriptor limit
    leaves less than 64 descriptors of headroom."""
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY:
        return 1000
    return max(1, min(1000, soft - 64))


#: Header bytes the httptools guard accepts past the read they began in: h11's default cap.
_MAX_HEADERS = 16 * 1024
_HEADERS = "headers"  # what a client may still owe, as _Guard._phase names it
_BODY = "body"


class _Guard(asyncio.Protocol):
    """The deadlines and the cap, mixed in before one of uvicorn's HTTP/1.1 protocols;
    ``_phase`` (defined with that protocol) says what the client still owes in its
    parser's terms: ``_HEADERS``, ``_BODY`` or None."""

    _header_timeout: float
    _body_timeout: float
    _max_connections: int
    _timer: asyncio.TimerHandle | None = None
    _phase: Callable[[], str | None]
    # set by the uvicorn protocol this is mixed into
    transport: asyncio.Transport
    loop: asyncio.AbstractEventLoop
    connections: set[Any]
    cycle: Any

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        if len(self.connections) > self._max_connections:
            transport.write(_BUSY)
            transport.close()

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        if self._timer is None:
            self._watch()

    def _watch(self) -> None:
        phase = self._phase()
        if phase is not None and not self.transport.is_closing():
            delay = self._header_timeout if phase is _HEADERS else self._body_timeout
            self._timer = self.loop.call_later(delay, self._overdue, phase, self.cycle)

    def _overdue(self, phase: str, cycle: Any) -> None:
        self._timer = None
        if self._phase() is not phase or self.cycle is not cycle:
            self._watch()  # progress since: a new deadline for what is owed now, if anything
            return
        if self.transport.is_closing():
            return
        if self.cycle is None or not self.cycle.response_started:
            self.transport.write(_TIMEOUT)
        self.transport.close()

    def connection_lost(self, exc: Exception | None) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        super().connection_lost(exc)


class _GuardedH11(_Guard, H11Protocol):
    """The guard over uvicorn's h11 protocol: h11's own state says what is owed."""

    def _phase(self) -> str | None:
        state = self.conn.their_state
        if state is h11.SEND_BODY:
            return _BODY
        if state is h11.IDLE and self.conn.trailing_data[0]:
            return _HEADERS
        return None


@functools.cache
def _guarded_httptools() -> type[_Guard] | None:
    """The guard over uvicorn's httptools protocol, or None without httptools. The
    parser keeps no state to ask, so the parser's callbacks record what is owed."""
    try:
        from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol
    except ImportError:
        return None

    class _GuardedHttpTools(_Guard, HttpToolsProtocol):
        _owed: str | None = None
        _head = 0  # bytes read since the read in which the headers began

        def _phase(self) -> str | None:
            return self._owed

        def data_received(self, data: bytes) -> None:
            # httptools buffers headers without a bound, where h11 answers 400 past
            # h11_max_incomplete_event_size: the same cap, counted in reads (the read
            # in which the headers begin is bounded by the transport's read size).
            if self._owed is not _HEADERS:
                super().data_received(data)
                self._head = 0
                return
            self._head += len(data)
            if self._head > (self.config.h11_max_incomplete_event_size or _MAX_HEADERS):
                self.send_400_response("Invalid HTTP request received: headers too large.")
                return
            super().data_received(data)

        def on_message_begin(self) -> None:
            self._owed = _HEADERS
            super().on_message_begin()

        def on_headers_complete(self) -> None:
            self._owed = _BODY
            super().on_headers_complete()

        def on_message_complete(self) -> None:
            self._owed = None
            super().on_message_complete()

    return _GuardedHttpTools


def guarded_protocol(
    header_timeout: float, body_timeout: float, max_connections: int, http: str = "auto"
) -> type[asyncio.Protocol]:
    """One of uvicorn's HTTP/1.1 protocols with deadlines and a connection cap.

    ``http`` chooses the parser: ``"httptools"`` (uvicorn's C parser; raises
    ``ModuleNotFoundError`` without the ``httptools`` package), ``"h11"`` (pure
    Python), or ``"auto"``: httptools when it is installed, else h11.

    A request whose headers have begun must complete them within ``header_timeout``
    seconds, and then its body within ``body_timeout`` seconds; past either the client
    gets a raw 408 (unless its response has started) and the connection is closed. A
    connection beyond ``max_connections`` is answered 503 and closed before anything is
    read. The deadlines cost nothing for a request that arrives whole: a timer is set
    only when a read leaves a request incomplete. Raises ``ValueError`` for another
    ``http``.
    """
    if http not in ("auto", "httptools", "h11"):
        raise ValueError(f"http must be 'auto', 'httptools' or 'h11', not {http!r}")
    base = _guarded_httptools() if http != "h11" else _GuardedH11
    if base is None and http == "httptools":
        raise ModuleNotFoundError("http='httptools' needs the httptools package", name="httptools")
    base = base or _GuardedH11
    settings = {"_header_timeout": header_timeout, "_body_timeout": body_timeout, "_max_connections": max_connections}
    return type(f"Guarded{base.__name__}", (base,), settings)


class _Server(uvicorn.Server):
    """uvicorn's server, telling the app when shutdown begins (so GET streams end)."""

    def __init__(self, config: uvicorn.Config, app: ShutdownAware) -> None:
        super().__init__(config)
        self._app = app

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        self._app.begin_shutdown()
        await super().shutdown(sockets)


def uvicorn_config(
    app: ShutdownAware,
    *,
    host: str = "127.0.0.1",
    port: int = 8000,
    log_level: str = "warning",
    header_timeout: float = 10.0,
    body_timeout: float = 30.0,
    max_connections: int | None = None,
    http: str | type[asyncio.Protocol] = "auto",
    loop: str = "auto",
    **overrides: Any,
) -> uvicorn.Config:
    """The uvicorn configuration :func:`run_uvicorn` serves ``app`` with: the guarded
    protocol (see :func:`guarded_protocol`; ``max_connections`` None means
    :func:`default_max_connections`), keep-alive connections closed after 5 s idle,
    and a 5 s grace for requests in progress at shutdown. ``http`` ``"auto"`` (the
    default) guards httptools when it is installed, else h11; ``"h11"`` or
    ``"httptools"`` guards that one; a protocol class (or another name uvicorn knows)
    replaces the guarded protocol. ``loop`` ``"auto"`` runs on uvloop when it is
    installed (``"asyncio"`` forces asyncio's own loop). ``overrides`` are any other
    ``uvicorn.Config`` arguments, and win. Raises ``ModuleNotFoundError`` for
    ``http="httptools"`` without httptools."""
    limit = max_connections if max_connections is not None else default_max_connections()
    if isinstance(http, str) and http in ("auto", "h11", "httptools"):
        http = guarded_protocol(header_timeout, body_timeout, limit, http)
    options: dict[str, Any] = {
        "host": host,
        "port": port,
        "log_level": log_level,
        "lifespan": "on",
        "http": http,
        "loop": loop,
        "timeout_keep_alive": 5,
        "timeout_graceful_shutdown": 5,
        **overrides,
    }
    return uvicorn.Config(app, **options)


def run_uvicorn(app: ShutdownAware, **options: Any) -> None:
    """Serve ``app`` until SIGINT or SIGTERM, configured by :func:`uvicorn_config` with
    ``options`` (``host``, ``port``, ``log_level``, ``header_timeout``, ``body_timeout``,
    ``max_connections``, ``http``, ``loop``, any ``uvicorn.Config`` argument). Shutdown ends the GET streams
    at once, gives requests in progress ``timeout_graceful_shutdown`` seconds, cancels the
    rest, then ends every session. Raises what uvicorn raises (``SystemExit`` if the port
    is taken)."""
    _Server(uvicorn_config(app, **options), app).run()
