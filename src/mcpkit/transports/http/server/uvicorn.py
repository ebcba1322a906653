"""Serving a :class:`~.app.StreamableHTTPApp` with uvicorn, with defaults that hold up
against hostile clients (docs/http.md, "Limits and shutdown").

uvicorn on its own waits forever for a request that has begun (headers or body half
sent) and accepts connections until the process runs out of descriptors; on SIGTERM it
waits for every response to finish, which an open SSE stream never does.
:func:`run_uvicorn` adds what is missing: deadlines for a request's headers and body, a
cap on open connections (refused at once with a raw 503), and a shutdown that ends the
GET streams first and gives the requests in progress a bounded grace. Imported only
when HTTP is served (uvicorn is optional).
"""

from __future__ import annotations

import asyncio
import resource
import socket
from typing import Any

try:
    import h11
    import uvicorn
    from uvicorn.protocols.http.h11_impl import H11Protocol
except ModuleNotFoundError as exc:  # the "http" extra is not installed
    raise ModuleNotFoundError(
        f"serving MCP over HTTP needs uvicorn ({exc}); install it with: pip install 'mcpkit[http]'", name=exc.name
    ) from None

from .app import StreamableHTTPApp

__all__ = ["run_uvicorn", "uvicorn_config", "guarded_protocol", "default_max_connections"]

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


def guarded_protocol(header_timeout: float, body_timeout: float, max_connections: int) -> type[H11Protocol]:
    """uvicorn's h11 protocol with deadlines and a connection cap.

    A request whose headers have begun must complete them within ``header_timeout``
    seconds, and then its body within ``body_timeout`` seconds; past either the client
    gets a raw 408 (unless its response has started) and the connection is closed. A
    connection beyond ``max_connections`` is answered 503 and closed before anything is
    read. The deadlines cost nothing for a request that arrives whole: a timer is set
    only when a read leaves a request incomplete.
    """

    class GuardedH11Protocol(H11Protocol):
        _timer: asyncio.TimerHandle | None = None

        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
            super().connection_made(transport)
            if len(self.connections) > max_connections:
                transport.write(_BUSY)
                transport.close()

        def data_received(self, data: bytes) -> None:
            super().data_received(data)
            if self._timer is None:
                self._watch()

        def _phase(self) -> object:
            """What the client still owes: its headers (IDLE with bytes buffered), its
            body (SEND_BODY), or nothing (None)."""
            state = self.conn.their_state
            if state is h11.SEND_BODY or (state is h11.IDLE and self.conn.trailing_data[0]):
                return state
            return None

        def _watch(self) -> None:
            phase = self._phase()
            if phase is not None and not self.transport.is_closing():
                delay = header_timeout if phase is h11.IDLE else body_timeout
                self._timer = self.loop.call_later(delay, self._overdue, phase, self.cycle)

        def _overdue(self, phase: object, cycle: object) -> None:
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

    return GuardedH11Protocol


class _Server(uvicorn.Server):
    """uvicorn's server, telling the app when shutdown begins (so GET streams end)."""

    def __init__(self, config: uvicorn.Config, app: StreamableHTTPApp) -> None:
        super().__init__(config)
        self._app = app

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        self._app.begin_shutdown()
        await super().shutdown(sockets)


def uvicorn_config(
    app: StreamableHTTPApp,
    *,
    host: str = "127.0.0.1",
    port: int = 8000,
    log_level: str = "warning",
    header_timeout: float = 10.0,
    body_timeout: float = 30.0,
    max_connections: int | None = None,
    **overrides: Any,
) -> uvicorn.Config:
    """The uvicorn configuration :func:`run_uvicorn` serves ``app`` with: the guarded
    protocol (see :func:`guarded_protocol`; ``max_connections`` None means
    :func:`default_max_connections`), keep-alive connections closed after 5 s idle,
    and a 5 s grace for requests in progress at shutdown. ``overrides`` are any other
    ``uvicorn.Config`` arguments, and win (``http=`` replaces the guarded protocol)."""
    limit = max_connections if max_connections is not None else default_max_connections()
    options: dict[str, Any] = {
        "host": host,
        "port": port,
        "log_level": log_level,
        "lifespan": "on",
        "http": guarded_protocol(header_timeout, body_timeout, limit),
        "timeout_keep_alive": 5,
        "timeout_graceful_shutdown": 5,
        **overrides,
    }
    return uvicorn.Config(app, **options)


def run_uvicorn(app: StreamableHTTPApp, **options: Any) -> None:
    """Serve ``app`` until SIGINT or SIGTERM, configured by :func:`uvicorn_config` with
    ``options`` (``host``, ``port``, ``log_level``, ``header_timeout``, ``body_timeout``,
    ``max_connections``, any ``uvicorn.Config`` argument). Shutdown ends the GET streams
    at once, gives requests in progress ``timeout_graceful_shutdown`` seconds, cancels the
    rest, then ends every session. Raises what uvicorn raises (``SystemExit`` if the port
    is taken)."""
    _Server(uvicorn_config(app, **options), app).run()
