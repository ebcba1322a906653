"""The app's lifespan: starting the server behind it and the app's endpoints, draining
them at shutdown, and stopping them (docs/lifespan.md, docs/http.md "Limits and
shutdown").

:class:`Lifespan` holds the state: whether the server's lifespan (``RequestHandler.
running()``) is entered, whether the app is draining, why a start failed. It starts and
stops the app's *parts* — the MCP endpoint (its cluster: the session store's background
work) and, when served, the deprecated HTTP+SSE endpoints — around the server's
lifespan, in this order:

* **start**: each part starts, then the server's lifespan is entered; a failure there
  is the start's failure (the ASGI lifespan reports it and the ASGI server exits);
* **begin shutdown** (SIGTERM, :meth:`Lifespan.begin_shutdown`): the app drains — GET
  streams end and new ones are refused 503, open modern subscriptions are answered and
  end, requests in progress go on;
* **stop**: the server's open subscriptions end and every part closes its sessions
  (their handlers are cancelled), then the server's lifespan is exited, then each part
  stops.

Three ways in: the ASGI lifespan protocol (:meth:`Lifespan.serve`, which the app answers
for its ASGI server), a host application's lifespan (:meth:`Lifespan.start` and
:meth:`Lifespan.stop`, which ``StreamableHTTPApp.lifespan`` wraps for Starlette and
FastAPI, which do not forward lifespan events to mounted apps), or neither: then
:class:`StartOnFirstRequest`, a middleware, starts it on the first request, once, and a
start that failed answers every request 503 — saying only that the server failed to
start, with the reference id under which the cause (which may name files, addresses or
secrets) is logged, once, as ``mcpkit.http``. Through the ASGI lifespan protocol the
cause goes to the ASGI server, which reports it (once) and exits.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Sequence
from contextlib import AbstractAsyncContextManager
from typing import Any, Protocol

from ...base import RequestHandler
from .asgi import ASGIApp, Receive, Reject, Scope, Send, under_reference

__all__ = ["Part", "Lifespan", "StartOnFirstRequest"]

_log = logging.getLogger("mcpkit.http")


class Part(Protocol):
    """An endpoint of the app, as its lifespan starts, drains and stops it."""

    async def start(self) -> None:
        """Before the server's lifespan is entered. Raises what makes the start fail."""
        ...

    def begin_shutdown(self) -> None:
        """The server is stopping: end the streams that never end by themselves and
        refuse new ones; requests in progress go on."""
        ...

    def close(self) -> None:
        """End every session here (their handlers are cancelled, their streams end)."""
        ...

    async def stop(self) -> None:
        """After the server's lifespan was exited."""
        ...


class Lifespan:
    """The lifespan of the app serving ``handler`` through ``parts``: see the module."""

    def __init__(self, handler: RequestHandler, parts: Sequence[Part]) -> None:
        self.handler = handler
        self._parts = tuple(parts)
        self._running: AbstractAsyncContextManager[Any] | None = None
        self._lazy_started = False
        #: What the 503s say when the lifespan started on the first request failed to start
        #: (then every request is refused): a failure and its reference id, not its cause.
        self.start_failed: str | None = None
        #: The shutdown has begun (:meth:`begin_shutdown`).
        self.draining = False

    @property
    def running(self) -> bool:
        """Whether the server's lifespan is entered."""
        return self._running is not None

    async def start(self) -> None:
        """Start every part, then enter the server's lifespan. Raises what they raise
        (the lifespan is then not entered); cancellation likewise."""
        for part in self._parts:
            await part.start()
        self._running = self.handler.running()
        try:
            await self._running.__aenter__()
        except BaseException:
            self._running = None
            raise

    async def stop(self) -> None:
        """:meth:`close`, exit the server's lifespan (if entered), then stop every part
        (even if the exit raised, which then propagates)."""
        self.close()
        running, self._running = self._running, None
        try:
            if running is not None:
                await running.__aexit__(None, None, None)
        finally:
            for part in self._parts:
                await part.stop()

    def begin_shutdown(self) -> None:
        """Start a graceful shutdown: end every GET stream and refuse new ones (503), and
        answer the open modern subscriptions. Requests in progress go on; :meth:`stop`
        (or :meth:`close`) ends them. Never raises."""
        self.draining = True
        self.handler.shutdown()  # open modern subscriptions are answered and end
        for part in self._parts:
            part.begin_shutdown()

    def close(self) -> None:
        """End every open modern subscription, and every session of every part (their
        handlers are cancelled, their streams end). Never raises."""
        self.handler.shutdown()
        for part in self._parts:
            part.close()

    async def serve(self, receive: Receive, send: Send) -> None:
        """Serve the ASGI lifespan protocol: startup runs :meth:`start` (a failure is
        reported to the ASGI server, which logs it and exits: it is not logged here as
        well), shutdown :meth:`stop`. Returns after the shutdown, or after a failed
        startup. Cancellation propagates."""
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                try:
                    await self.start()
                except Exception as exc:
                    await send({"type": "lifespan.startup.failed", "message": str(exc)})
                    return
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                await self.stop()
                await send({"type": "lifespan.shutdown.complete"})
                return

    async def ensure_started(self) -> None:
        """A request before any lifespan startup (mounted where lifespan events do not
        arrive): start now, once, and keep it up. Raises :class:`Reject` (503, with a
        reference id; the cause is logged once) if it failed to start, then and for every
        later request. Cancellation while starting propagates, and a later request does
        not try again."""
        if self.start_failed is not None:
            raise Reject(503, f"Service Unavailable: {self.start_failed}")
        if self._lazy_started:
            return
        self._lazy_started = True
        _log.debug("no ASGI lifespan startup was received: the server's lifespan starts with the first request")
        try:
            await self.start()
        except Exception as exc:
            self.start_failed = under_reference("the server failed to start", exc, level=logging.ERROR)
            raise Reject(503, f"Service Unavailable: {self.start_failed}") from None


class StartOnFirstRequest:
    """Middleware that starts ``lifespan`` (:meth:`Lifespan.ensure_started`) before the
    first request it passes to ``app``, if no lifespan startup came first. Raises
    :class:`Reject` (503) while a start that failed stands."""

    def __init__(self, app: ASGIApp, lifespan: Lifespan) -> None:
        self.app = app
        self._lifespan = lifespan

    def __call__(self, scope: Scope, receive: Receive, send: Send) -> Awaitable[None]:
        if not self._lifespan.running:
            return self._start_first(scope, receive, send)
        return self.app(scope, receive, send)

    async def _start_first(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Start the lifespan, then serve. Raises what :meth:`Lifespan.ensure_started`
        raises (``Reject`` 503 after a failed start); cancellation propagates."""
        await self._lifespan.ensure_started()
        await self.app(scope, receive, send)
