"""Serving a :class:`~mcpkit.transports.http.app.StreamableHTTPApp` with uvicorn, with defaults that hold up
against hostile clients (docs/http.md, "Limits and shutdown").

uvicorn on its own waits forever for a request that has begun (headers or body half
sent), reads headers without a bound, and accepts connections until the process runs out
of descriptors; on SIGTERM it waits for every response to finish, which an open SSE
stream never does. :func:`run_uvicorn` adds what is missing: the connection guard of
:mod:`.guard` (header caps, deadlines for a request's head and body, connection slots
that a newcomer takes from the longest-waiting incomplete connection) over uvicorn's
httptools protocol when httptools is installed (the ``http`` extra brings it, and uvloop,
which uvicorn's ``loop="auto"`` then runs on), else its h11 protocol — both answer alike
(docs/http.md, "The HTTP stack"); and a shutdown that ends the GET streams first and
gives the requests in progress a bounded grace.

It also runs the app's lifespan itself, around uvicorn's, so that a lifespan that fails
to start is raised to the caller (:class:`~mcpkit.LifespanError`: ``server.run("http")``
exits 1 with its one message, as over stdio) rather than logged twice and turned into
uvicorn's exit status 3; and it returns after a graceful shutdown on SIGINT or SIGTERM
(the process exits 0) instead of re-raising the signal. Imported only when HTTP is
served (uvicorn is optional).
"""

from __future__ import annotations

import asyncio
import resource
import socket
from contextlib import AbstractAsyncContextManager
from types import FrameType
from typing import Any, Protocol

try:
    import uvicorn
except ModuleNotFoundError as exc:  # the "http" extra is not installed
    raise ModuleNotFoundError(
        f"serving MCP over HTTP needs uvicorn ({exc}); install it with: pip install 'mcpkit[http]'", name=exc.name
    ) from None

from .asgi import Receive, Scope, Send
from .guard import DEFAULT_MAX_HEADER_BYTES, DEFAULT_MAX_HEADERS, guarded_protocol

__all__ = ["ShutdownAware", "run_uvicorn", "uvicorn_config", "guarded_protocol", "default_max_connections"]

#: Seconds the requests cut at the end of the grace get to write their answers (each has
#: LAST_WORDS_TIMEOUT, 1 s) before the lifespan's exit ends their sessions.
_LAST_WORDS_WAIT = 2.0


def default_max_connections() -> int:
    """The default connection cap: 1,000, or fewer if the process's descriptor limit
    leaves less than 64 descriptors of headroom."""
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY:
        return 1000
    return max(1, min(1000, soft - 64))


class ShutdownAware(Protocol):
    """What :func:`run_uvicorn` serves: an ASGI app that is told when the server's
    shutdown begins (``StreamableHTTPApp``: its GET streams end then), and whose lifespan
    can be entered as a context manager."""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None: ...

    def begin_shutdown(self) -> None: ...

    def lifespan(self, app: object = None) -> AbstractAsyncContextManager[None]: ...


class _Server(uvicorn.Server):
    """uvicorn's server, telling the app when shutdown begins (so GET streams end) and,
    with ``own_lifespan``, entering the app's lifespan before uvicorn starts and exiting
    it after uvicorn stops. A second SIGINT or SIGTERM forces the exit (``forced``)."""

    def __init__(self, config: uvicorn.Config, app: ShutdownAware, *, own_lifespan: bool) -> None:
        super().__init__(config)
        self._app = app
        self._own_lifespan = own_lifespan
        self._running: AbstractAsyncContextManager[None] | None = None
        #: The signal that stopped the server (None: none did).
        self.stop_signal: int | None = None
        #: A second signal came during the graceful shutdown.
        self.forced = False

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        if self._own_lifespan:
            running = self._app.lifespan()
            await running.__aenter__()  # raises what the lifespan raises, before anything is bound
            self._running = running
        try:
            await super().startup(sockets)
        except BaseException:
            await self._exit_lifespan()
            raise

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        self._app.begin_shutdown()
        try:
            await super().shutdown(sockets)
            # uvicorn has cancelled what outlasted the grace: let those requests write
            # their answers (each within LAST_WORDS_TIMEOUT) before the lifespan's exit
            # ends their sessions.
            cut = [task for task in self.server_state.tasks if not task.done()]
            if cut and not self.force_exit:
                await asyncio.wait(cut, timeout=_LAST_WORDS_WAIT)
        finally:
            if not self.force_exit:
                await self._exit_lifespan()

    async def _exit_lifespan(self) -> None:
        running, self._running = self._running, None
        if running is not None:
            await running.__aexit__(None, None, None)

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        # uvicorn's own re-raises the signal once it has shut down (the process then dies
        # of it, even after a clean shutdown) and forces only on a second SIGINT.
        self.stop_signal = sig
        if self.should_exit:
            self.force_exit = self.forced = True
        else:
            self.should_exit = True


def uvicorn_config(
    app: ShutdownAware,
    *,
    host: str = "127.0.0.1",
    port: int = 8000,
    log_level: str = "warning",
    header_timeout: float = 10.0,
    body_timeout: float = 30.0,
    max_connections: int | None = None,
    max_header_bytes: int | None = None,
    max_headers: int = DEFAULT_MAX_HEADERS,
    http: str | type[Any] = "auto",
    loop: str = "auto",
    **overrides: Any,
) -> uvicorn.Config:
    """The uvicorn configuration :func:`run_uvicorn` serves ``app`` with: the guarded
    protocol (see :func:`~.guard.guarded_protocol`; ``max_connections`` None means
    :func:`default_max_connections`, ``max_header_bytes`` None means 16 KiB, or uvicorn's
    ``h11_max_incomplete_event_size`` when that is given), keep-alive connections closed
    after 5 s idle, and a 5 s grace for requests in progress at shutdown. ``http``
    ``"auto"`` (the default) guards httptools when it is installed, else h11; ``"h11"``
    or ``"httptools"`` guards that one; a protocol class (or another name uvicorn knows)
    replaces the guarded protocol. ``loop`` ``"auto"`` runs on uvloop when it is
    installed (``"asyncio"`` forces asyncio's own loop). ``overrides`` are any other
    ``uvicorn.Config`` arguments, and win. Raises ``ModuleNotFoundError`` for
    ``http="httptools"`` without httptools, ``ValueError`` for a limit below 1."""
    limit = max_connections if max_connections is not None else default_max_connections()
    head_cap = max_header_bytes or overrides.get("h11_max_incomplete_event_size") or DEFAULT_MAX_HEADER_BYTES
    keep_alive = overrides.get("timeout_keep_alive", 5)
    if isinstance(http, str) and http in ("auto", "h11", "httptools"):
        http = guarded_protocol(
            header_timeout, body_timeout, limit, http, max_header_bytes=head_cap, max_headers=max_headers, keep_alive=keep_alive
        )
    options: dict[str, Any] = {
        "host": host,
        "port": port,
        "log_level": log_level,
        "lifespan": "on",
        "http": http,
        "loop": loop,
        "timeout_keep_alive": 5,
        "timeout_graceful_shutdown": 5,
        # h11's own cap on a head it buffers: not below the guard's, which counts first
        "h11_max_incomplete_event_size": max(head_cap, DEFAULT_MAX_HEADER_BYTES),
        **overrides,
    }
    return uvicorn.Config(app, **options)


def run_uvicorn(app: ShutdownAware, **options: Any) -> None:
    """Serve ``app`` until SIGINT or SIGTERM, configured by :func:`uvicorn_config` with
    ``options`` (``host``, ``port``, ``log_level``, ``header_timeout``, ``body_timeout``,
    ``max_connections``, ``max_header_bytes``, ``max_headers``, ``http``, ``loop``, any
    ``uvicorn.Config`` argument). The app's lifespan is entered before the socket is
    bound and exited after the server stops (unless ``options`` name uvicorn's
    ``lifespan``, or the app has no ``lifespan()``: then uvicorn drives it through the
    ASGI lifespan protocol). Shutdown
    ends the GET streams at once, gives requests in progress ``timeout_graceful_shutdown``
    seconds, cancels the rest, then ends every session, and returns.

    Raises what the app's lifespan raises at startup (``LifespanError`` for the server's
    lifespan), what uvicorn raises (``SystemExit`` if the port is taken), and
    ``SystemExit`` with 128 + the signal's number (130 for SIGINT, 143 for SIGTERM) when
    a second signal forced the exit before the graceful shutdown was over."""
    own_lifespan = "lifespan" not in options and callable(getattr(app, "lifespan", None))
    config = uvicorn_config(app, **({**options, "lifespan": "off"} if own_lifespan else options))
    server = _Server(config, app, own_lifespan=own_lifespan)
    server.run()
    if server.forced and server.stop_signal is not None:
        raise SystemExit(128 + server.stop_signal)
